package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/configfile"
	"github.com/tollgate-dev/tollgate/hooks/claudecode"
	"github.com/tollgate-dev/tollgate/policy"
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
	}
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
		if d.Skipped || d.Severity == configfile.SeverityError {
			bad++
		}
	}
	if len(s.Handlers()) == 0 && len(s.Permissions) == 0 {
		bad++
	}
	// The permissions are rules 'tollgate run --claude-settings' enforces.
	for _, p := range s.Permissions {
		if _, err := policy.PermissionRule(p.List+":"+p.Rule, p.Rule, approval.Effect(p.List)); err != nil {
			if p.List == "allow" {
				fmt.Fprintf(w, "%s: warning: permissions.allow: %v; not applied\n", p.Source, err)
				continue
			}
			fmt.Fprintf(w, "%s: error: permissions.%s: %v\n", p.Source, p.List, err)
			bad++
		}
	}
	fmt.Fprintf(w, "%s: %d Claude Code hook handler(s) loaded\n", f, len(s.Handlers()))
	if len(s.Permissions) > 0 {
		fmt.Fprintf(w, "%s: %d permission rule(s), enforced as policy rules\n", f, len(s.Permissions))
		for _, p := range s.Permissions {
			fmt.Fprintf(w, "  %s %s (rule %s:%s)\n", p.List, p.Rule, p.List, p.Rule)
		}
	}
	for _, h := range s.Handlers() {
		fmt.Fprintf(w, "  %s\n", h)
	}
	return bad
}

// isClaudeSettings reports whether a file given to `tollgate hooks check` is
// a Claude Code settings file (JSON) rather than a declarative hooks file.
func isClaudeSettings(f string) bool { return strings.HasSuffix(f, ".json") }
