package runbuild

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/builtin"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/tool"
	"github.com/tollgate-dev/tollgate/toolkit"
)

// BuiltinOptions configures [Builtins].
type BuiltinOptions struct {
	// Workdir is the workspace of the builtins (absolute; required): the
	// file tools' root and bash's working directory and writable tree.
	Workdir string
	// Sandbox is bash's sandbox as a run's configuration gives it (mode,
	// further readable paths, ports, passed variables); nil means the
	// defaults: workspace mode.
	Sandbox *runs.SandboxConfig
	// Authorizers are the authorizers that decide the tools' calls: every
	// file the file tools open is judged by them again
	// ([approval.CheckFile]), and the programs they deny outright in bash's
	// scripts ([policy.DeniedPrograms]) are refused at exec by bash's
	// sandbox (sandbox.Policy.DenyExec), whatever the script's spelling.
	Authorizers []approval.Authorizer
	// Protect lists files and directories no tool may write: the files
	// that govern the host (its policy, hooks, records); relative paths
	// are made absolute against the current directory.
	Protect []string
	// Hide lists files bash may not read, even inside a tree it may read
	// (the state directory's store, decision key and MCP logins; see
	// [Options].Hide).
	Hide []string
	// Disable switches builtins off by name (see [toolkit.Options]).
	Disable []string
	// SandboxHelper is the binary that confines commands (see
	// [Options].SandboxHelper); empty means this program.
	SandboxHelper string
	// Logger receives the sandbox's warnings; nil discards.
	Logger *slog.Logger
}

// Builtins returns the builtin tools on opts.Workdir as [Builder.Build]
// wires them for a run: bash confined by package sandbox (with the
// authorizers' denied programs refused at exec), the file tools refusing
// the protected files and the workspace's Claude Code settings, and every
// file they open judged again by the authorizers. A machine that cannot
// confine commands is an error unless opts.Sandbox turns bash's sandbox
// off. Errors about a field are [*runs.FieldError]s naming it. Call close
// when the tools are no longer served: it lets go of the workspace's
// sealed .claude directory, removing it if the workspace had none, as a
// run's end does.
func Builtins(ctx context.Context, opts *BuiltinOptions) (tk *toolkit.Toolkit, close func() error, err error) {
	if opts == nil || opts.Workdir == "" {
		return nil, nil, &runs.FieldError{Field: "workdir", Err: errors.New("no workspace given")}
	}
	b := New(&Options{Protect: opts.Protect, Hide: opts.Hide, SandboxHelper: opts.SandboxHelper, Logger: opts.Logger})
	s := &setup{b: b, cfg: runs.RunConfig{AgentConfig: runs.AgentConfig{Workdir: opts.Workdir, Sandbox: opts.Sandbox}},
		opts: &agent.Options{Hooks: &hooks.Hooks{}, Authorizers: opts.Authorizers}}
	if err := setupSandbox(ctx, s); err != nil {
		_ = s.closeAll()
		return nil, nil, err
	}
	s.addProtected(opts.Protect...)
	tk, err = s.toolkit(nil, opts.Disable)
	if err != nil {
		_ = s.closeAll()
		return nil, nil, &runs.FieldError{Field: "workdir", Err: err}
	}
	return tk, s.closeAll, nil
}

// toolkit returns the builtins of the run on its Workdir, and extra: bash
// in the sandbox the configuration decided, refusing at exec the programs
// the run's authorizers deny outright; the file tools refusing the
// protected files and judging every file they open by the authorizers.
func (s *setup) toolkit(extra []tool.Tool, disable []string) (*toolkit.Toolkit, error) {
	// The programs the authorizers deny outright are refused at exec in
	// bash's sandbox too, whatever the script's spelling.
	s.sandbox.denyExec = policy.DeniedPrograms("bash", s.opts.Authorizers...)
	bopts := s.sandbox.builtinOptions()
	// The file tools run in this process, outside any sandbox: they refuse
	// the files that govern the run themselves, and the Claude Code settings
	// a later run would read (a model must not plant a hook that approves).
	bopts.Protect = append(append(bopts.Protect, s.protected...),
		filepath.Join(".claude", "settings.json"), filepath.Join(".claude", "settings.local.json"))
	// What the file tools open is judged again by the run's authorizers, so
	// that a link changed after a call was authorized cannot lead it to a
	// file they refuse.
	bopts.CheckFile = func(ctx context.Context, u builtin.FileUse) error {
		return approval.CheckFile(ctx, approval.Call{Tool: u.Tool, Args: u.Args, Hints: u.Hints}, u.Links, s.opts.Authorizers...)
	}
	return toolkit.New(&toolkit.Options{Workdir: s.cfg.Workdir, Extra: extra, Disable: disable, Builtin: bopts,
		// Unconfined only where the configuration turned the sandbox off.
		Unconfined: bopts.Sandbox == nil})
}
