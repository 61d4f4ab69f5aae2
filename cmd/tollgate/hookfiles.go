package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"

	"github.com/tollgate-dev/tollgate/hooks/declarative"
	"github.com/tollgate-dev/tollgate/internal/runbuild"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/sandbox"
)

// hookFilesConfig is what [confinedHooks] loads and how it confines the
// hooks' commands.
type hookFilesConfig struct {
	files []string
	// workdir is the workspace (absolute): the commands' working
	// directory and, in workspace mode, the one tree they may write.
	workdir string
	// mode is the hooks sandbox's mode: workspace, read-only or off.
	mode string
	// setting is the flag or key that sets mode, as errors name it
	// (--hooks-sandbox, claudeCode.hooksSandbox); workdirSetting is what
	// sets workdir (--workdir, claudeCode.workdir).
	setting, workdirSetting string
	// protect are files the commands may not write (what governs the
	// host); hide are files they may not read (the state directory's
	// store, key and MCP logins).
	protect, hide []string
	notice        func(string)
	logger        *slog.Logger
}

// confinedHooks loads the declarative hooks files of c as 'tollgate run'
// runs them (runbuild.HookFiles): each command in the hooks sandbox of
// c.mode (workspace: it writes only in c.workdir; read-only: nowhere),
// never writing c.protect nor reading c.hide, with the environment
// scrubbed to the allowlist of docs/hooks.md. Where no sandbox can be
// made and the mode is not off, it is an error (exit 1) that names
// c.setting, so that the host does not start, as a run does not; a bad
// mode, a file that does not load, or a workspace that holds one of
// c.hide (the sandbox hides files only outside the tree a command writes,
// so a command could read them there; 'tollgate run' refuses such a
// workspace too) is a usage error. release lets go of what the sandbox
// holds (the workspace's sealed .claude directory).
func confinedHooks(ctx context.Context, c *hookFilesConfig) (reg *declarative.Registry, release func() error, err error) {
	mode, err := sandbox.ParseMode(c.mode)
	if err != nil {
		return nil, nil, usageErr("%s: %w", c.setting, err)
	}
	if mode != sandbox.Off {
		for _, h := range c.hide {
			if abs, err := filepath.Abs(h); err == nil && insideWorkspace(abs, c.workdir) {
				return nil, nil, usageErr("--hooks: the hooks' workspace %s holds %s, which their commands could read there; choose another workspace (%s) or state directory, or %s off", c.workdir, abs, c.workdirSetting, c.setting)
			}
		}
		if _, err := sandbox.New(&sandbox.Options{Logger: c.logger}); err != nil {
			return nil, nil, withCode(exitError, fmt.Errorf("--hooks: the hooks' commands cannot be confined here: %w (%s off runs them with your rights)", err, c.setting))
		}
	}
	protect := slices.DeleteFunc(slices.Clone(c.protect), func(p string) bool { return p == "" })
	reg, release, err = runbuild.HookFiles(ctx, &runbuild.HookFilesOptions{Files: c.files, Workdir: c.workdir,
		Sandbox: &runs.SandboxConfig{Hooks: string(mode)}, Protect: protect, Hide: c.hide, Notice: c.notice, Logger: c.logger})
	if err != nil {
		return nil, nil, usageErr("--hooks: %w", unwrapField(err))
	}
	return reg, release, nil
}
