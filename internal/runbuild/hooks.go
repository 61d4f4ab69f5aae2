package runbuild

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/configfile"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/hooks/claudecode"
	"github.com/tollgate-dev/tollgate/hooks/declarative"
	"github.com/tollgate-dev/tollgate/internal/claudenames"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/sandbox"
	"github.com/tollgate-dev/tollgate/store"
)

// setupHooks loads HooksFiles: their declarative hooks (seed 000) become the
// agent's tool call listener once it exists, and ON_STOP fires when a part
// of the run ends, with the run's ID and status. Command hooks run in the
// run's recorded workspace, so that a resume from another directory runs
// them where the run began.
func setupHooks(ctx context.Context, s *setup) error {
	if len(s.cfg.HooksFiles) == 0 {
		return nil
	}
	reg, err := loadHooks(s)
	if err != nil {
		return &runs.FieldError{Field: runcore.FieldHooksFiles, Err: err}
	}
	// The agent's ID as agent.New names it; the built options may make
	// several agents (a host reuses them across runs), all of this ID.
	agentID := cmp.Or(s.opts.ID, "agent")
	s.afterNew = append(s.afterNew, func(ctx context.Context, a *agent.Agent) error {
		reg.ApplyTo(ctx, a)
		return nil
	})
	s.onStop = append(s.onStop, func(ctx context.Context, runID string, status store.RunStatus) {
		hctx := map[string]any{"agent": agentID, "status": string(status), "runId": runID}
		// ON_STOP runs even when the run was canceled, so that its hooks
		// can record that; each gets its own timeout.
		reg.FireEvent(context.WithoutCancel(ctx), declarative.OnStop, hctx)
	})
	return nil
}

// loadHooks loads the configuration's HooksFiles as a run runs them:
// their commands in the hooks sandbox the configuration decided (its
// working directory Workdir), with the environment scrubbed to the
// allowlist and the configuration's passed variables; the files
// themselves protected from every tool.
func loadHooks(s *setup) (*declarative.Registry, error) {
	files := s.cfg.HooksFiles
	// The hooks' log actions are log lines; a command that failed is a
	// warning.
	dopts := &declarative.Options{Logger: s.b.opts.WarnLogger, Dir: s.cfg.Workdir}
	dopts.Sandbox, dopts.PassEnv, dopts.SandboxNote = s.sandbox.hookSandbox(), s.sandbox.passEnv, s.sandbox.hookSandboxNote()
	s.addProtected(files...)
	return LoadHookFiles(files, s.b.opts.Notice, dopts)
}

// HookFilesOptions configures [HookFiles] and [ClaudeHooks].
type HookFilesOptions struct {
	// Files are declarative hooks files for HookFiles, Claude Code
	// settings files for ClaudeHooks (required).
	Files []string
	// Workdir is the workspace (absolute; required): the commands'
	// working directory, which in workspace mode is the tree they may
	// write.
	Workdir string
	// Sandbox configures the commands' sandbox as a run's configuration
	// does: its Hooks mode (default: its Bash mode, default workspace),
	// further readable paths, ports and passed variables; nil means the
	// defaults.
	Sandbox *runs.SandboxConfig
	// Protect lists further files and directories no command may write
	// (the host's policy, records, pins); relative paths are made absolute
	// against the current directory.
	Protect []string
	// Hide lists files no command may read (see [Options].Hide).
	Hide []string
	// Notice receives each file's diagnostics, one line each; nil logs
	// them at warning level to Logger.
	Notice func(line string)
	// SandboxHelper is the binary that confines commands (see
	// [Options].SandboxHelper); empty means this program.
	SandboxHelper string
	// Logger receives the hooks' log actions and warnings; nil discards.
	Logger *slog.Logger
}

// HookFiles returns the registry of declarative hooks files as
// [Builder.Build] runs them for a run's HooksFiles: each command in the
// hooks sandbox (workspace mode: it writes only in Workdir, reads what
// a run's hook reads, never the protected or hidden files), with the
// environment scrubbed to the allowlist and Sandbox.PassEnv, so that no
// secret of this process reaches it. A machine that cannot confine
// commands is an error unless opts.Sandbox turns the hooks' sandbox off,
// as for a run. Errors about a field are [*runs.FieldError]s naming it.
// Call close when the hooks no longer fire: it lets go of the
// workspace's sealed .claude directory, as a run's end does.
func HookFiles(ctx context.Context, opts *HookFilesOptions) (reg *declarative.Registry, close func() error, err error) {
	if opts == nil || len(opts.Files) == 0 || opts.Workdir == "" {
		return nil, nil, &runs.FieldError{Field: runcore.FieldHooksFiles, Err: errors.New("no hooks file or workspace given")}
	}
	sc := runs.SandboxConfig{}
	if opts.Sandbox != nil {
		sc = *opts.Sandbox
	}
	// Only the hooks' commands run here: the sandbox is needed when their
	// mode is not off, whatever bash's would be.
	sc.Hooks = cmp.Or(sc.Hooks, sc.Bash, string(sandbox.Workspace))
	sc.Bash = sc.Hooks
	b := New(&Options{Protect: opts.Protect, Hide: opts.Hide, SandboxHelper: opts.SandboxHelper, Logger: opts.Logger, Notice: opts.Notice})
	s := &setup{b: b, cfg: runs.RunConfig{AgentConfig: runs.AgentConfig{Workdir: opts.Workdir, Sandbox: &sc, HooksFiles: opts.Files}},
		opts: &agent.Options{Hooks: &hooks.Hooks{}}}
	if err := setupSandbox(ctx, s); err != nil {
		_ = s.closeAll()
		return nil, nil, err
	}
	s.addProtected(opts.Protect...)
	if reg, err = loadHooks(s); err != nil {
		_ = s.closeAll()
		return nil, nil, &runs.FieldError{Field: runcore.FieldHooksFiles, Err: err}
	}
	return reg, s.closeAll, nil
}

// LoadHookFiles loads each declarative hooks file once (a file named twice
// is loaded once, so that each hook fires once per event), passes every
// diagnostic to notice as "hooks: DIAGNOSTIC", and joins the files into one
// registry with opts. A file that does not load, has no hooks, or has a
// command that pastes model-controlled text into the shell is an error
// naming it: running without hooks that were asked for (an audit, say)
// would be worse than not running.
func LoadHookFiles(files []string, notice func(string), opts *declarative.Options) (*declarative.Registry, error) {
	seen := map[string]bool{}
	var regs []*declarative.Registry
	for _, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil {
			return nil, err
		}
		if seen[abs] {
			notice(fmt.Sprintf("hooks: %s is given more than once; it is loaded once", f))
			continue
		}
		seen[abs] = true
		reg, err := declarative.Load(f, nil) // diagnostics go to notice below, not to a log
		if err != nil {
			return nil, err
		}
		unsafe, skipped := 0, 0
		for _, d := range reg.Diagnostics() {
			notice(fmt.Sprint("hooks: ", d))
			if d.Severity == configfile.SeverityError {
				return nil, fmt.Errorf("%s did not load (see its diagnostics)", f)
			}
			if d.Unsafe {
				unsafe++
			}
			if d.Skipped {
				skipped++
			}
		}
		if unsafe > 0 {
			return nil, fmt.Errorf("%s: %d command(s) paste model-controlled text into the shell (see its diagnostics); pass it as $TOLLGATE_* variables, stdin or argv", f, unsafe)
		}
		if len(reg.Hooks()) == 0 {
			if skipped > 0 {
				return nil, fmt.Errorf("%s: no hook loaded: every entry (%d) was skipped (see its diagnostics)", f, skipped)
			}
			return nil, fmt.Errorf("%s has no hooks (want a top-level hooks list)", f)
		}
		regs = append(regs, reg)
	}
	return declarative.Join(opts, regs...), nil
}

// setupClaude runs the hooks of the Claude Code settings files of Claude
// (and, with Project, the workspace's .claude/settings.json and
// .claude/settings.local.json and the user's ~/.claude/settings.json).
func setupClaude(ctx context.Context, s *setup) error {
	cc := s.cfg.Claude
	if cc == nil {
		return nil
	}
	modes, err := ParseFailModes(cc.FailModes)
	if err != nil {
		return &runs.FieldError{Field: "claude.failModes", Err: err}
	}
	if len(cc.Files) == 0 && !cc.Project {
		// Fail modes or a timeout for hooks that are not there: a setting
		// that does nothing is a mistake to say, not to ignore.
		if len(cc.FailModes) > 0 {
			return &runs.FieldError{Field: "claude.failModes", Err: errors.New("it applies to Claude Code hooks, and no Claude Code settings file is given")}
		}
		if cc.Timeout != 0 {
			return &runs.FieldError{Field: "claude.timeout", Err: errors.New("it applies to Claude Code hooks, and no Claude Code settings file is given")}
		}
		return nil
	}
	all := append([]string{}, cc.Files...)
	if cc.Project {
		home, _ := os.UserHomeDir()
		if h, ok := s.b.lookupEnv("HOME"); ok && h != "" {
			home = h // the command's own environment (Options.LookupEnv)
		}
		found := claudecode.SettingsFiles(s.cfg.Workdir, home)
		if len(found) == 0 {
			s.notice("claude settings: claude.project found no settings file under %s/.claude or ~/.claude", s.cfg.Workdir)
		}
		all = append(all, found...)
	}
	settings, err := claudecode.LoadFiles(all...)
	if err != nil {
		return &runs.FieldError{Field: "claude.files", Err: err}
	}
	bad := 0
	for _, d := range settings.Diagnostics {
		s.notice("claude settings: %s", d)
		if d.Severity == configfile.SeverityError {
			bad++
		}
	}
	if bad > 0 {
		// Running without guards that were asked for would be worse than not running.
		return &runs.FieldError{Field: "claude.files", Err: fmt.Errorf("%d settings file(s) did not load (see their diagnostics)", bad)}
	}
	// A gate that did not load must not let calls through: refuse settings
	// whose skipped entries belong to an event that fails closed. (Before
	// the check for no hooks at all, which would hide why.)
	skipped := 0
	for _, d := range settings.Diagnostics {
		if d.Skipped && (d.Event == claudenames.PreToolUse || d.Event == claudenames.PermissionRequest) && modes[d.Event] != claudenames.FailOpen {
			return &runs.FieldError{Field: "claude.files", Err: fmt.Errorf("a %s entry was skipped (%s); fix it, or make %s fail open to run without it", d.Event, d, d.Event)}
		}
		if d.Skipped {
			skipped++
		}
	}
	if len(settings.Permissions) > 0 {
		// The permissions' allow, ask and deny lists are rules too: a deny
		// list that is not enforced would be worse than refusing to run.
		pol, err := ClaudePermissions(settings.Permissions, s.b.opts.Notice)
		if err != nil {
			return &runs.FieldError{Field: "claude.files", Err: err}
		}
		if pol, err = WorkspacePolicy(pol, s.cfg.Workdir); err != nil {
			return &runs.FieldError{Field: "claude.files", Err: err}
		}
		s.opts.Authorizers = append(s.opts.Authorizers, pol)
		s.addProtected(all...)
		if len(settings.Handlers()) == 0 {
			return nil
		}
	}
	if len(cc.Files) > 0 && len(settings.Handlers()) == 0 {
		if skipped > 0 {
			return &runs.FieldError{Field: "claude.files", Err: fmt.Errorf("no hook of %s loaded: every entry (%d) was skipped (see their diagnostics)", strings.Join(cc.Files, ", "), skipped)}
		}
		return &runs.FieldError{Field: "claude.files", Err: fmt.Errorf("no hooks in %s", strings.Join(cc.Files, ", "))}
	}
	copts := &claudecode.Options{ProjectDir: s.cfg.Workdir, FailModes: modes, DefaultTimeout: time.Duration(cc.Timeout), Logger: s.b.opts.WarnLogger}
	copts.Sandbox, copts.PassEnv, copts.SandboxNote = s.sandbox.hookSandbox(), s.sandbox.passEnv, s.sandbox.hookSandboxNote()
	s.addProtected(all...)
	c, err := claudecode.New(settings, copts)
	if err != nil {
		return &runs.FieldError{Field: runcore.FieldClaude, Err: err}
	}
	c.Register(s.opts.Hooks)
	return nil
}

// ClaudePermissions returns the policy of Claude Code settings' permission
// rules (policy.PermissionRule): each rule's ID is "LIST:RULE"
// ("deny:Bash(rm:*)"), combined with the other rules and policies as
// deny > ask > allow. An ask or deny rule tollgate cannot read is an error
// naming its FILE:LINE:COL; an allow rule it cannot read (a tool tollgate
// does not have) is left out, which only makes the policy stricter, and
// passed to notice.
func ClaudePermissions(perms []claudecode.Permission, notice func(string)) (*policy.Policy, error) {
	spec := policy.PolicySpec{Name: "claude-settings"}
	seen := map[string]bool{}
	var errs []error
	for _, p := range perms {
		id := p.List + ":" + p.Rule
		if seen[id] {
			continue
		}
		seen[id] = true
		r, err := policy.PermissionRule(id, p.Rule, approval.Effect(p.List))
		if err != nil && p.List == "allow" {
			notice(fmt.Sprintf("claude settings: %s: permissions.allow: %v; not applied (an allow left out only asks or denies more)", p.Source, err))
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: permissions.%s: %w", p.Source, p.List, err))
			continue
		}
		spec.Rules = append(spec.Rules, r)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return policy.NewPolicy(spec)
}

// ParseFailModes reads EVENT=open|closed values of ClaudeConfig.FailModes;
// EVENT * sets every event. An unknown event or mode is an error naming the
// value.
func ParseFailModes(vals []string) (map[claudecode.Event]claudecode.FailMode, error) {
	events := []claudecode.Event{claudenames.PreToolUse, claudenames.PermissionRequest, claudenames.PostToolUse, claudenames.PostToolUseFailure,
		claudenames.UserPromptSubmit, claudenames.Stop, claudenames.SessionStart, claudenames.SessionEnd, claudenames.Notification}
	out := map[claudecode.Event]claudecode.FailMode{}
	for _, v := range vals {
		ev, m, ok := strings.Cut(v, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want EVENT=open|closed", v)
		}
		mode := claudecode.FailMode(m)
		if mode != claudenames.FailOpen && mode != claudenames.FailClosed {
			return nil, fmt.Errorf("fail mode %q: want open or closed", m)
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
