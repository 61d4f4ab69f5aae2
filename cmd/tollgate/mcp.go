package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/tollgate-dev/tollgate/internal/runbuild"
	"github.com/tollgate-dev/tollgate/mcptool"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/tool"
)

// mcpFlagUsage describes --mcp for `tollgate run` and `tollgate tools`.
const mcpFlagUsage = "MCP servers file (mcp.json, see the mcptool package); their tools are offered as mcp__<server>__<tool>; repeatable"

// mcpRunExtension adds --mcp FILE (repeatable) to `tollgate run`: the servers
// of every file are started, their tools are offered beside the builtins,
// and they are stopped when the command ends. Each server's status goes to
// stderr, one line each; a server that fails is reported and left out, and
// the run goes on without its tools. A file that does not load is a usage
// error (exit 2).
func mcpRunExtension() runExtension {
	return runExtension{
		flags: func(fs *pflag.FlagSet, f *runFlags) {
			fs.StringArrayVar(&f.mcp, "mcp", nil, mcpFlagUsage)
		},
	}
}

// openMCP is runbuild.OpenMCP for `tollgate tools`: the files' warnings go to
// w; a file that does not load and a clash of tool names are usage errors
// (exit 2), servers that did not start in time an error (exit 1). The
// person's OAuth logins (tollgate mcp login) in the default state directory
// are used.
func openMCP(ctx context.Context, env *cliEnv, files []string, w io.Writer, logger *slog.Logger, confine func(*exec.Cmd, string, *mcptool.ServerConfig) error) (*mcptool.Set, error) {
	var logins string
	if dir, err := defaultStateDir(env); err == nil {
		logins = mcpLoginsDir(dir)
	}
	set, err := runbuild.OpenMCP(ctx, files, &runbuild.MCPOptions{
		Notice:    func(line string) { fmt.Fprintln(w, "tollgate: "+oneLine(line, 2000)) },
		Logger:    logger,
		LookupEnv: env.lookupEnv,
		Confine:   confine,
		OAuthDir:  logins,
	})
	if err != nil {
		if fe, ok := errors.AsType[*runs.FieldError](err); ok {
			return nil, usageErr("--mcp: %w", fe.Err)
		}
		return nil, withCode(exitError, fmt.Errorf("--%w", err))
	}
	return set, nil
}

// printMCPServers writes a table of the servers' statuses to w, then, when a
// server skipped tools, a table of those tools with the reasons.
func printMCPServers(w io.Writer, set *mcptool.Set) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSTATE\tTRANSPORT\tTRUSTED\tTOOLS\tSKIPPED\tERROR")
	skipped := false
	for _, st := range set.Servers() {
		msg := ""
		if st.Err != nil {
			msg = oneLine(st.Err.Error(), 300)
		}
		n := len(st.Skipped) + st.SkippedMore
		skipped = skipped || n > 0
		fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%d\t%d\t%s\n", st.Name, st.State, st.Transport, st.Trusted, st.Tools, n, msg)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !skipped {
		return nil
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSKIPPED TOOL\tREASON")
	for _, st := range set.Servers() {
		for _, sk := range st.Skipped {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", st.Name, field(strconv.Quote(sk.Tool)), oneLine(sk.Reason, 300))
		}
		if st.SkippedMore > 0 {
			fmt.Fprintf(tw, "%s\t(%d more)\t\n", st.Name, st.SkippedMore)
		}
	}
	return tw.Flush()
}

// claimedHints returns the hints an MCP tool's server claims for it (which,
// for an untrusted server, are not the hints the gates use), or "-" for a
// tool that is not from an MCP server.
func claimedHints(t tool.Tool) string {
	mt, ok := t.(*mcptool.Tool)
	if !ok {
		return "-"
	}
	h := mcptool.HintsFor(mt.Listed().Annotations, true)
	return h.String()
}

// mcpFailed counts the servers of set that failed.
func mcpFailed(set *mcptool.Set) int {
	n := 0
	for _, st := range set.Servers() {
		if st.State == mcptool.StateFailed {
			n++
		}
	}
	return n
}
