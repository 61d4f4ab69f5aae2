package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/spf13/cobra"

	"github.com/tollgate-dev/tollgate/hooks/claudecode"
	"github.com/tollgate-dev/tollgate/internal/claudenames"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/sandbox"
)

// claudeEvents are the events `tollgate claude-code settings` hooks, in
// the order printed; the tool events match every tool.
var claudeEvents = []claudecode.Event{
	claudenames.PreToolUse, claudenames.PermissionRequest, claudenames.PostToolUse, claudenames.PostToolUseFailure,
	claudenames.UserPromptSubmit, claudenames.Stop, claudenames.SessionStart, claudenames.SessionEnd,
}

func newClaudeSettingsCmd(env *cliEnv) *cobra.Command {
	var f claudeHookFlags
	var useHTTP bool
	cmd := &cobra.Command{
		Use:   "settings",
		Short: "Print the settings.json hooks block that has tollgate govern Claude Code",
		Long: `Print the "hooks" block of a Claude Code settings file (.claude/settings.json,
or ~/.claude/settings.json for every project) that runs 'tollgate claude-code
hook' with these flags for every tool call and session event. File paths are
made absolute. The timeout of the tool events is above --wait, so that no
answer is a deny tollgate gives, not a timeout Claude Code lets through.

With --http (and --server), the block uses Claude Code's http hook type
instead: no process per event; the token comes from $TOLLGATE_TOKEN.`,
		Example: `  tollgate claude-code settings --policy policy.yaml > .claude/settings.json
  tollgate claude-code settings --server https://tollgate.example.com --token-file ~/.tollgate-token`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if useHTTP && f.server == "" {
				return usageErr("claude-code settings: --http needs --server")
			}
			s, err := claudeSettings(&f, useHTTP)
			if err != nil {
				return orCode(exitError, err)
			}
			b, err := json.MarshalIndent(s, "", "  ")
			if err != nil {
				return withCode(exitError, err)
			}
			fmt.Fprintf(env.stdout, "%s\n", b)
			return nil
		},
	}
	fs := cmd.Flags()
	addSettingsFlags(fs, &f)
	fs.BoolVar(&useHTTP, "http", false, "use Claude Code's http hook type (POST to --server) instead of a command")
	return cmd
}

// claudeSettings returns the settings object: {"hooks": {EVENT: [{matcher,
// hooks: [handler]}]}}.
func claudeSettings(f *claudeHookFlags, useHTTP bool) (map[string]any, error) {
	args, toolTimeout, err := hookCommand(f, "claude-code")
	if err != nil {
		return nil, err
	}
	hooks := map[string]any{}
	for _, ev := range claudeEvents {
		timeout := 30
		if ev == claudenames.PreToolUse || ev == claudenames.PermissionRequest {
			timeout = toolTimeout
		}
		var h map[string]any
		if useHTTP {
			h = map[string]any{"type": "http", "url": fmt.Sprintf("%s/v1/hooks/claude-code?wait=%s", f.server, f.wait),
				"headers": map[string]string{"Authorization": "Bearer $" + envToken}, "allowedEnvVars": []string{envToken}, "timeout": timeout}
		} else {
			h = map[string]any{"type": "command", "command": shellQuote(args), "timeout": timeout}
		}
		group := map[string]any{"hooks": []any{h}}
		switch ev {
		case claudenames.PreToolUse, claudenames.PermissionRequest, claudenames.PostToolUse, claudenames.PostToolUseFailure:
			group["matcher"] = "*"
		}
		hooks[string(ev)] = []any{group}
	}
	return map[string]any{"hooks": hooks}, nil
}

// shellQuote joins args into one sh command line, each word quoted.
func shellQuote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// hookCommand returns the command line of `tollgate AGENT hook` with f's
// flags (file paths made absolute), and the timeout in seconds the agent
// must give the tool events: above --wait with a server, so that no
// answer is tollgate's deny and not the agent's timeout (which lets the
// call run).
func hookCommand(f *claudeHookFlags, agent string) ([]string, int, error) {
	abs := func(p string) (string, error) {
		if p == "" {
			return "", nil
		}
		return filepath.Abs(p)
	}
	// A file the hook names must be there now: a settings block naming a
	// missing policy would deny every call the agent asks for later.
	exists := func(flag, p string) (string, error) {
		a, err := abs(p)
		if err != nil {
			return "", err
		}
		if _, err := os.Stat(a); err != nil {
			return "", configErr("%s %s: %v", flag, p, errors.Unwrap(err))
		}
		return a, nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil, 0, err
	}
	args := []string{self, agent, "hook"}
	for _, p := range f.policies {
		a, err := exists("--policy", p)
		if err != nil {
			return nil, 0, err
		}
		args = append(args, "--policy", a)
	}
	for _, h := range f.hooks {
		a, err := exists("--hooks", h)
		if err != nil {
			return nil, 0, err
		}
		args = append(args, "--hooks", a)
	}
	if f.hooksSandbox != "" {
		// A misspelt mode would deny every call; it is refused now.
		if _, err := sandbox.ParseMode(f.hooksSandbox); err != nil {
			return nil, 0, usageErr("--hooks-sandbox: %v", err)
		}
		args = append(args, "--hooks-sandbox", f.hooksSandbox)
	}
	for _, fl := range []struct{ name, val string }{{"--records", f.records}, {"--state-dir", f.stateDir}, {"--token-file", f.tokenFile}} {
		a, err := abs(fl.val)
		if err != nil {
			return nil, 0, err
		}
		if a != "" {
			args = append(args, fl.name, a)
		}
	}
	// The tool events wait for a person at most --wait; the agent's
	// timeout must be longer, or its timeout (which lets the call run)
	// would come first.
	toolTimeout := 30
	if f.server != "" {
		args = append(args, "--server", f.server, "--wait", f.wait.String())
		toolTimeout = agentTimeout(f.wait)
	}
	return args, toolTimeout, nil
}

// addSettingsFlags adds the flags of the hook command that a settings
// command writes into the block it prints (claude-code and codex settings).
func addSettingsFlags(fs *pflag.FlagSet, f *claudeHookFlags) {
	fs.StringArrayVar(&f.policies, "policy", nil, "policy file the hook decides with (repeatable)")
	fs.StringArrayVar(&f.hooks, "hooks", nil, "declarative hooks file (repeatable)")
	fs.StringVar(&f.hooksSandbox, "hooks-sandbox", "", "confine the hooks files' commands: workspace (the default), read-only or off")
	fs.StringVar(&f.records, "records", "", "decision records file (JSON lines)")
	fs.StringVar(&f.stateDir, "state-dir", "", "the hook's state directory")
	fs.StringVar(&f.server, "server", "", "tollgate server URL")
	fs.StringVar(&f.tokenFile, "token-file", "", "file holding the agent-role token (default $"+envToken+")")
	fs.DurationVar(&f.wait, "wait", serverapi.DefaultClaudeWait, "with --server, how long an ask waits for an answer")
}
