package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval/store"
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
		setup: func(ctx context.Context, rs *runSetup) error {
			files := rs.cfg.HooksFiles
			if len(files) == 0 {
				return nil
			}
			// The hooks' log actions are log lines (-v, --log-file); a
			// command that failed is a warning, shown without -v too.
			// Command hooks run in the run's recorded workspace, so that a
			// resume from another directory runs them where the run began.
			dopts := &declarative.Options{Logger: rs.warnLogger, Dir: rs.cfg.Workdir}
			if rs.sandbox != nil {
				dopts.Sandbox, dopts.PassEnv = rs.sandbox.hookSandbox(), rs.sandbox.passEnv
			}
			rs.addProtected(files...)
			reg, err := loadHookFiles(files, rs.env.stderr, dopts)
			if err != nil {
				return usageErr("run: --hooks: %v", err)
			}
			agentID := ""
			rs.afterNew = append(rs.afterNew, func(ctx context.Context, a *agent.Agent) error {
				agentID = a.ID()
				reg.ApplyTo(ctx, a)
				return nil
			})
			rs.onStop = append(rs.onStop, func(ctx context.Context, runID string, status store.RunStatus) {
				hctx := map[string]any{"agent": agentID, "status": string(status), "runId": runID}
				// ON_STOP runs even when the run was canceled, so that its
				// hooks can record that; each gets its own timeout.
				reg.FireEvent(context.WithoutCancel(ctx), declarative.OnStop, hctx)
			})
			return nil
		},
	}
}

// loadHookFiles loads each file once (a file named twice is loaded once, so
// that each hook fires once per event), prints every diagnostic to w, and
// joins them into one registry with opts.
func loadHookFiles(files []string, w io.Writer, opts *declarative.Options) (*declarative.Registry, error) {
	seen := map[string]bool{}
	var regs []*declarative.Registry
	for _, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil {
			return nil, err
		}
		if seen[abs] {
			fmt.Fprintf(w, "tollgate: hooks: %s is given more than once; it is loaded once\n", f)
			continue
		}
		seen[abs] = true
		reg, err := declarative.Load(f, nil) // diagnostics are printed below, not logged
		if err != nil {
			return nil, err
		}
		unsafe := 0
		for _, d := range reg.Diagnostics() {
			fmt.Fprintln(w, "tollgate: hooks:", d)
			if d.Severity >= slog.LevelError {
				// The document did not load: running without the hooks that
				// were asked for (audit, say) would be worse than not running.
				return nil, fmt.Errorf("%s did not load (see above)", f)
			}
			if d.Unsafe {
				unsafe++
			}
		}
		if unsafe > 0 {
			return nil, fmt.Errorf("%s: %d command(s) paste model-controlled text into the shell (see above); pass it as $TOLLGATE_* variables, stdin or argv", f, unsafe)
		}
		if len(reg.Hooks()) == 0 {
			return nil, fmt.Errorf("%s has no hooks (want a top-level hooks list)", f)
		}
		regs = append(regs, reg)
	}
	return declarative.Join(opts, regs...), nil
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
					if d.Skipped || d.Unsafe || d.Severity >= slog.LevelError {
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
