package main

import (
	"encoding/json"
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
	var asJSON bool
	var sandboxRead []string
	var sandboxConnect []uint16
	cmd := &cobra.Command{
		Use:   "tools [flags]",
		Short: "List the tools an agent would be offered, with their hints",
		Long: `List the tools an agent would be offered, with their hints.

With --mcp, the MCP servers of the files are started first and a table of
their statuses comes before the tools; each MCP tool shows the hints the gates
use (HINTS) and the hints its server claims (CLAIMED), which differ for a
server that is not trusted.

With --json, one JSON object instead of tables (see toolsJSON): "servers",
each with its state, error, trust, server info, renewals, its tools with the
hints the gates use and the hints it claims, and its skipped tools with
reasons; then "tools", every tool offered.

Stdio MCP servers start under the same sandbox as with 'tollgate run' (their
"sandbox" in mcp.json, default workspace on --workdir; --sandbox-read and
--sandbox-connect widen it for every server).

Exit status: 0, or 1 when an MCP server failed (the rest is still listed),
2 usage.`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error {
			var extra []tool.Tool
			var mcpSet *mcptool.Set
			failed := 0
			if len(mcpFiles) > 0 {
				confine, release, err := toolsSandbox(env, workdir, sandboxRead, sandboxConnect, mcpFiles)
				if err != nil {
					return err
				}
				defer release() // after the servers stop (set.Close)
				set, err := openMCP(c.Context(), env, mcpFiles, env.stderr, nil, confine)
				if err != nil {
					return err
				}
				defer set.Close()
				extra, failed = set.Tools(), mcpFailed(set)
				mcpSet = set
				if !asJSON {
					if err := printMCPServers(env.stdout, set); err != nil {
						return err
					}
					fmt.Fprintln(env.stdout)
				}
			}
			tk, err := toolkit.New(&toolkit.Options{Workdir: workdir, Extra: extra, Unconfined: true}) // listed, never run
			if err != nil {
				return usageErr("tools: %v", err)
			}
			if asJSON {
				if err := printToolsJSON(env.stdout, mcpSet, tk.Tools()); err != nil {
					return err
				}
				if failed > 0 {
					return withCode(exitError, fmt.Errorf("tools: %d MCP server(s) failed; see their \"error\"", failed))
				}
				return nil
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
	cmd.Flags().StringArrayVar(&sandboxRead, "sandbox-read", nil, "a further file or directory sandboxed MCP servers may read; repeatable")
	cmd.Flags().Var(newPortsValue(&sandboxConnect), "sandbox-connect", "a TCP port sandboxed MCP servers may connect to; repeatable")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object (servers, their tools and skipped tools, every tool) instead of tables")
	return cmd
}

// toolsJSON is what `tollgate tools --json` prints.
type toolsJSON struct {
	// Servers is every configured MCP server, in name order (empty without --mcp).
	Servers []serverJSON `json:"servers"`
	// Tools is every tool offered, builtins and MCP tools, as the agent sees them.
	Tools []toolJSON `json:"tools"`
}

// serverJSON is one MCP server's status.
type serverJSON struct {
	Name       string               `json:"name"`
	State      mcptool.State        `json:"state"`
	Error      string               `json:"error,omitempty"`
	Transport  string               `json:"transport"`
	Trusted    bool                 `json:"trusted"`
	ServerInfo *serverInfoJSON      `json:"serverInfo,omitempty"`
	Renewals   int                  `json:"renewals"`
	Tools      []toolJSON           `json:"tools"`
	Skipped    []mcpSkippedToolJSON `json:"skipped"`
	// SkippedMore counts skipped tools beyond the ones listed.
	SkippedMore int `json:"skippedMore,omitempty"`
}

type serverInfoJSON struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

type mcpSkippedToolJSON struct {
	Tool   string `json:"tool"`
	Reason string `json:"reason"`
}

// toolJSON is one tool: Hints are what the gates use; an MCP tool also has
// the hints its server claims, its server and its name there.
type toolJSON struct {
	Name         string      `json:"name"`
	Source       string      `json:"source"`
	Description  string      `json:"description,omitempty"`
	Hints        *tool.Hints `json:"hints"`
	ClaimedHints *tool.Hints `json:"claimedHints,omitempty"`
	Server       string      `json:"server,omitempty"`
	RemoteName   string      `json:"remoteName,omitempty"`
}

func toolEntry(t tool.Tool) toolJSON {
	s := t.Spec()
	e := toolJSON{Name: s.Name, Source: s.Source, Description: s.Description, Hints: s.Hints}
	if mt, ok := t.(*mcptool.Tool); ok {
		h := mcptool.HintsFor(mt.Listed().Annotations, true)
		e.ClaimedHints, e.Server, e.RemoteName = &h, mt.Server(), mt.Listed().Name
	}
	return e
}

// printToolsJSON writes the toolsJSON of set (nil without --mcp) and tools to
// w, indented, with the characters a terminal would act on escaped.
func printToolsJSON(w io.Writer, set *mcptool.Set, tools []tool.Tool) error {
	out := toolsJSON{Servers: []serverJSON{}, Tools: []toolJSON{}}
	if set != nil {
		byServer := map[string][]toolJSON{}
		for _, t := range set.Tools() {
			if mt, ok := t.(*mcptool.Tool); ok {
				byServer[mt.Server()] = append(byServer[mt.Server()], toolEntry(t))
			}
		}
		for _, st := range set.Servers() {
			e := serverJSON{Name: st.Name, State: st.State, Transport: st.Transport, Trusted: st.Trusted,
				Renewals: st.Renewals, Tools: byServer[st.Name], Skipped: []mcpSkippedToolJSON{}, SkippedMore: st.SkippedMore}
			if e.Tools == nil {
				e.Tools = []toolJSON{}
			}
			if st.Err != nil {
				e.Error = st.Err.Error()
			}
			if st.ServerInfo != nil {
				e.ServerInfo = &serverInfoJSON{Name: st.ServerInfo.Name, Version: st.ServerInfo.Version}
			}
			for _, sk := range st.Skipped {
				e.Skipped = append(e.Skipped, mcpSkippedToolJSON{Tool: sk.Tool, Reason: sk.Reason})
			}
			out.Servers = append(out.Servers, e)
		}
	}
	for _, t := range tools {
		out.Tools = append(out.Tools, toolEntry(t))
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", jsonSafe(b))
	return err
}
