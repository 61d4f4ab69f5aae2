package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/tollgate-dev/tollgate/tool"
	"github.com/tollgate-dev/tollgate/toolkit"
)

func newToolsCmd(env *cliEnv) *cobra.Command {
	var workdir string
	var mcpFiles []string
	cmd := &cobra.Command{
		Use:   "tools [flags]",
		Short: "List the tools an agent would be offered, with their hints",
		Long: `List the tools an agent would be offered, with their hints.

With --mcp, the MCP servers of the files are started first and a table of
their statuses comes before the tools; each MCP tool shows the hints the gates
use (HINTS) and the hints its server claims (CLAIMED), which differ for a
server that is not trusted.

Exit status: 0, or 1 when an MCP server failed (the rest is still listed),
2 usage.`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error {
			var extra []tool.Tool
			failed := 0
			if len(mcpFiles) > 0 {
				set, err := openMCP(c.Context(), mcpFiles, env.stderr, nil, nil)
				if err != nil {
					return err
				}
				defer set.Close()
				if err := printMCPServers(env.stdout, set); err != nil {
					return err
				}
				fmt.Fprintln(env.stdout)
				extra, failed = set.Tools(), mcpFailed(set)
			}
			tk, err := toolkit.New(&toolkit.Options{Workdir: workdir, Extra: extra})
			if err != nil {
				return usageErr("tools: %v", err)
			}
			tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
			claimed := func(tool.Tool) string { return "" }
			if len(mcpFiles) > 0 {
				claimed = func(t tool.Tool) string { return claimedHints(t) + "\t" }
				fmt.Fprintln(tw, "NAME\tSOURCE\tHINTS\tCLAIMED\tDESCRIPTION")
			} else {
				fmt.Fprintln(tw, "NAME\tSOURCE\tHINTS\tDESCRIPTION")
			}
			for _, t := range tk.Tools() {
				s := t.Spec()
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s%s\n", field(s.Name), field(s.Source), s.Hints.String(), claimed(t), oneLine(s.Description, 70))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if failed > 0 {
				return withCode(exitError, fmt.Errorf("tools: %d MCP server(s) failed; see the ERROR column", failed))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&workdir, "workdir", ".", "workspace root for the builtin tools")
	cmd.Flags().StringArrayVar(&mcpFiles, "mcp", nil, mcpFlagUsage)
	return cmd
}
