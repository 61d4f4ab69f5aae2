package main

import (
	"github.com/spf13/cobra"

	"github.com/tollgate-dev/tollgate/gate"
)

func newCodexCmd(env *cliEnv) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "codex",
		Short: "Govern Codex CLI's tool calls with tollgate's policies and hooks",
		Args:  argsUsage(cobra.NoArgs),
	}
	cmd.AddCommand(newCodexHookCmd(env), newCodexSettingsCmd(env))
	return cmd
}

func newCodexHookCmd(env *cliEnv) *cobra.Command {
	f := claudeHookFlags{source: gate.SourceCodex}
	cmd := &cobra.Command{
		Use:   "hook",
		Short: "Answer one Codex hook event (a command hook in hooks.json)",
		Long: `Read one Codex CLI hook event (JSON) on stdin and answer it on stdout with
Codex's hook JSON: PreToolUse and PermissionRequest are decided by tollgate's
policies, PostToolUse records the result of the call, SessionStart,
UserPromptSubmit and Stop keep the session's state. It is the Claude Code
bridge in Codex's dialect: Codex's shell tool (Bash) is bash with command,
other tools are judged by their names.

Codex cannot ask and lets a command run when its hook fails, so every path
that cannot allow prints an explicit deny, with exit status 2 and the reason
on stderr: a policy's deny (the model reads the reason), an ask without
--server (a person must approve), and a hook that cannot decide (bad input,
a policy that does not load, a server that cannot be reached, no answer
within --wait).

'tollgate codex settings' prints the hooks.json block that runs it, and the
trust entry Codex needs in config.toml.`,
		Example: `  echo '{"session_id":"s","cwd":"/w","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf x"},"tool_use_id":"c1"}' \
    | tollgate codex hook --policy policy.yaml`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			return runClaudeHook(c.Context(), env, &f)
		},
	}
	addHookFlags(cmd, &f, "codex:")
	return cmd
}
