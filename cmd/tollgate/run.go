package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/internal/runbuild"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/tool"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/glob"
	"github.com/tollgate-dev/tollgate/internal/jsonenc"
	"github.com/tollgate-dev/tollgate/mcptool"
)

// runConfig is what opens a run's model: the model reference and, for this
// process only, the key given with --api-key (never stored).
type runConfig struct {
	model   string
	baseURL string // --base-url, for openai: and anthropic: models
	apiKey  string // --api-key; never printed, logged or stored
	// apiKeyEnv is --api-key-env: the name of the variable holding the key.
	apiKeyEnv string
}

// runFlags are the flags of `tollgate run`. Those that describe the run
// become its runs.RunConfig (flagsConfig); the rest (output, who answers
// here, the store) belong to this process only.
type runFlags struct {
	runConfig
	workdir, system string
	maxTurns        int
	timeout         time.Duration // --timeout: the whole run's limit; 0 is none
	deny            []string
	json            bool
	logs            logFlags
	promptFile      string

	hooks                    []string
	policy, autonomy         string
	approve, records         string
	approvalTTL              time.Duration
	mcp                      []string
	sandbox, hooksSandbox    string
	sandboxRead, passEnv     []string
	sandboxConnect           []uint16
	claudeFiles, claudeFails []string
	claudeProject            bool
	claudeTimeout            time.Duration
}

// config returns the run's configuration from the flags, every path resolved
// against dir (the current directory): what is stored with the run and what
// `tollgate resume` rebuilds the agent from, in any directory.
func (f *runFlags) config(dir string) (runs.RunConfig, error) {
	if f.model == "" {
		return runs.RunConfig{}, usageErr("run: --model is required (e.g. --model script:PATH)")
	}
	if f.timeout < 0 {
		return runs.RunConfig{}, usageErr("run: --timeout must not be negative, got %s", f.timeout)
	}
	if f.maxTurns < 1 {
		return runs.RunConfig{}, usageErr("run: --max-turns must be at least 1, got %d", f.maxTurns)
	}
	for _, g := range f.deny {
		if !glob.Valid(g) {
			return runs.RunConfig{}, usageErr("run: --deny %q: a glob must be non-empty and free of control characters", g)
		}
		if msg := glob.ToolNameProblem(g); msg != "" {
			return runs.RunConfig{}, usageErr("run: --deny: %s", msg)
		}
	}
	if f.approvalTTL < 0 {
		return runs.RunConfig{}, usageErr("run: --approval-ttl must not be negative, got %s", f.approvalTTL)
	}
	switch f.approve {
	case approvePrompt, approveYes, approveNo, approveWait:
	default:
		return runs.RunConfig{}, usageErr("run: --approve %q: want prompt, wait, yes or no", f.approve)
	}
	ref, err := runcore.ParseModelRef(f.model)
	if err != nil {
		return runs.RunConfig{}, usageErr("run: --model: %v", err)
	}
	if ref.Provider == "script" && (f.baseURL != "" || f.apiKey != "" || f.apiKeyEnv != "") {
		return runs.RunConfig{}, usageErr("run: --base-url, --api-key and --api-key-env are for openai: and anthropic: models, not script:")
	}
	cfg := runs.RunConfig{Answer: f.approve, AgentConfig: runs.AgentConfig{
		Model:   runs.ModelRef{Provider: ref.Provider, Name: ref.Name, BaseURL: f.baseURL, APIKeyEnv: f.apiKeyEnv, KeyGiven: f.apiKey != ""},
		Workdir: f.workdir, System: f.system, MaxTurns: f.maxTurns, Timeout: runs.Duration(f.timeout),
		Deny: f.deny, HooksFiles: f.hooks, PolicyFile: f.policy, Autonomy: f.autonomy,
		ApprovalTTL: runs.Duration(f.approvalTTL), MCPFiles: f.mcp, RecordsFile: f.records,
		Sandbox: &runs.SandboxConfig{Bash: f.sandbox, Hooks: f.hooksSandbox, Read: f.sandboxRead, Connect: f.sandboxConnect, PassEnv: f.passEnv},
	}}
	if len(f.claudeFiles) > 0 || f.claudeProject || len(f.claudeFails) > 0 || f.claudeTimeout != 0 {
		cfg.Claude = &runs.ClaudeConfig{Files: f.claudeFiles, Project: f.claudeProject, FailModes: f.claudeFails, Timeout: runs.Duration(f.claudeTimeout)}
	}
	cfg, err = cfg.Resolve(dir)
	if err != nil {
		return cfg, usageErr("run: %v", err)
	}
	return cfg, nil
}

// runExtension adds flags to `tollgate run` and, for what belongs to the
// command line only (who answers at the terminal, OTLP export), takes part
// in building a run's agent after package internal/runbuild made it.
type runExtension struct {
	flags func(fs *pflag.FlagSet, f *runFlags)
	setup func(ctx context.Context, cb *cliBuilder, cfg runs.RunConfig, built *runs.Built) error
}

// runExtensions lists the extensions of `tollgate run`, one line each.
func runExtensions() []runExtension {
	return []runExtension{
		sandboxRunExtension(),
		hooksRunExtension(),
		claudeRunExtension(),
		approvalRunExtension(),
		mcpRunExtension(),
		telemetryRunExtension(),
	}
}

// cliBuilder is the command line's runs.Builder: package internal/runbuild, which
// applies every field of a run's stored configuration in whatever directory
// the command runs, with this process's key, logs and terminal, and its
// errors named by run's flags.
type cliBuilder struct {
	env      *cliEnv
	logs     *cliLogs
	apiKey   string // --api-key of this process, never stored
	stateDir string // protected from every tool
	// keyFile is the store's decision key when not decision.key in
	// stateDir; both are hidden from every sandboxed command.
	keyFile string
	exts    []runExtension
	// protect lists further files no tool may write (the server's
	// configuration and tokens file).
	protect []string
	// mcpLogins says that the run is the person's at this terminal, whose
	// OAuth logins to MCP servers (tollgate mcp login) it may use; a server
	// or worker running for many people leaves it false.
	mcpLogins bool
	// tenantLogins says that the run is one of a server's or worker's,
	// which uses the OAuth logins of its tenant (made on the server's
	// page or API) in the state directory.
	tenantLogins bool
	// started is set once the run's tools are open: a login is offered
	// at the terminal only before (loginOffer).
	started atomic.Bool
	// elicit, once set (a terminal to ask), answers the MCP servers'
	// elicitations; unset, the call halts on them.
	elicit atomic.Pointer[tool.WaitFunc]
}

// loginsDir is the directory of the person's MCP logins for this run, or
// "" when it may not use them.
func (cb *cliBuilder) loginsDir() string {
	if !cb.mcpLogins || cb.stateDir == "" {
		return ""
	}
	return mcpLoginsDir(cb.stateDir)
}

// tenantLoginsDir is the directory of the tenants' MCP logins for a
// server's or worker's run, or "" for a person's.
func (cb *cliBuilder) tenantLoginsDir() string {
	if !cb.tenantLogins || cb.stateDir == "" {
		return ""
	}
	return mcpLoginsDir(cb.stateDir)
}

// askElicit hands an MCP server's elicitation to the person at the terminal
// if there is one; otherwise the call halts on it as a pending request
// (mcptool.ErrAskLater), answered with 'tollgate approvals answer'.
func (cb *cliBuilder) askElicit(ctx context.Context, req tool.Request) (tool.Answer, error) {
	if w := cb.elicit.Load(); w != nil {
		return (*w)(ctx, req)
	}
	return tool.Answer{}, mcptool.ErrAskLater
}

// logger returns the builder's logs; without log options nothing is logged.
func (cb *cliBuilder) logger() *cliLogs {
	if cb.logs != nil {
		return cb.logs
	}
	discard := slog.New(slog.DiscardHandler)
	return &cliLogs{Info: discard, Warn: discard, close: func() error { return nil }}
}

// Build implements runs.Builder, its errors named by run's flags.
func (cb *cliBuilder) Build(ctx context.Context, cfg runs.RunConfig) (*runs.Built, error) {
	built, err := cb.build(ctx, cfg, true)
	if err != nil {
		return nil, flagError(err)
	}
	return built, nil
}

// hidden returns the files no sandboxed command may read: the store's
// decision key (see "Sealed decisions" in docs/sandbox.md), its SQLite
// files and the MCP OAuth logins (the person's and, under it, the
// tenants'), whether or not they exist yet.
func (cb *cliBuilder) hidden() []string {
	return stateHidden(cb.stateDir, cb.keyFile)
}

// stateHidden is what no sandboxed command may read of the state directory
// stateDir ("" for none) and the decision key file keyFile ("" for the
// default): the key, the SQLite store with its journal files and the MCP
// logins directory.
func stateHidden(stateDir, keyFile string) []string {
	var out []string
	if stateDir != "" {
		out = append(out, filepath.Join(stateDir, decisionKeyFile), mcpLoginsDir(stateDir))
		db := filepath.Join(stateDir, storeFile)
		for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
			out = append(out, db+suffix)
		}
	}
	if keyFile != "" {
		out = append(out, keyFile)
	}
	return out
}

// build is Build with the errors of package internal/runbuild as they are
// (runs.FieldError naming the configuration's fields, which Build maps to
// run's flags); flags also refuses this process's --api-key for a script
// model, as run's flags do.
func (cb *cliBuilder) build(ctx context.Context, cfg runs.RunConfig, flags bool) (*runs.Built, error) {
	logs := cb.logger()
	protect := cb.protect
	if logs.path != "" {
		protect = append(slices.Clip(protect), logs.path) // no tool forges or erases the log
	}
	if flags {
		if err := scriptKeyError(cfg.Model, cb.apiKey); err != nil {
			return nil, err
		}
	}
	b := runbuild.New(&runbuild.Options{
		// The model is opened by runbuild.OpenModel with this process's key. A
		// provider's retries, with how long each waits, are shown even
		// without --verbose (WarnLogger): a wait of a minute must not look
		// like a hang.
		APIKey: cb.apiKey, Getenv: cb.env.env, LookupEnv: cb.env.lookupEnv, StateDir: cb.stateDir, Protect: protect, Hide: cb.hidden(), MCPLogins: cb.loginsDir(), MCPLoginOffer: cb.loginOffer(cfg), MCPTenantLogins: cb.tenantLoginsDir(),
		Logger: logs.Info, WarnLogger: logs.Warn,
		Notice: func(line string) { fmt.Fprintln(cb.env.stderr, "tollgate: "+oneLine(line, 2000)) },
		Elicit: cb.askElicit,
	})
	built, err := b.Build(ctx, cfg)
	cb.started.Store(true)
	if err != nil {
		return nil, err
	}
	for _, e := range cb.exts {
		if e.setup == nil {
			continue
		}
		if err := e.setup(ctx, cb, cfg, built); err != nil {
			if built.Close != nil {
				_ = built.Close()
			}
			return nil, err
		}
	}
	return built, nil
}

// configFlags maps the fields of runs.RunConfig to the flags of `tollgate
// run` that set them.
var configFlags = map[string]string{
	runcore.FieldDeny: "deny", runcore.FieldPolicyFile: "policy", runcore.FieldAutonomy: "autonomy",
	runcore.FieldApprovalTTL: "approval-ttl", runcore.FieldHooksFiles: "hooks", runcore.FieldMCPFiles: "mcp",
	runcore.FieldRecordsFile: "records", runcore.FieldClaude: "claude-settings", "claude.files": "claude-settings",
	"claude.failModes": "claude-fail", "claude.timeout": "claude-timeout", "sandbox.bash": "sandbox", "sandbox.hooks": "hooks-sandbox",
	"sandbox.read": "sandbox-read", "model": "model", "model.baseUrl": "base-url", "model.apiKeyEnv": "api-key-env",
	"workdir": "workdir",
}

// flagError names a build error by the flag of the field it is about (a
// usage error, exit 2); an error that already has an exit code keeps it;
// any other is exit 1.
func flagError(err error) error {
	if _, ok := errors.AsType[*exitCodeError](err); ok {
		return err
	}
	if kerr := keyFlagError(err); kerr != nil {
		return kerr
	}
	if fe, ok := errors.AsType[*runs.FieldError](err); ok {
		if flag, ok := configFlags[fe.Field]; ok {
			return usageErr("run: --%s: %w", flag, fe.Err)
		}
		return usageErr("run: %w", err)
	}
	return withCode(exitError, fmt.Errorf("run: %w", err))
}

// checkWorkdir refuses a workspace that is not an existing directory, in
// the flag's terms, before anything is built or stored.
func checkWorkdir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return usageErr("run: --workdir %s: no such directory", field(dir))
	case err != nil:
		return usageErr("run: --workdir %s: %v", field(dir), err)
	case !fi.IsDir():
		return usageErr("run: --workdir %s: not a directory", field(dir))
	}
	return nil
}

// runCommand is `tollgate run` with its parsed flags.
type runCommand struct {
	cmd   *cobra.Command
	flags runFlags
	exts  []runExtension
}

func newRunCommand(env *cliEnv) *runCommand {
	rc := &runCommand{exts: runExtensions()}
	var state stateFlags
	cmd := &cobra.Command{
		Use:   "run [flags] PROMPT|-",
		Short: "Run an agent on a prompt; every tool call is governed",
		Long: `Run an agent on PROMPT (- reads it from stdin; or give --prompt-file). Each
tool call is printed as it happens with its decision and result, then the
model's answer as it streams in. The run is stored in the state directory
(see 'tollgate runs'), with its configuration resolved: every path is made
absolute against the current directory, so that 'tollgate resume' rebuilds the
same agent from any directory.

` + modelKinds + `

Exit status: 0 done, 1 error, 2 usage, 3 pending, 4 incomplete.`,
		Example: `  tollgate run --model script:examples/demo/script.yaml --workdir /tmp/ws --deny 'write' "tidy the notes"
  OPENAI_API_KEY=... tollgate run --model openai:gpt-4.1-mini "list the notes"
  tollgate run --model openai:llama3.1 --base-url http://127.0.0.1:11434/v1 "list the notes"
  ANTHROPIC_API_KEY=... tollgate run --model anthropic:claude-sonnet-4-5 "list the notes"
  git diff | tollgate run --model openai:gpt-4.1-mini -`,
		Args: argsUsage(cobra.MaximumNArgs(1)),
	}
	f := cmd.Flags()
	fl := &rc.flags
	f.StringVar(&fl.model, "model", "", "model to use: script:PATH, openai:MODEL or anthropic:MODEL (required)")
	f.StringVar(&fl.baseURL, "base-url", "", "API root of an openai: or anthropic: model (default: the vendor's; e.g. http://127.0.0.1:11434/v1 for Ollama)")
	f.StringVar(&fl.apiKey, "api-key", "", "API key, visible to every process of the machine on a command line: prefer the variable (default: --api-key-env, else the hosted service's OPENAI_API_KEY, OPENROUTER_API_KEY or ANTHROPIC_API_KEY)")
	f.StringVar(&fl.apiKeyEnv, "api-key-env", "", "name of the environment variable holding the API key (for servers other than the hosted ones)")
	f.StringVar(&fl.workdir, "workdir", ".", "workspace root for the builtin tools; paths outside it are refused")
	f.StringVar(&fl.system, "system", "", "system prompt")
	f.StringVar(&fl.promptFile, "prompt-file", "", "read the prompt from this file instead of the argument")
	f.IntVar(&fl.maxTurns, "max-turns", 10, "model turns before the run ends incomplete")
	f.DurationVar(&fl.timeout, "timeout", 0, "stop the whole run after this long, e.g. 90s or 10m (0: no limit); the run then fails with exit 1")
	f.StringArrayVar(&fl.deny, "deny", nil, "deny tools whose name matches this glob (* is the only wildcard, case-insensitive); repeatable")
	f.BoolVar(&fl.json, "json", false, "print one JSON event per line instead of text")
	fl.logs.add(f)
	state.add(f, env)
	for _, e := range rc.exts {
		if e.flags != nil {
			e.flags(f, fl)
		}
	}
	rc.cmd = cmd
	cmd.RunE = func(c *cobra.Command, args []string) error {
		prompt, err := readPrompt(env, args, fl.promptFile)
		if err != nil {
			return err
		}
		dir, err := env.wd()
		if err != nil {
			return withCode(exitError, err)
		}
		cfg, err := fl.config(dir)
		if err != nil {
			return err
		}
		if err := checkWorkdir(cfg.Workdir); err != nil {
			return err
		}
		stateDir, err := state.resolve(cfg.Workdir)
		if err != nil {
			return err
		}
		storeURL, err := state.storeURL()
		if err != nil {
			return err
		}
		logs, err := fl.logs.open(env, cfg.Workdir)
		if err != nil {
			return err
		}
		defer logs.Close()
		keyFile, err := state.keyFile(stateDir, cfg.Workdir)
		if err != nil {
			return err
		}
		h, _, closeStore, err := openHost(c.Context(), env, storeURL, stateDir, keyFile, &cliBuilder{env: env, logs: logs, apiKey: fl.apiKey, stateDir: stateDir, keyFile: keyFile, exts: rc.exts, mcpLogins: true}, true)
		if err != nil {
			return err
		}
		defer closeStore()
		ctx := c.Context()
		p := &printer{w: env.stdout, json: fl.json, hold: env.termHold()}
		res, runErr := h.Start(ctx, runs.StartRequest{Config: cfg, Prompt: prompt, Owner: tool.Principal{Kind: tool.PrincipalPerson, Name: currentUser()}, Drive: runs.Drive{OnEvent: p.event}})
		return finish(ctx, &runDriver{env: env, host: h, p: p, flags: state.repeatFlags(), where: storeWhere(storeURL, stateDir), json: fl.json, wait: cfg.Answer == approveWait}, res, runErr)
	}
	return rc
}

func newRunCmd(env *cliEnv) *cobra.Command { return newRunCommand(env).cmd }

// printer writes run events as text or JSON lines.
type printer struct {
	w       io.Writer
	hold    *termHold // event lines wait while a terminal prompt asks
	json    bool
	midText bool              // the last thing printed was a text delta without a newline
	names   map[string]string // call ID -> tool name, to label lines of parallel calls
	inText  bool              // the last event printed was text: a block of the model's text is open
	nextLn  bool              // the next text starts a line of that block
	firstLn bool              // and that line is the block's first
	held    string            // the first line's beginning, held back while it could start as tollgate's own lines
	asked   map[string]bool   // call IDs of calls that asked a question
}

// label names the call a decision or result line is about.
func (p *printer) label(callID string) string {
	if n, ok := p.names[callID]; ok {
		return field(n) + " " + field(callID)
	}
	return field(callID)
}

// continued marks a continuation line of text from outside the command
// (the model's, a question's): none of tollgate's own lines starts so.
const continued = "  | "

// ownStarts are how tollgate's own lines on a terminal start, besides a
// blank or "-" ("   [bash call_9] allowed", "-> bash"): its messages
// ("tollgate: waiting for answers"), the end of a run ("run run_1 is
// pending", "stored run run_1 in …", "then: tollgate resume …"). A first
// line of the model's text that starts so is marked; the comparison ignores
// case.
var ownStarts = []string{"tollgate", "run ", "stored run", "then:"}

// startsOwn reports whether s starts as one of tollgate's own lines: with
// a blank (any Unicode space), "-", an invisible format character (a zero
// width space before "tollgate: ..."), or one of ownStarts, its spaces
// read as any Unicode space ("run\u00a0run_1 finished").
func startsOwn(s string) bool {
	if r, _ := utf8.DecodeRuneInString(s); s != "" && r != '\n' && (r == '-' || unicode.IsSpace(r) || unicode.In(r, unicode.Zs, unicode.Cf)) {
		return true
	}
	s = ownForm(s)
	for _, o := range ownStarts {
		if len(s) >= len(o) && strings.EqualFold(s[:len(o)], o) {
			return true
		}
	}
	return false
}

// ownForm is s as compared with ownStarts: every Unicode space a blank,
// format characters (zero width, joiners, marks) left out.
func ownForm(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case unicode.Is(unicode.Zs, r):
			return ' '
		case unicode.Is(unicode.Cf, r):
			return -1
		}
		return r
	}, s)
}

// mayStartOwn reports whether more text could make s, a line's beginning
// without its newline, start as one of tollgate's own lines.
func mayStartOwn(s string) bool {
	if s == "" {
		return true
	}
	s = ownForm(s)
	for _, o := range ownStarts {
		if len(s) < len(o) && strings.EqualFold(s, o[:len(s)]) {
			return true
		}
	}
	return false
}

// text prints a delta of the model's text. Every line of a block of text
// after its first starts with [continued], and so does a first line that
// starts as one of tollgate's own lines ([startsOwn]), so that no text can
// pass for one ("   [bash call_9] allowed by person:root", "-> bash",
// "tollgate: ..."). The first line's beginning is held back while it
// could still become one (a delta "toll" before "gate:"): until it cannot,
// its newline comes, or the block ends ([printer.endLine]).
func (p *printer) text(delta string) {
	if !p.inText {
		p.inText, p.nextLn, p.firstLn = true, true, true
	}
	if p.firstLn && p.nextLn {
		p.held += delta
		if !strings.Contains(p.held, "\n") && !startsOwn(p.held) && mayStartOwn(p.held) {
			return
		}
		delta, p.held = p.held, ""
	}
	p.emit(delta)
}

// emit prints text of the current block, marking its lines.
func (p *printer) emit(delta string) {
	for delta != "" {
		if p.nextLn {
			if !p.firstLn || startsOwn(delta) {
				fmt.Fprint(p.w, continued)
			}
			p.nextLn, p.firstLn = false, false
		}
		i := strings.IndexByte(delta, '\n')
		if i < 0 {
			fmt.Fprint(p.w, safeText(delta))
			break
		}
		fmt.Fprint(p.w, safeText(delta[:i+1]))
		delta = delta[i+1:]
		p.nextLn = true
	}
	p.midText = !p.nextLn
}

// markLines returns text from outside the command for a line of its own:
// terminal-safe, each line after the first starting with [continued].
func markLines(s string) string {
	return strings.ReplaceAll(safeText(s), "\n", "\n"+continued)
}

// endLine ends a line of streamed text left open, so that what follows (an
// error on stderr, the shell prompt) starts on a line of its own.
func (p *printer) endLine() {
	if p.held != "" {
		// The block ended while its first line was held back.
		h := p.held
		p.held = ""
		p.emit(h)
	}
	if p.midText {
		fmt.Fprintln(p.w)
		p.midText = false
	}
}

func (p *printer) event(ev agent.Event) {
	if p.hold != nil {
		p.hold.do(func() { p.print(ev) })
		return
	}
	p.print(ev)
}

// eventHalted is the kind of the last --json event of a run that halted on
// pending requests: the agent's done event, with the pending result.
const eventHalted agent.EventKind = "halted"

func (p *printer) print(ev agent.Event) {
	if p.json {
		if ev.Kind == agent.EventDone && ev.Result != nil && ev.Result.Status == agent.StatusPending {
			// The run waits for answers: its last event says so, rather
			// than that it is done (exit 3 says it too).
			ev.Kind = eventHalted
		}
		b, _ := jsonenc.Marshal(ev)
		fmt.Fprintf(p.w, "%s\n", jsonSafe(b))
		return
	}
	if ev.Kind != agent.EventText {
		p.endLine()
		p.inText = false
	}
	switch ev.Kind {
	case agent.EventText:
		p.text(ev.Delta)
	case agent.EventToolCall:
		if p.names == nil {
			p.names = map[string]string{}
		}
		p.names[ev.Call.ID] = ev.Call.Name
		fmt.Fprintf(p.w, "-> %s %s  [%s]\n", field(ev.Call.Name), oneLine(string(ev.Call.Arguments), 200), field(ev.Call.ID))
	case agent.EventDecision:
		d := ev.Decision
		if d.Outcome == gate.OutcomePending {
			return // the pending line that follows says it all
		}
		if d.Outcome == gate.OutcomeAllowed && d.By == approval.Default {
			return // nothing objected: the call and its result say it all
		}
		outcome, by := string(d.Outcome), field(d.By.String())
		if d.Outcome == gate.OutcomeApproved && p.asked[ev.CallID] {
			if d.By.Kind == tool.PrincipalPerson {
				outcome = "answered" // a question: the person answered it
			} else {
				by += ", without an answer" // --approve yes lets a question go on unanswered
			}
		}
		line := fmt.Sprintf("   [%s] %s by %s", p.label(ev.CallID), outcome, by)
		if d.Reason != "" {
			line += ": " + oneLine(d.Reason, 200)
		}
		fmt.Fprintln(p.w, line)
	case agent.EventPending:
		if ev.Request.Kind == tool.KindQuestion {
			if p.asked == nil {
				p.asked = map[string]bool{}
			}
			p.asked[ev.CallID] = true
		}
		fmt.Fprintf(p.w, "   [%s] pending %s (%s): %s\n", p.label(ev.CallID), field(ev.Request.ID), field(string(ev.Request.Kind)), oneLine(ev.Request.Prompt, 300))
	case agent.EventProgress:
		pr := ev.Progress
		line := fmt.Sprintf("   [%s] progress %s", p.label(ev.CallID), strconv.FormatFloat(pr.Progress, 'g', 6, 64))
		if pr.Total > 0 {
			line += "/" + strconv.FormatFloat(pr.Total, 'g', 6, 64)
		}
		if pr.Message != "" {
			line += ": " + oneLine(pr.Message, 200)
		}
		fmt.Fprintln(p.w, line)
	case agent.EventNotice:
		n := ev.Notice
		fmt.Fprintf(p.w, "   [%s] %s %s: %s\n", p.label(ev.CallID), field(n.Kind), field(n.Source), oneLine(n.Message, 300))
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
// shown as \xNN, and the invisible and bidirectional controls as
// \u{NNNN} (escapeTerminal), instead of being sent.
func safeText(s string) string {
	return string(escapeTerminal([]byte(s), false))
}

// addCloser makes built's Close run f first, then what it ran before.
func addCloser(built *runs.Built, f func() error) {
	prev := built.Close
	built.Close = func() error {
		err := f()
		if prev != nil {
			err = errors.Join(err, prev())
		}
		return err
	}
}
