package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/hooks/claudecode"
	"github.com/tollgate-dev/tollgate/hooks/declarative"
	"github.com/tollgate-dev/tollgate/internal/claudegate"
	"github.com/tollgate-dev/tollgate/internal/runbuild"
	"github.com/tollgate-dev/tollgate/internal/serveconfig"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/records"
	"github.com/tollgate-dev/tollgate/sandbox"
	"github.com/tollgate-dev/tollgate/server"
)

// claudeHookFlags are the flags of `tollgate claude-code hook`.
type claudeHookFlags struct {
	policies []string
	hooks    []string
	// hooksSandbox confines the --hooks files' commands as a run's
	// --hooks-sandbox does: workspace (write only in the session's
	// cwd), read-only or off.
	hooksSandbox string
	records      string
	stateDir     string
	// server, tokenFile and wait: server mode.
	server    string
	tokenFile string
	wait      time.Duration
	// source is the agent whose hooks are answered: claude-code, or codex
	// (whose dialect [claudegate.CodexAnswer] gives).
	source gate.Source
}

func newClaudeCodeCmd(env *cliEnv) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "claude-code",
		Short: "Govern Claude Code's tool calls with tollgate's policies and hooks",
		Args:  argsUsage(cobra.NoArgs),
	}
	cmd.AddCommand(newClaudeHookCmd(env), newClaudeSettingsCmd(env))
	return cmd
}

func newClaudeHookCmd(env *cliEnv) *cobra.Command {
	f := claudeHookFlags{source: gate.SourceClaudeCode}
	cmd := &cobra.Command{
		Use:   "hook",
		Short: "Answer one Claude Code hook event (a command hook in settings.json)",
		Long: `Read one Claude Code hook event (JSON) on stdin and answer it on stdout
with Claude Code's hook JSON: PreToolUse and PermissionRequest are decided by
tollgate's policies, PostToolUse and PostToolUseFailure record the result of
the call, UserPromptSubmit, Stop, SessionStart and SessionEnd keep the
session's state.

Claude Code's tools are judged under tollgate's names and arguments (Bash is
bash with command; Write, Edit and MultiEdit are write and edit with path
from file_path; Read, Glob, Grep and WebFetch are read, glob, grep and
webfetch; mcp__* as they are), with the hints of tollgate's tools, so that a
policy written for tollgate governs Claude Code unchanged.

A deny is Claude Code's deny with the reason, which the model sees; an ask
is Claude Code's own permission prompt; an allow by a rule or an autonomy
level is an allow; when no rule matched, Claude Code's own permissions
decide. A hook that cannot decide (bad input, a policy that does not load,
a crash) denies, with exit status 2.

'tollgate claude-code settings' prints the settings.json block that runs it.`,
		Example: `  echo '{"session_id":"s","cwd":"/w","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf x"},"tool_use_id":"t1"}' \
    | tollgate claude-code hook --policy policy.yaml`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			return runClaudeHook(c.Context(), env, &f)
		},
	}
	addHookFlags(cmd, &f, "claudeCode:")
	return cmd
}

// addHookFlags adds the flags of a hook command to cmd; section names
// server.yaml's section that governs the agent.
func addHookFlags(cmd *cobra.Command, f *claudeHookFlags, section string) {
	fs := cmd.Flags()
	fs.StringArrayVar(&f.policies, "policy", nil, "policy file whose rules decide (repeatable; combined deny > ask > allow)")
	fs.StringArrayVar(&f.hooks, "hooks", nil, "declarative hooks file (YAML) whose PRE_TOOL_USE, POST_TOOL_USE and ON_ERROR hooks fire for the calls that run (repeatable)")
	fs.StringVar(&f.hooksSandbox, "hooks-sandbox", string(sandbox.Workspace), "confine the --hooks files' commands as 'tollgate run' does: workspace (write only in the session's cwd), read-only or off (they then run with your rights)")
	fs.StringVar(&f.records, "records", "", "append one decision record per call (JSON lines) to this file")
	fs.StringVar(&f.server, "server", "", "answer through tollgate's server at this URL ('tollgate serve' with a "+section+" section): it decides with the team's policy too, and an ask waits for a person's answer on the approvals page")
	fs.StringVar(&f.tokenFile, "token-file", "", "file holding the server's bearer token, an agent-role token ('tollgate serve token --role agent'); default $"+envToken)
	fs.DurationVar(&f.wait, "wait", serverapi.DefaultClaudeWait, "with --server, how long an ask waits for a person's answer; no answer denies (keep it below the hook's timeout)")
	fs.StringVar(&f.stateDir, "state-dir", "", "directory of the sessions' state between events (default: $"+envStateDir+", else $XDG_STATE_HOME/tollgate, else ~/.local/state/tollgate)")
}

// runClaudeHook reads the event, answers it, and exits 0, 1 or 2 as the
// answer says. Whatever fails before a decision denies (fail closed).
func runClaudeHook(ctx context.Context, env *cliEnv, f *claudeHookFlags) (err error) {
	raw, rerr := io.ReadAll(io.LimitReader(env.stdin, claudegate.MaxInputBytes+1))
	in, perr := claudegate.ParseInput(bytes.NewReader(raw))
	if rerr != nil {
		perr = rerr
	}
	ev := claudegateEvent(in)
	writeAnswer := func(a claudegate.Answer) error {
		if f.source == gate.SourceCodex {
			a = claudegate.CodexAnswer(ev, a)
		}
		return writeClaudeAnswer(env, a)
	}
	defer func() {
		if p := recover(); p != nil {
			err = writeAnswer(claudegate.Failed(ev, fmt.Sprintf("tollgate's hook failed (%v); the call was not allowed", p)))
		}
	}()
	if perr != nil {
		return writeAnswer(claudegate.Failed(ev, "tollgate could not read the hook event: "+perr.Error()))
	}
	b, closeAll, err := claudeBridge(ctx, env, f, in)
	if err != nil {
		return writeAnswer(claudegate.Failed(ev, "tollgate's hook is misconfigured: "+err.Error()))
	}
	var ans claudegate.Answer
	if f.server != "" {
		ans = forwardClaude(ctx, env, f, in, raw, b)
	} else {
		ans = b.Handle(ctx, in)
	}
	if cerr := closeAll(); cerr != nil {
		fmt.Fprintln(env.stderr, "tollgate:", f.source, "hook:", cerr)
	}
	return writeAnswer(ans)
}

func claudegateEvent(in *claudegate.Input) claudecode.Event {
	if in == nil {
		return ""
	}
	return in.HookEventName
}

// writeClaudeAnswer prints the answer's JSON and returns the error that
// makes Main exit with its code, its Stderr printed.
func writeClaudeAnswer(env *cliEnv, a claudegate.Answer) error {
	if a.Output != nil {
		b, err := json.Marshal(a.Output)
		if err != nil {
			return &exitCodeError{code: 2, err: err, config: true}
		}
		fmt.Fprintf(env.stdout, "%s\n", b)
	}
	if a.Exit == 0 {
		return nil
	}
	var msg error
	if a.Stderr != "" {
		msg = errors.New(a.Stderr)
	}
	return &exitCodeError{code: a.Exit, err: msg, config: true}
}

// claudeBridge builds the bridge of the flags for the event in.
func claudeBridge(ctx context.Context, env *cliEnv, f *claudeHookFlags, in *claudegate.Input) (*claudegate.Bridge, func() error, error) {
	stderr := env.stderr
	notice := func(s string) { fmt.Fprintln(stderr, "tollgate:", s) }
	closers := []func() error{}
	closeAll := func() error {
		var errs []error
		for _, c := range closers {
			errs = append(errs, c())
		}
		return errors.Join(errs...)
	}
	opts := &claudegate.Options{StateDir: f.stateDir, Source: f.source}
	defaultState, derr := defaultStateDir(env)
	if opts.StateDir == "" {
		if derr != nil {
			return nil, closeAll, derr
		}
		opts.StateDir = defaultState
	}
	for _, p := range f.policies {
		pol, err := runbuild.LoadPolicy(p, "", notice)
		if err != nil {
			return nil, closeAll, err
		}
		opts.Policies = append(opts.Policies, pol)
	}
	if len(f.hooks) > 0 {
		reg, release, err := claudeHookFiles(ctx, env, f, in, opts.StateDir, defaultState)
		if err != nil {
			return nil, closeAll, err
		}
		closers = append(closers, release)
		opts.Listener = reg.Listener()
	}
	if f.records != "" {
		w, err := records.OpenFile(f.records, nil)
		if err != nil {
			return nil, closeAll, err
		}
		closers = append(closers, w.Close)
		opts.OnRecord = func(ctx context.Context, rec gate.Record) { w.Record(ctx, rec) }
	}
	// The agent may not rewrite what governs it: its next call would be
	// judged by what it wrote.
	protect := append(append([]string{opts.StateDir, f.records}, f.policies...), f.hooks...)
	if filepath.IsAbs(in.Cwd) {
		protect = append(protect, filepath.Join(in.Cwd, ".claude"), filepath.Join(in.Cwd, ".codex"))
	}
	opts.Authorizers = append(opts.Authorizers, claudegate.ProtectFiles(protect...))
	if u, err := user.Current(); err == nil {
		opts.Prompter = u.Username
	} else {
		opts.Prompter = os.Getenv("USER")
	}
	b, err := claudegate.New(opts)
	return b, closeAll, err
}

// claudeHookFiles loads the --hooks files as 'tollgate run' runs them
// (confinedHooks): each command in the hooks sandbox of --hooks-sandbox on
// the session's cwd (this process's working directory when the event
// names none), never writing the hook's policies, records or state
// directory (stateDir) nor the default state directory, and reading none
// of the store, key and MCP logins kept there.
func claudeHookFiles(ctx context.Context, env *cliEnv, f *claudeHookFlags, in *claudegate.Input, stateDir, defaultState string) (*declarative.Registry, func() error, error) {
	workdir := in.Cwd
	if !filepath.IsAbs(workdir) {
		wd, err := env.wd()
		if err != nil {
			return nil, nil, err
		}
		workdir = wd
	}
	protect := append([]string{stateDir, defaultState, f.records, filepath.Join(workdir, ".codex")}, f.policies...)
	// The hook's own --state-dir holds sessions' calls alone, unless it is
	// the default one, which holds the store, its key and the MCP logins.
	hide := stateHidden(defaultState, "")
	logger := slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return confinedHooks(ctx, &hookFilesConfig{files: f.hooks, workdir: workdir, mode: f.hooksSandbox, setting: "--hooks-sandbox", workdirSetting: "the session's cwd",
		protect: protect, hide: hide, notice: func(s string) { fmt.Fprintln(env.stderr, "tollgate:", s) }, logger: logger})
}

// claudeServeOptions loads the claudeCode: or codex: section (named
// section) of server.yaml: its policy (with its autonomy level) and
// hooks, for the server's decisions. The hooks' commands run as a run's
// (confinedHooks): in the hooks sandbox of the section's hooksSandbox,
// whose workspace is its workdir (default the directory of server.yaml), never
// writing protect (the server's own files) or the section's policy, nor
// reading hide (its store's); release lets go of what their sandbox holds.
func claudeServeOptions(ctx context.Context, cc *serveconfig.ClaudeCodeConfig, section, stateDir string, protect, hide []string, stderr io.Writer) (o *server.ClaudeCodeOptions, release func() error, err error) {
	notice := func(s string) { fmt.Fprintln(stderr, "tollgate serve: "+section+":", s) }
	dir := "claude-code-server"
	if section == "codex" {
		dir = "codex-server"
	}
	o = &server.ClaudeCodeOptions{ApprovalTTL: cc.ApprovalTTL, Tenants: cc.Tenants, StateDir: filepath.Join(stateDir, dir)}
	if cc.PolicyFile != "" || cc.Autonomy != "" {
		pol, err := runbuild.LoadPolicy(cc.PolicyFile, cc.Autonomy, notice)
		if err != nil {
			return nil, nil, err
		}
		o.Policies = append(o.Policies, pol)
		o.PolicyFile = cc.PolicyFile
	}
	release = func() error { return nil }
	if len(cc.HooksFiles) > 0 {
		logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		reg, rel, err := confinedHooks(ctx, &hookFilesConfig{files: cc.HooksFiles, workdir: cc.Workdir,
			mode: cmp.Or(cc.HooksSandbox, string(sandbox.Workspace)), setting: section + ".hooksSandbox", workdirSetting: section + ".workdir",
			protect: append(slices.Clip(protect), cc.PolicyFile), hide: hide, notice: notice, logger: logger})
		if err != nil {
			return nil, nil, err
		}
		o.Listener, release = reg.Listener(), rel
	}
	return o, release, nil
}
