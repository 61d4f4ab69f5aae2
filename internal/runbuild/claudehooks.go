package runbuild

import (
	"context"
	"errors"
	"log/slog"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/runs"
)

// ClaudeHooksOptions configures [ClaudeHooks].
type ClaudeHooksOptions struct {
	// Files are Claude Code settings files (required).
	Files []string
	// Workdir is the workspace (absolute): CLAUDE_PROJECT_DIR, and the
	// sandbox of the hook commands, which run in workspace mode.
	Workdir string
	// Sandbox configures the hook commands' sandbox as a run's
	// configuration does (sandbox.hooks, reads, ports, passed
	// variables); nil means the defaults.
	Sandbox *runs.SandboxConfig
	// Protect lists further files and directories no command may write
	// (the host's policy, records, pins), as [HookFilesOptions].Protect.
	Protect []string
	// Hide lists files no command may read (see [Options].Hide).
	Hide []string
	// Notice receives each file's diagnostics, one line each; nil logs
	// them at warning level to Logger.
	Notice func(line string)
	// SandboxHelper is the binary that confines commands (see
	// [Options].SandboxHelper); empty means this program.
	SandboxHelper string
	// Logger receives the hooks' warnings; nil discards.
	Logger *slog.Logger
}

// ClaudeHooks returns the hooks of Claude Code settings files as
// [Builder.Build] runs them for a run's Claude field: PreToolUse as a
// BeforeTool hook, PermissionRequest as a Permission hook, PostToolUse and
// PostToolUseFailure as AfterTool hooks (updatedToolOutput replaces the
// result), commands in the hooks sandbox; the settings' permission rules
// as an authorizer (nil when there are none); and the files that govern
// them, which no tool may write. The refusals are those of a run: a
// settings file that does not load, a PreToolUse or PermissionRequest
// entry that was skipped, files with no hook. Errors are
// [*runs.FieldError]s naming the field ("claude.files").
func ClaudeHooks(ctx context.Context, opts *ClaudeHooksOptions) (*hooks.Hooks, []approval.Authorizer, []string, error) {
	if opts == nil || len(opts.Files) == 0 {
		return nil, nil, nil, &runs.FieldError{Field: "claude.files", Err: errors.New("no Claude Code settings file given")}
	}
	b := New(&Options{Protect: opts.Protect, Hide: opts.Hide, Notice: opts.Notice, SandboxHelper: opts.SandboxHelper, Logger: opts.Logger})
	s := &setup{b: b, cfg: runs.RunConfig{AgentConfig: runs.AgentConfig{Workdir: opts.Workdir, Sandbox: opts.Sandbox, Claude: &runs.ClaudeConfig{Files: opts.Files}}},
		opts: &agent.Options{Hooks: &hooks.Hooks{}}}
	if err := setupSandbox(ctx, s); err != nil {
		return nil, nil, nil, err
	}
	s.addProtected(opts.Protect...)
	given := len(s.protected)
	if err := setupClaude(ctx, s); err != nil {
		return nil, nil, nil, err
	}
	return s.opts.Hooks, s.opts.Authorizers, s.protected[given:], nil
}
