package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/tollgate-dev/tollgate/toolkit"
)

func newToolsCmd(env *cliEnv) *cobra.Command {
	var workdir string
	cmd := &cobra.Command{
		Use:   "tools [flags]",
		Short: "List the tools an agent would be offered, with their hints",
		Args:  argsUsage(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error {
			tk, err := toolkit.New(&toolkit.Options{Workdir: workdir})
			if err != nil {
				return usageErr("tools: %v", err)
			}
			tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSOURCE\tHINTS\tDESCRIPTION")
			for _, t := range tk.Tools() {
				s := t.Spec()
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, s.Source, s.Hints.String(), oneLine(s.Description, 70))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&workdir, "workdir", ".", "workspace root for the builtin tools")
	return cmd
}
