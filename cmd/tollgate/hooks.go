package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tollgate-dev/tollgate/configfile"
	"github.com/tollgate-dev/tollgate/hooks/declarative"
)

// hooksRunExtension adds --hooks FILE (repeatable) to `tollgate run`: the
// files' declarative hooks (seed 000) become the agent's tool call listener,
// and ON_STOP fires when the run ends, with the run's status. A bad entry is
// skipped and reported (seed 000); a file that does not parse, has no hooks,
// or pastes model-controlled text into a shell command is a usage error.
func hooksRunExtension() runExtension {
	return runExtension{
		flags: func(fs *pflag.FlagSet, f *runFlags) {
			fs.StringArrayVar(&f.hooks, "hooks", nil, "declarative tool call hooks file (YAML, see 'tollgate hooks check'); repeatable")
		},
	}
}

// newHooksCmd is `tollgate hooks`, with `tollgate hooks check FILE...`.
func newHooksCmd(env *cliEnv) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hooks",
		Short: "Work with declarative tool call hooks files",
		Args:  argsUsage(cobra.NoArgs),
	}
	check := &cobra.Command{
		Use:   "check FILE...",
		Short: "Load hooks files and report every skipped entry and warning",
		Long: `Load each hooks file with the same code as 'tollgate run --hooks', print
every skipped entry and every warning as FILE:LINE:COL, then the hooks that
were loaded. A FILE ending in .json is read as a Claude Code settings file,
as 'tollgate run --claude-settings' reads it.

Warnings cover unknown keys, wrong types, bad timeouts, shell commands that
paste ${tool}, ${args}, ${callId} or ${error} into the command line, and
unquoted values that a YAML comment cut short (command: echo a #b runs "echo a").

Exit status: 0 when nothing was skipped, 1 when an entry was skipped, a file
could not be read or parsed, has no hooks, or has a command that pastes
model-controlled text into the shell (which 'tollgate run --hooks' refuses),
2 usage.`,
		Example: `  tollgate hooks check examples/demo/hooks.yaml
  tollgate hooks check .claude/settings.json`,
		Args: argsUsage(cobra.MinimumNArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			bad := 0
			for _, f := range args {
				if isClaudeSettings(f) {
					bad += checkClaudeSettings(f, env.stdout)
					continue
				}
				reg, err := declarative.Load(f, nil)
				if err != nil {
					fmt.Fprintf(env.stdout, "%s: error: %v\n", f, err)
					bad++
					continue
				}
				for _, d := range reg.Diagnostics() {
					fmt.Fprintln(env.stdout, d)
					if d.Skipped || d.Unsafe || d.Severity == configfile.SeverityError {
						bad++
					}
				}
				hs := reg.Hooks()
				if len(hs) == 0 {
					bad++
				}
				fmt.Fprintf(env.stdout, "%s: %d hook(s) loaded\n", f, len(hs))
				for _, h := range hs {
					fmt.Fprintf(env.stdout, "  %s\n", h)
				}
			}
			if bad > 0 {
				return withCode(exitError, fmt.Errorf("hooks check: %d problem(s): skipped or unsafe hooks, or no hooks", bad))
			}
			return nil
		},
	}
	check.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageErr("%s%v", commandPrefix(c), err) })
	cmd.AddCommand(check)
	return cmd
}
