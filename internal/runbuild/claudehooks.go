package runbuild

import (
	"context"
	"errors"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/runs"
)

// ClaudeHooks returns the hooks of the Claude Code settings files
// opts.Files (opts as for [HookFiles]; opts.Workdir is also
// CLAUDE_PROJECT_DIR) as
// [Builder.Build] runs them for a run's Claude field: PreToolUse as a
// BeforeTool hook, PermissionRequest as a Permission hook, PostToolUse and
// PostToolUseFailure as AfterTool hooks (updatedToolOutput replaces the
// result), commands in the hooks sandbox; the settings' permission rules
// as an authorizer (nil when there are none); and the files that govern
// them, which no tool may write. The refusals are those of a run: a
// settings file that does not load, a PreToolUse or PermissionRequest
// entry that was skipped, files with no hook. Errors are
// [*runs.FieldError]s naming the field ("claude.files").
func ClaudeHooks(ctx context.Context, opts *HookFilesOptions) (*hooks.Hooks, []approval.Authorizer, []string, error) {
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
