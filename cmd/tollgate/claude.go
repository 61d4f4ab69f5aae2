package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/tollgate-dev/tollgate/hooks/claudecode"
)

// claudeRunExtension adds the Claude Code hook flags to `tollgate run`:
// --claude-settings FILE (repeatable), --claude-project-settings (the
// workspace's .claude/settings.json and .claude/settings.local.json and the
// user's ~/.claude/settings.json), --claude-fail EVENT=open|closed and
// --claude-timeout. Settings files are read only when asked for.
func claudeRunExtension() runExtension {
	return runExtension{
		flags: func(fs *pflag.FlagSet, f *runFlags) {
			fs.StringArrayVar(&f.claudeFiles, "claude-settings", nil, "Claude Code settings file whose hooks to run (see 'tollgate hooks check'); repeatable")
			fs.BoolVar(&f.claudeProject, "claude-project-settings", false, "run the hooks of the workspace's .claude/settings.json and .claude/settings.local.json and of ~/.claude/settings.json")
			fs.StringArrayVar(&f.claudeFails, "claude-fail", nil, "fail mode of Claude Code hooks for an event, EVENT=open|closed (EVENT * for all; default closed for PreToolUse and PermissionRequest, open for the rest); repeatable")
			fs.DurationVar(&f.claudeTimeout, "claude-timeout", 0, "timeout of a Claude Code hook that sets none (default 60s)")
		},
		setup: func(ctx context.Context, rs *runSetup) error {
			cc := rs.cfg.Claude
			if cc == nil || (len(cc.Files) == 0 && !cc.Project) {
				return nil
			}
			files, project, fails, timeout := cc.Files, cc.Project, cc.FailModes, time.Duration(cc.Timeout)
			modes, err := parseFailModes(fails)
			if err != nil {
				return usageErr("run: --claude-fail: %v", err)
			}
			all := append([]string{}, files...)
			if project {
				home, _ := os.UserHomeDir()
				found := claudecode.SettingsFiles(rs.cfg.Workdir, home)
				if len(found) == 0 {
					fmt.Fprintf(rs.env.stderr, "tollgate: claude settings: --claude-project-settings found no settings file under %s/.claude or ~/.claude\n", rs.cfg.Workdir)
				}
				all = append(all, found...)
			}
			s, err := loadClaudeSettings(all, rs.env.stderr)
			if err != nil {
				return usageErr("run: --claude-settings: %v", err)
			}
			if len(files) > 0 && s.Handlers() == 0 {
				return usageErr("run: --claude-settings: no hooks in %s", strings.Join(files, ", "))
			}
			logger := slog.New(slog.NewTextHandler(rs.env.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
			// A gate that did not load must not let calls through: refuse
			// settings whose skipped entries belong to an event that fails
			// closed.
			for _, d := range s.Diagnostics {
				if d.Skipped && (d.Event == claudecode.PreToolUse || d.Event == claudecode.PermissionRequest) && modes[d.Event] != claudecode.FailOpen {
					return usageErr("run: --claude-settings: a %s entry was skipped (%s); fix it, or pass --claude-fail %s=open to run without it", d.Event, d, d.Event)
				}
			}
			copts := &claudecode.Options{ProjectDir: rs.cfg.Workdir, FailModes: modes, DefaultTimeout: timeout, Logger: logger}
			if rs.sandbox != nil {
				copts.Sandbox, copts.PassEnv = rs.sandbox.hookSandbox(), rs.sandbox.passEnv
			}
			rs.addProtected(all...)
			c, err := claudecode.New(s, copts)
			if err != nil {
				return usageErr("run: %v", err)
			}
			c.Register(rs.opts.Hooks)
			return nil
		},
	}
}

// parseFailModes reads EVENT=open|closed values; EVENT * sets every event.
func parseFailModes(vals []string) (map[claudecode.Event]claudecode.FailMode, error) {
	events := []claudecode.Event{claudecode.PreToolUse, claudecode.PermissionRequest, claudecode.PostToolUse, claudecode.PostToolUseFailure,
		claudecode.UserPromptSubmit, claudecode.Stop, claudecode.SessionStart, claudecode.SessionEnd, claudecode.Notification}
	out := map[claudecode.Event]claudecode.FailMode{}
	for _, v := range vals {
		ev, m, ok := strings.Cut(v, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want EVENT=open|closed", v)
		}
		mode, err := claudecode.ParseFailMode(m)
		if err != nil {
			return nil, err
		}
		known := false
		for _, e := range events {
			if ev == "*" || claudecode.Event(ev) == e {
				out[e], known = mode, true
			}
		}
		if !known {
			return nil, fmt.Errorf("%q: unknown event %q", v, ev)
		}
	}
	return out, nil
}

// loadClaudeSettings reads the settings files, prints every diagnostic to w,
// and fails on a file that cannot be read or did not load.
func loadClaudeSettings(files []string, w io.Writer) (*claudecode.Settings, error) {
	s, err := claudecode.LoadFiles(files...)
	if err != nil {
		return nil, err
	}
	bad := 0
	for _, d := range s.Diagnostics {
		fmt.Fprintln(w, "tollgate: claude settings:", d)
		if d.Severity >= slog.LevelError {
			bad++
		}
	}
	if bad > 0 {
		// Running without guards that were asked for would be worse than not running.
		return nil, fmt.Errorf("%d settings file(s) did not load (see above)", bad)
	}
	return s, nil
}

// checkClaudeSettings is `tollgate hooks check` for a Claude Code settings
// file: every diagnostic, then the handlers loaded. It returns the number of
// problems (skipped entries, a file that did not load, no handlers).
func checkClaudeSettings(f string, w io.Writer) int {
	s, err := claudecode.LoadFiles(f)
	if err != nil {
		fmt.Fprintf(w, "%s: error: %v\n", f, err)
		return 1
	}
	bad := 0
	for _, d := range s.Diagnostics {
		fmt.Fprintln(w, d)
		if d.Skipped || d.Severity >= slog.LevelError {
			bad++
		}
	}
	if s.Handlers() == 0 {
		bad++
	}
	fmt.Fprintf(w, "%s: %d Claude Code hook handler(s) loaded\n", f, s.Handlers())
	for _, g := range s.Groups {
		m := g.Matcher
		if m == "" {
			m = "*"
		}
		for _, h := range g.Handlers {
			fmt.Fprintf(w, "  %s %s: %s\n", g.Event, m, h)
		}
	}
	return bad
}

// isClaudeSettings reports whether a file given to `tollgate hooks check` is
// a Claude Code settings file (JSON) rather than a declarative hooks file.
func isClaudeSettings(f string) bool { return strings.HasSuffix(f, ".json") }
