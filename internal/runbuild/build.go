// Package build turns a stored [runs.RunConfig] into a governed agent: the
// [runs.Builder] that the command line (`tollgate run`, `resume`, `serve`,
// `worker`) and any Go program hosting runs use, so that a configuration's
// deny globs, policy, hooks, Claude Code settings, MCP servers, records and
// sandbox are applied the same way everywhere, and never silently ignored.
//
// [Builder.Build] applies, in order:
//
//   - the model ([Options.OpenModel], default [OpenModel]), the system
//     prompt, the turn limit and the agent's name;
//   - Deny: a BeforeTool hook named "deny" that denies every tool whose name
//     matches one of the globs (package internal/glob: * is the only
//     wildcard, case-insensitive);
//   - Sandbox: bash, command hooks and stdio MCP servers run confined by
//     package sandbox (default mode workspace: writes only in the workspace);
//     a machine that cannot confine fails the build unless every mode is off;
//   - HooksFiles: declarative hook files (seed 000) become the agent's tool
//     call listener, ON_START fires when the agent exists and ON_STOP when a
//     part of the run ends; a file that does not load, has no hooks, or pastes
//     model-controlled text into a shell command is refused;
//   - Claude: the hooks of Claude Code settings files (package
//     hooks/claudecode); a skipped PreToolUse or PermissionRequest entry that
//     fails closed is refused;
//   - PolicyFile and Autonomy: an policy.Policy authorizer whose path rules
//     see the workspace as given and with its links resolved
//     ([policy.Policy.WithWorkdir]) and every file an apply_patch call
//     touches; ApprovalTTL; the programs it denies outright in bash's
//     scripts ([policy.DeniedPrograms]) are also refused at exec by bash's
//     sandbox (sandbox.Policy.DenyExec), whatever the script's spelling;
//   - RecordsFile: one JSON line per tool call record (package
//     records);
//   - MCPFiles: the servers' tools, offered beside the builtins; a server
//     that fails is reported and left out;
//   - the builtin tools on Workdir (package toolkit) and [Options.Tools];
//     every file the file tools open is judged again by the run's
//     authorizers (builtin.Options.CheckFile wired to [approval.CheckFile]),
//     so that a link changed after a call was authorized cannot lead it
//     to a file they refuse.
//
// Commands are confined by a helper binary: a program that uses the default
// (itself) calls sandbox.Main first thing in main, or names another in
// [Options.SandboxHelper].
//
// The files that govern the run (policy, hooks, settings, records, MCP
// files, a script model, the state directory, [Options.Protect]) and the
// Claude Code settings files of the workspace are protected: neither the
// file tools nor a sandboxed command may write them.
//
// Errors about one field of the configuration are [*runs.FieldError]s
// naming it (package server reports them at the field's line); others (a
// sandbox that cannot be made, MCP servers that did not start in time) are
// plain errors.
package runbuild

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/glob"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/records"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
	"github.com/tollgate-dev/tollgate/toolkit"
)

// Options is what belongs to the host rather than to the stored
// configuration; nil means defaults.
type Options struct {
	// OpenModel opens the run's model and returns it with the model name to
	// send; nil is [OpenModel] with APIKey, WarnLogger and Getenv.
	OpenModel func(ctx context.Context, ref runs.ModelRef) (model.Model, string, error)
	// APIKey is the model's key for this process when the key is not in the
	// environment (runs.ModelRef.KeyGiven); never stored, logged or passed
	// to a child process.
	APIKey string
	// Getenv reads the variables that hold the model's key (nil: os.Getenv).
	Getenv func(string) string
	// LookupEnv reads the environment of the command that builds the run,
	// which need not be the process's: it resolves ${NAME} in the MCP
	// servers files, as [MCPOptions].LookupEnv, and gives the HOME whose
	// ~/.claude/settings.json claude.project reads. Nil: os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Tools are offered beside the builtins and the MCP servers' tools; one
	// named like a builtin replaces it (package toolkit), two with one name
	// fail the build.
	Tools []tool.Tool
	// StateDir is the host's state directory (its store): no tool may write
	// it. When commands run sandboxed it is created (mode 0700) if missing,
	// so that no command can create it and plant a store in it.
	StateDir string
	// Hide lists files no sandboxed command may read, even inside a tree it
	// may read (the store's decision key; package sandbox's Policy.Hide).
	Hide []string
	// Protect lists further files and directories no tool may write (a
	// server's configuration and tokens file, a log file); relative paths
	// are made absolute against the current directory.
	Protect []string
	// Logger receives log lines: the hooks' log actions, MCP servers' and
	// records' logs (default: discarded).
	Logger *slog.Logger
	// WarnLogger receives what a person must see even when Logger is quiet:
	// a provider's retries with their waits, a hook command that failed,
	// sandbox warnings (default: Logger).
	WarnLogger *slog.Logger
	// SandboxHelper is the binary that confines commands (package sandbox's
	// Options.Helper): default this program, whose main must then call
	// sandbox.Main first (the tollgate command's binary serves as well).
	SandboxHelper string
	// Notice receives the diagnostics of the configuration's files (a
	// skipped hook, an unknown key, a policy warning) and each MCP server's
	// status, one line each, as "hooks: FILE:LINE:COL: ...", "mcp: server
	// fs: ready (...)" (default: logged at warning level to WarnLogger). A
	// line may hold text from those files and servers (a tool's name, an
	// MCP server's reason, newlines included): escape control characters
	// and newlines before writing it to a terminal.
	Notice func(line string)
	// MCPLogins, if set, is the directory of the person's OAuth logins to
	// MCP servers (see [MCPOptions].OAuthDir); a host that runs for many
	// people leaves it empty, since one person's login must not serve
	// another's run.
	MCPLogins string
	// MCPTenantLogins, if set, is the directory of the tenants' OAuth
	// logins to MCP servers (tollgate serve and tollgate worker, which run
	// for many): a run uses its own tenant's (runcore.BuildTenant,
	// mcptoken.TenantDir), never another's. It takes the place of
	// MCPLogins.
	MCPTenantLogins string
	// MCPLoginOffer, if set with MCPLogins, offers the person a login to
	// a server that asks for one (see [MCPOptions].OAuthOffer).
	MCPLoginOffer func(ctx context.Context, server string) (fetch auth.AuthorizationCodeFetcher, redirectURL string, done func(), err error)
	// Elicit is asked the MCP servers' elicitations (see
	// [MCPOptions].Elicit); nil halts the call on them as pending requests.
	Elicit tool.WaitFunc
}

// Builder is a [runs.Builder] that applies every field of a
// [runs.RunConfig] (see the package documentation). It is safe for
// concurrent use.
type Builder struct {
	opts Options
}

// lookupEnv is Options.LookupEnv, or os.LookupEnv.
func (b *Builder) lookupEnv(name string) (string, bool) {
	if b.opts.LookupEnv == nil {
		return os.LookupEnv(name)
	}
	return b.opts.LookupEnv(name)
}

// New returns a builder with opts (nil: defaults).
func New(opts *Options) *Builder {
	b := &Builder{}
	if opts != nil {
		b.opts = *opts
	}
	if b.opts.Logger == nil {
		b.opts.Logger = slog.New(slog.DiscardHandler)
	}
	if b.opts.WarnLogger == nil {
		b.opts.WarnLogger = b.opts.Logger
	}
	if b.opts.Notice == nil {
		warn := b.opts.WarnLogger
		b.opts.Notice = func(line string) { warn.Warn(line) }
	}
	if b.opts.OpenModel == nil {
		key, warn, getenv := b.opts.APIKey, b.opts.WarnLogger, b.opts.Getenv
		b.opts.OpenModel = func(ctx context.Context, ref runs.ModelRef) (model.Model, string, error) {
			return OpenModel(ref, &ModelOptions{APIKey: key, Logger: warn, Getenv: getenv})
		}
	}
	return b
}

// setup is what Build makes before the agent exists; each step adds to it.
type setup struct {
	b   *Builder
	cfg runs.RunConfig
	// opts becomes the agent's options; Hooks is never nil.
	opts *agent.Options
	// toolsets are sets whose tools may change between turns (MCP servers),
	// offered after the toolkit's.
	toolsets []agent.Toolset
	afterNew []func(ctx context.Context, a *agent.Agent) error
	onStop   []func(ctx context.Context, runID string, status store.RunStatus)
	// closers run when the part of the run ends, last added first.
	closers []func() error
	// sandbox is what the sandbox configuration decided (never nil after
	// its step).
	sandbox *sandboxConfig
	// protected lists the files that govern the run: no tool may write them.
	protected []string
	// records writes the run's records file, if it has one.
	records *records.Writer
	// mu guards logins, the OAuth logins made while MCP servers start
	// (they start together).
	mu     sync.Mutex
	logins []runs.MCPLogin
}

func (s *setup) closeAll() error {
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i]())
	}
	return errors.Join(errs...)
}

// addProtected registers files that no tool may write: sandboxed commands
// (resolved when a command is wrapped) and the file tools alike.
func (s *setup) addProtected(files ...string) {
	for _, f := range files {
		if abs, err := filepath.Abs(f); err == nil {
			s.protected = append(s.protected, abs)
		}
	}
	if s.sandbox == nil || len(files) == 0 {
		return
	}
	s.sandbox.protectFns = append(s.sandbox.protectFns, func() []string { return files })
}

func (s *setup) notice(format string, args ...any) { s.b.opts.Notice(fmt.Sprintf(format, args...)) }

// Build implements [runs.Builder]: it returns the agent's options with every
// field of cfg applied, [runs.Built.Applied] listing them all. What it
// opened (MCP servers, the records file, the sandbox) is released by the
// returned Close.
func (b *Builder) Build(ctx context.Context, cfg runs.RunConfig) (*runs.Built, error) {
	if err := runcore.CheckConfig(cfg); err != nil {
		return nil, err
	}
	m, name, err := b.opts.OpenModel(ctx, cfg.Model)
	if err != nil {
		return nil, err
	}
	s := &setup{b: b, cfg: cfg, opts: &agent.Options{ID: cfg.Agent, Model: m, ModelName: name, SystemPrompt: cfg.System,
		MaxTurns: cfg.MaxTurns, Hooks: &hooks.Hooks{}, Logger: b.opts.Logger,
		Validators: &gate.Validators{}}} // shared by the runs of this build
	if len(cfg.Deny) > 0 {
		for _, g := range cfg.Deny {
			if !glob.Valid(g) {
				return nil, &runs.FieldError{Field: runcore.FieldDeny, Err: fmt.Errorf("%q: a glob must be non-empty and free of control characters", g)}
			}
			if msg := glob.ToolNameProblem(g); msg != "" {
				return nil, &runs.FieldError{Field: runcore.FieldDeny, Err: errors.New(msg)}
			}
		}
		s.opts.Hooks.BeforeTool("deny", DenyHook(cfg.Deny))
	}
	for _, step := range []func(context.Context, *setup) error{
		setupSandbox, // first: the others read s.sandbox
		setupHooks,
		setupClaude,
		setupApproval,
		setupMCP,
	} {
		if err := step(ctx, s); err != nil {
			_ = s.closeAll()
			return nil, err
		}
	}
	s.addProtected(b.opts.Protect...)
	tk, err := s.toolkit(b.opts.Tools, nil)
	if err != nil {
		_ = s.closeAll()
		if errors.Is(err, toolkit.ErrDuplicateTool) || errors.Is(err, toolkit.ErrInvalidTool) {
			return nil, fmt.Errorf("build: Options.Tools: %w", err)
		}
		return nil, &runs.FieldError{Field: "workdir", Err: err}
	}
	s.opts.Tools = tk
	if len(s.toolsets) > 0 {
		s.opts.Tools = agent.JoinToolsets(append([]agent.Toolset{tk}, s.toolsets...)...)
	}
	return &runs.Built{
		Options: *s.opts,
		Attach: func(ctx context.Context, a *agent.Agent) error {
			for _, f := range s.afterNew {
				if err := f(ctx, a); err != nil {
					return err
				}
			}
			return nil
		},
		OnStop: func(ctx context.Context, runID string, status store.RunStatus) {
			for _, f := range s.onStop {
				f(ctx, runID, status)
			}
		},
		Close:     s.closeAll,
		Applied:   runcore.GovernanceFields(),
		MCPLogins: s.logins,
	}, nil
}

// DenyHook is the BeforeTool hook of a configuration's Deny: it denies every
// tool whose name matches one of globs (package internal/glob: * is the
// only wildcard, matching is case-insensitive), with the reason
// `the deny list has "GLOB"` (a decision then reads
// `denied by hook:deny: the deny list has "write"`).
func DenyHook(globs []string) hooks.BeforeToolFunc {
	return func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		for _, g := range globs {
			if glob.Match(g, ev.Name) {
				return hooks.Deny(fmt.Sprintf("the deny list has %q", g)), nil
			}
		}
		return nil, nil
	}
}
