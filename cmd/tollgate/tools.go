package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/tollgate-dev/tollgate/mcptool"
	"github.com/tollgate-dev/tollgate/tool"
	"github.com/tollgate-dev/tollgate/toolkit"
)

func newToolsCmd(env *cliEnv) *cobra.Command {
	var workdir string
	var mcpFiles []string
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "tools [flags]",
		Short: "List the tools an agent would be offered, with their hints",
		Long: `List the tools an agent would be offered, with their hints.

With --mcp, the MCP servers of the files are started first and a table of
their statuses comes before the tools; each MCP tool shows the hints the gates
use (HINTS) and the hints its server claims (CLAIMED), which differ for a
server that is not trusted. With --json, the tools are printed as a JSON array
of their specs (name, description, inputSchema, hints, source, and
claimedHints for MCP tools) and the servers' table goes to stderr.

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
				w := env.stdout
				if jsonOut {
					w = env.stderr
				}
				if err := printMCPServers(w, set); err != nil {
					return err
				}
				fmt.Fprintln(w)
				extra, failed = set.Tools(), mcpFailed(set)
			}
			tk, err := toolkit.New(&toolkit.Options{Workdir: workdir, Extra: extra})
			if err != nil {
				return usageErr("tools: %v", err)
			}
			if jsonOut {
				type toolJSON struct {
					tool.Spec
					ClaimedHints *tool.Hints `json:"claimedHints,omitempty"`
				}
				out := []toolJSON{}
				for _, t := range tk.Tools() {
					j := toolJSON{Spec: t.Spec()}
					if mt, ok := t.(*mcptool.Tool); ok {
						h := mt.ClaimedHints()
						j.ClaimedHints = &h
					}
					out = append(out, j)
				}
				if err := writeJSON(env.stdout, out); err != nil {
					return err
				}
			} else if err := printTools(env.stdout, tk.Tools(), len(mcpFiles) > 0); err != nil {
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
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the tools as a JSON array")
	return cmd
}

// printTools prints the tools as a table; withClaimed adds the hints MCP
// servers claim.
func printTools(w io.Writer, tools []tool.Tool, withClaimed bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	claimed := func(tool.Tool) string { return "" }
	if withClaimed {
		claimed = func(t tool.Tool) string { return claimedHints(t) + "\t" }
		fmt.Fprintln(tw, "NAME\tSOURCE\tHINTS\tCLAIMED\tDESCRIPTION")
	} else {
		fmt.Fprintln(tw, "NAME\tSOURCE\tHINTS\tDESCRIPTION")
	}
	for _, t := range tools {
		s := t.Spec()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s%s\n", field(s.Name), field(s.Source), s.Hints.String(), claimed(t), oneLine(s.Description, 70))
	}
	return tw.Flush()
}
