package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/tollgate-dev/tollgate/mcptool"
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
		setup: func(ctx context.Context, rs *runSetup) error {
			files := rs.cfg.MCPFiles
			if len(files) == 0 {
				return nil
			}
			rs.addProtected(files...)
			var confine func(*exec.Cmd, string, *mcptool.ServerConfig) error
			if rs.sandbox != nil {
				confine = rs.sandbox.mcpSandbox()
			}
			set, err := openMCP(ctx, files, rs.env.stderr, rs.logger, confine)
			if err != nil {
				return err
			}
			rs.closers = append(rs.closers, set.Close)
			for _, st := range set.Servers() {
				fmt.Fprintln(rs.env.stderr, "tollgate: mcp:", mcpStatusLine(st))
				for _, line := range mcpSkippedLines(st) {
					fmt.Fprintln(rs.env.stderr, "tollgate: mcp:", line)
				}
			}
			// The set, not a copy of its tools: a server that announces
			// a change of its tools is listed again between turns.
			rs.toolsets = append(rs.toolsets, set)
			return nil
		},
	}
}

// loadMCP loads every file into one configuration and prints the files'
// warnings (unknown fields) to w. A file named twice is loaded once; a server
// name defined in two files is an error naming both. Errors are usage errors
// naming the file, the server and the field.
func loadMCP(files []string, w io.Writer) (*mcptool.Config, error) {
	cfg := &mcptool.Config{Servers: map[string]*mcptool.ServerConfig{}}
	definedIn := map[string]string{}
	seen := map[string]bool{}
	var loaded []string
	for _, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil {
			return nil, usageErr("--mcp: %v", err)
		}
		if seen[abs] {
			fmt.Fprintf(w, "tollgate: mcp: %s is given more than once; it is loaded once\n", f)
			continue
		}
		seen[abs] = true
		c, err := mcptool.Load(f)
		if err != nil {
			return nil, usageErr("--mcp: %v", err)
		}
		for _, warn := range c.Warnings {
			fmt.Fprintln(w, "tollgate: mcp:", warn)
		}
		names := make([]string, 0, len(c.Servers))
		for name := range c.Servers {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if prev, ok := definedIn[name]; ok {
				return nil, usageErr("--mcp: server %q is defined in both %s and %s; rename one", name, prev, f)
			}
			definedIn[name] = f
			cfg.Servers[name] = c.Servers[name]
		}
		loaded = append(loaded, f)
	}
	cfg.File = strings.Join(loaded, ", ")
	return cfg, nil
}

// mcpOpenSlack is what openMCP allows on top of two start-up phases of the
// slowest server: the time a phase that runs out may take to stop its
// server, and then some.
const mcpOpenSlack = 3*mcptool.DefaultShutdownGrace + 20*time.Second

// openMCP loads files (see loadMCP) and starts their servers. Each server's
// phases are bounded by its own timeout, so a server that hangs is reported
// in its status; the whole of Open is bounded as well, by two phases of the
// slowest server plus mcpOpenSlack, as a backstop. A clash between tool
// names of two servers is a usage error; an Open that runs out of time or is
// canceled is an error (exit 1).
func openMCP(ctx context.Context, files []string, w io.Writer, logger *slog.Logger, confine func(*exec.Cmd, string, *mcptool.ServerConfig) error) (*mcptool.Set, error) {
	cfg, err := loadMCP(files, w)
	if err != nil {
		return nil, err
	}
	slowest := mcptool.DefaultTimeout
	for _, sc := range cfg.Servers {
		slowest = max(slowest, sc.Timeout)
	}
	bound := 2*slowest + mcpOpenSlack
	octx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	set, err := mcptool.Open(octx, cfg, &mcptool.Options{Logger: logger, Sandbox: confine})
	if err != nil {
		var ce *mcptool.CollisionError
		var cfgErr *mcptool.ConfigError
		switch {
		case errors.As(err, &ce), errors.As(err, &cfgErr):
			return nil, usageErr("--mcp: %v", err)
		case ctx.Err() == nil && octx.Err() != nil:
			return nil, withCode(exitError, fmt.Errorf("--mcp: the MCP servers did not start within %s", bound))
		}
		return nil, withCode(exitError, fmt.Errorf("--mcp: %w", err))
	}
	return set, nil
}

// mcpStatusLine says how one server fared, in one line, e.g.
// `server fs: ready (stdio, trusted, 14 tools, secure-filesystem-server 0.2.0)`.
func mcpStatusLine(st mcptool.ServerStatus) string {
	trust := "untrusted"
	if st.Trusted {
		trust = "trusted"
	}
	switch st.State {
	case mcptool.StateReady:
		info := ""
		if st.ServerInfo != nil {
			info = ", " + field(strings.TrimSpace(st.ServerInfo.Name+" "+st.ServerInfo.Version))
		}
		skipped := ""
		if n := len(st.Skipped) + st.SkippedMore; n > 0 {
			skipped = fmt.Sprintf(", %d skipped", n)
		}
		return fmt.Sprintf("server %s: ready (%s, %s, %d tools%s%s)", field(st.Name), st.Transport, trust, st.Tools, skipped, info)
	case mcptool.StateDisabled:
		return fmt.Sprintf("server %s: disabled in the configuration; not started", field(st.Name))
	}
	msg := ""
	if st.Err != nil {
		msg = oneLineSafe(st.Err.Error())
	}
	return fmt.Sprintf("server %s: FAILED (%s, %s), its tools are not offered: %s", field(st.Name), st.Transport, trust, msg)
}

// mcpSkippedLines says, one line each, which tools of a server are skipped
// and why, e.g. `server app: tool "screens" skipped: invalid input schema: …`.
// Names and reasons are escaped for a terminal.
func mcpSkippedLines(st mcptool.ServerStatus) []string {
	var lines []string
	for _, sk := range st.Skipped {
		lines = append(lines, fmt.Sprintf("server %s: tool %s skipped: %s", st.Name, field(strconv.Quote(sk.Tool)), oneLine(sk.Reason, 300)))
	}
	if st.SkippedMore > 0 {
		lines = append(lines, fmt.Sprintf("server %s: %d more tools skipped", st.Name, st.SkippedMore))
	}
	return lines
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
	h := mt.ClaimedHints()
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
