package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/builtin"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/glob"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
	"github.com/tollgate-dev/tollgate/toolkit"
)

// runConfig holds the flags of `tollgate run` that the core reads.
type runConfig struct {
	model   string
	baseURL string // --base-url, for openai: and anthropic: models
	apiKey  string // --api-key; never printed, logged or stored
	// apiKeyEnv is --api-key-env: the name of the variable holding the key.
	apiKeyEnv string
	workdir   string
	system    string
	maxTurns  int
	timeout   time.Duration // --timeout: the whole run's limit; 0 is none
	deny      []string
	json      bool
	verbose   bool
}

// runSetup is what `tollgate run` (and `tollgate resume`) builds before the
// agent exists. Extensions add to it in their setup function.
type runSetup struct {
	env *cliEnv
	cfg *runConfig
	// args are the flags `tollgate run` was given, without the prompt, so that a
	// stored run can be rebuilt by `tollgate resume`.
	args []string
	// opts becomes the agent's options; Hooks is never nil.
	opts *agent.Options
	// tools are extra tools (beside the builtins), e.g. from MCP servers.
	tools []tool.Tool
	// afterNew run once the agent exists (e.g. to attach a tool call listener).
	afterNew []func(a *agent.Agent) error
	// afterRun run when the run (or resume) has ended, with its result and error.
	afterRun []func(ctx context.Context, res *agent.Result, err error)
	// onHalt, if set, is called when the run ends pending (e.g. to store it).
	onHalt func(ctx context.Context, res *agent.Result) error
	// closers run when the command ends, last added first.
	closers []func() error
	logger  *slog.Logger
	// sandbox is what the sandbox flags decided (never nil after its setup).
	sandbox *sandboxConfig
	// protected lists the files that govern the run (policy, hooks, settings,
	// script, records, the state directory): no tool may write them.
	protected []string
}

// runExtension adds flags to `tollgate run` and takes part in its setup.
type runExtension struct {
	flags func(fs *pflag.FlagSet)
	setup func(ctx context.Context, rs *runSetup) error
}

// runExtensions lists the extensions of `tollgate run`, one line each.
func runExtensions() []runExtension {
	return []runExtension{
		sandboxRunExtension(), // first: the others read rs.sandbox
		hooksRunExtension(),
		claudeRunExtension(),
		approvalRunExtension(),
		mcpRunExtension(),
	}
}

// builtRun is an agent ready to run, with what must happen around it.
type builtRun struct {
	setup *runSetup
	agent *agent.Agent
}

func (b *builtRun) close() {
	for i := len(b.setup.closers) - 1; i >= 0; i-- {
		_ = b.setup.closers[i]()
	}
}

// runCommand is `tollgate run` with its parsed flags.
type runCommand struct {
	cmd  *cobra.Command
	cfg  runConfig
	exts []runExtension
}

func newRunCommand(env *cliEnv) *runCommand {
	rc := &runCommand{exts: runExtensions()}
	cmd := &cobra.Command{
		Use:   "run [flags] PROMPT",
		Short: "Run an agent on a prompt; every tool call is governed",
		Long: `Run an agent on PROMPT. Each tool call is printed as it happens with its
decision and result, then the model's answer as it streams in.

` + modelKinds + `

Exit status: 0 done, 1 error, 2 usage, 3 pending, 4 incomplete.`,
		Example: `  tollgate run --model script:examples/demo/script.yaml --workdir /tmp/ws --deny 'write' "tidy the notes"
  OPENAI_API_KEY=... tollgate run --model openai:gpt-4.1-mini "list the notes"
  tollgate run --model openai:llama3.1 --base-url http://127.0.0.1:11434/v1 "list the notes"
  ANTHROPIC_API_KEY=... tollgate run --model anthropic:claude-sonnet-4-5 "list the notes"`,
		Args: argsUsage(cobra.ExactArgs(1)),
	}
	f := cmd.Flags()
	f.StringVar(&rc.cfg.model, "model", "", "model to use: script:PATH, openai:MODEL or anthropic:MODEL (required)")
	f.StringVar(&rc.cfg.baseURL, "base-url", "", "API root of an openai: or anthropic: model (default: the vendor's; e.g. http://127.0.0.1:11434/v1 for Ollama)")
	f.StringVar(&rc.cfg.apiKey, "api-key", "", "API key (default: --api-key-env, else the hosted service's OPENAI_API_KEY, OPENROUTER_API_KEY or ANTHROPIC_API_KEY)")
	f.StringVar(&rc.cfg.apiKeyEnv, "api-key-env", "", "name of the environment variable holding the API key (for servers other than the hosted ones)")
	f.StringVar(&rc.cfg.workdir, "workdir", ".", "workspace root for the builtin tools; paths outside it are refused")
	f.StringVar(&rc.cfg.system, "system", "", "system prompt")
	f.IntVar(&rc.cfg.maxTurns, "max-turns", agent.DefaultMaxTurns, "model turns before the run ends incomplete")
	f.DurationVar(&rc.cfg.timeout, "timeout", 0, "stop the whole run after this long, e.g. 90s or 10m (0: no limit); the run then fails with exit 1")
	f.StringArrayVar(&rc.cfg.deny, "deny", nil, "deny tools whose name matches this glob (* is the only wildcard, case-insensitive); repeatable")
	f.BoolVar(&rc.cfg.json, "json", false, "print one JSON event per line instead of text")
	f.BoolVarP(&rc.cfg.verbose, "verbose", "v", false, "log decisions to stderr")
	for _, e := range rc.exts {
		if e.flags != nil {
			e.flags(f)
		}
	}
	rc.cmd = cmd
	cmd.RunE = func(c *cobra.Command, args []string) error {
		b, err := rc.build(c.Context(), env, flagArgs(f))
		if err != nil {
			return err
		}
		defer b.close()
		ctx, cancel := b.runContext(c.Context())
		defer cancel()
		return b.execute(ctx, b.agent.Stream(ctx, args[0]))
	}
	return rc
}

func newRunCmd(env *cliEnv) *cobra.Command { return newRunCommand(env).cmd }

// flagArgs returns the flags that were set, as arguments that parse back to them.
func flagArgs(f *pflag.FlagSet) []string {
	var out []string
	f.Visit(func(fl *pflag.Flag) {
		if fl.Name == "api-key" {
			return // a key is never stored; resume reads it from the environment
		}
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				out = append(out, "--"+fl.Name+"="+v)
			}
			return
		}
		out = append(out, "--"+fl.Name+"="+fl.Value.String())
	})
	return out
}

// rebuildRun parses args (as stored from an earlier `tollgate run`) and builds
// the same agent again, for `tollgate resume`.
func rebuildRun(ctx context.Context, env *cliEnv, args []string) (*builtRun, error) {
	rc := newRunCommand(env)
	if err := rc.cmd.ParseFlags(args); err != nil {
		return nil, fmt.Errorf("stored run flags %q: %w", args, err)
	}
	return rc.build(ctx, env, args)
}

func (rc *runCommand) build(ctx context.Context, env *cliEnv, args []string) (*builtRun, error) {
	cfg := &rc.cfg
	if cfg.model == "" {
		return nil, usageErr("run: --model is required (e.g. --model script:PATH)")
	}
	if cfg.timeout < 0 {
		return nil, usageErr("run: --timeout must not be negative, got %s", cfg.timeout)
	}
	if cfg.maxTurns < 1 {
		return nil, usageErr("run: --max-turns must be at least 1, got %d", cfg.maxTurns)
	}
	for _, g := range cfg.deny {
		if !glob.Valid(g) {
			return nil, usageErr("run: --deny %q: a glob must be non-empty and free of control characters", g)
		}
		if msg := glob.ToolNameProblem(g); msg != "" {
			return nil, usageErr("run: --deny: %s", msg)
		}
	}
	logger := slog.New(slog.DiscardHandler)
	if cfg.verbose {
		logger = slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	// A provider's retries, with how long each waits, are shown even
	// without --verbose: a wait of a minute must not look like a hang.
	provLogger := logger
	if !cfg.verbose {
		provLogger = slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	m, name, err := openModel(cfg, provLogger)
	if err != nil {
		return nil, err
	}
	rs := &runSetup{
		env: env, cfg: cfg, args: args, logger: logger,
		opts: &agent.Options{Model: m, ModelName: name, SystemPrompt: cfg.system, MaxTurns: cfg.maxTurns, Hooks: &hooks.Hooks{}, Logger: logger},
	}
	b := &builtRun{setup: rs}
	if len(cfg.deny) > 0 {
		rs.opts.Hooks.BeforeTool("--deny", denyHook(cfg.deny))
	}
	for _, e := range rc.exts {
		if e.setup == nil {
			continue
		}
		if err := e.setup(ctx, rs); err != nil {
			b.close()
			return nil, err
		}
	}
	bopts := &builtin.Options{}
	if rs.sandbox != nil {
		bopts = rs.sandbox.builtinOptions()
	}
	// The file tools run in this process, outside any sandbox: they refuse
	// the files that govern the run themselves, and the Claude Code settings
	// a later run would read (a model must not plant a hook that approves).
	bopts.Protect = append(append(bopts.Protect, rs.protected...),
		filepath.Join(".claude", "settings.json"), filepath.Join(".claude", "settings.local.json"))
	tk, err := toolkit.New(&toolkit.Options{Workdir: cfg.workdir, Extra: rs.tools, Builtin: bopts})
	if err != nil {
		b.close()
		return nil, usageErr("run: %v", err)
	}
	rs.opts.Tools = tk
	a, err := agent.New(*rs.opts)
	if err != nil {
		b.close()
		return nil, err
	}
	for _, f := range rs.afterNew {
		if err := f(a); err != nil {
			b.close()
			return nil, err
		}
	}
	b.agent = a
	return b, nil
}

// denyHook is the BeforeTool hook behind --deny.
func denyHook(globs []string) hooks.BeforeToolFunc {
	return func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		for _, g := range globs {
			if glob.Match(g, ev.Name) {
				return hooks.Deny(fmt.Sprintf("tool %q is denied by --deny %s", ev.Name, g)), nil
			}
		}
		return nil, nil
	}
}

// runContext returns the context a run (or resume) executes in: ctx with the
// --timeout deadline, when one is set.
func (b *builtRun) runContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if t := b.setup.cfg.timeout; t > 0 {
		return context.WithTimeoutCause(ctx, t, fmt.Errorf("the run took longer than --timeout %s", t))
	}
	return context.WithCancel(ctx)
}

// execute drives a run's events to the terminal and maps its end to an exit code.
func (b *builtRun) execute(ctx context.Context, events func(func(agent.Event, error) bool)) error {
	env := b.setup.env
	p := &printer{w: env.stdout, json: b.setup.cfg.json}
	var res *agent.Result
	var runErr error
	for ev, err := range events {
		if ev.Kind == agent.EventDone {
			res = ev.Result
		}
		if err != nil {
			runErr = err
			continue
		}
		p.event(ev)
	}
	p.endLine()
	// Say why the context ended (--timeout, a signal) rather than only that it did.
	if cause := context.Cause(ctx); runErr != nil && cause != nil && cause != ctx.Err() && errors.Is(runErr, ctx.Err()) {
		runErr = fmt.Errorf("%w (%v)", runErr, cause)
	}
	for _, f := range b.setup.afterRun {
		f(ctx, res, runErr)
	}
	if runErr != nil {
		if res != nil && p.json {
			p.event(agent.Event{Kind: agent.EventDone, Result: res})
		}
		return withCode(exitError, runErr)
	}
	if res == nil {
		return withCode(exitError, errors.New("run: no result"))
	}
	switch res.Status {
	case agent.StatusPending:
		if b.setup.onHalt != nil {
			if err := b.setup.onHalt(ctx, res); err != nil {
				// An exit code from onHalt (it may have continued the run) stands.
				var ce *exitCodeError
				if errors.As(err, &ce) {
					return err
				}
				return withCode(exitError, err)
			}
		}
		return withCode(exitPending, nil)
	case agent.StatusIncomplete:
		return withCode(exitIncomplete, nil)
	}
	return nil
}

// printer writes run events as text or JSON lines.
type printer struct {
	w       io.Writer
	json    bool
	midText bool              // the last thing printed was a text delta without a newline
	names   map[string]string // call ID -> tool name, to label lines of parallel calls
}

// label names the call a decision or result line is about.
func (p *printer) label(callID string) string {
	if n, ok := p.names[callID]; ok {
		return field(n) + " " + field(callID)
	}
	return field(callID)
}

// endLine ends a line of streamed text left open, so that what follows (an
// error on stderr, the shell prompt) starts on a line of its own.
func (p *printer) endLine() {
	if p.midText {
		fmt.Fprintln(p.w)
		p.midText = false
	}
}

func (p *printer) event(ev agent.Event) {
	if p.json {
		b, _ := model.MarshalJSON(ev)
		fmt.Fprintf(p.w, "%s\n", jsonSafe(b))
		return
	}
	if ev.Kind != agent.EventText {
		p.endLine()
	}
	switch ev.Kind {
	case agent.EventText:
		fmt.Fprint(p.w, safeText(ev.Delta))
		p.midText = !strings.HasSuffix(ev.Delta, "\n")
	case agent.EventToolCall:
		if p.names == nil {
			p.names = map[string]string{}
		}
		p.names[ev.Call.ID] = ev.Call.Name
		fmt.Fprintf(p.w, "-> %s %s  [%s]\n", field(ev.Call.Name), oneLine(string(ev.Call.Arguments), 200), field(ev.Call.ID))
	case agent.EventDecision:
		d := ev.Decision
		if d.Outcome == agent.OutcomePending {
			return // the pending line that follows says it all
		}
		line := fmt.Sprintf("   [%s] %s by %s", p.label(ev.CallID), d.Outcome, field(d.By))
		if d.Reason != "" {
			line += ": " + oneLine(d.Reason, 200)
		}
		fmt.Fprintln(p.w, line)
	case agent.EventPending:
		fmt.Fprintf(p.w, "   [%s] pending %s (%s): %s\n", p.label(ev.CallID), field(ev.Request.ID), field(string(ev.Request.Kind)), oneLine(ev.Request.Prompt, 300))
	case agent.EventToolResult:
		r := ev.Record
		status := "ok"
		if r.IsError {
			status = "error"
		}
		fmt.Fprintf(p.w, "   [%s] <- %s (%d bytes): %s\n", p.label(r.ID), status, len(r.Output), oneLine(r.Output, 200))
	case agent.EventDone:
		res := ev.Result
		switch res.Status {
		case agent.StatusPending:
			fmt.Fprintf(p.w, "run %s is pending: %d request(s) wait for an answer\n", res.RunID, len(res.Pending))
		case agent.StatusIncomplete:
			fmt.Fprintf(p.w, "run %s is incomplete: %s\n", res.RunID, oneLine(res.Reason, 300))
		}
	}
}

func oneLine(s string, n int) string {
	s = safeText(strings.Join(strings.Fields(s), " "))
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut-- // never split a character
		}
		return s[:cut] + "…"
	}
	return s
}

// safeText makes text from a model, a tool or a file safe to print on a
// terminal: control characters other than newline and tab (an escape sequence
// could move the cursor and rewrite the lines above an approval prompt) are
// shown as \xNN instead of being sent.
func safeText(s string) string {
	clean := true
	for _, r := range s {
		if isControl(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isControl(r) {
			fmt.Fprintf(&b, "\\x%02x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isControl(r rune) bool {
	return (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r < 0xa0)
}
