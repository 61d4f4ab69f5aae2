package runbuild

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tollgate-dev/tollgate/builtin"
	"github.com/tollgate-dev/tollgate/mcptool"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/sandbox"
)

// sandboxConfig is what a configuration's Sandbox decided; the other steps
// read it from setup.
type sandboxConfig struct {
	sb         *sandbox.Sandbox // nil when every mode is off
	bash       sandbox.Mode
	hooks      sandbox.Mode
	read       []string // absolute
	connect    []uint16
	passEnv    []string
	workspace  string // Workdir with its links resolved
	cwd        string // the process's working directory
	protectFns []func() []string
	// hide are files no sandboxed command may read (Options.Hide).
	hide []string
	// stateDir is the host's state directory (Options.StateDir), "" for none.
	stateDir string
	// notice reports a server's "sandboxRead" that reaches tollgate's own
	// files (setup.notice).
	notice func(format string, args ...any)
	// denyExec are the programs the run's authorizers deny outright in
	// bash's scripts: the bash tool's sandbox refuses them at exec.
	denyExec []string
}

// protect returns the paths no sandboxed command may write: the running
// binary and what the steps registered (the state directory, hooks, policy
// and MCP files).
func (c *sandboxConfig) protect() []string {
	var out []string
	if exe, err := os.Executable(); err == nil {
		out = append(out, exe)
	}
	for _, f := range c.protectFns {
		for _, p := range f() {
			if abs, err := filepath.Abs(p); err == nil {
				out = append(out, abs)
			}
		}
	}
	return out
}

// policy returns the policy of a bash call (workspace: Workdir) or a command
// hook (workspace: its working directory). The workspace's .claude directory
// is sealed, existing or not: its settings are what Claude project settings
// read, so no command may plant a hook there.
func (c *sandboxConfig) policy(mode sandbox.Mode, workspace string) sandbox.Policy {
	p := sandbox.Policy{Mode: mode, Workspace: workspace, Read: c.read, ConnectTCP: c.connect, Protect: c.protect(), Hide: c.hide}
	if c.workspace != "" {
		p.Seal = []string{filepath.Join(c.workspace, ".claude")}
	}
	return p
}

// builtinOptions are the builtins' options under this configuration.
func (c *sandboxConfig) builtinOptions() *builtin.Options {
	o := &builtin.Options{PassEnv: c.passEnv}
	if c.sb != nil && c.bash != sandbox.Off {
		o.Sandbox = func(cmd *exec.Cmd) (bool, error) {
			p := c.policy(c.bash, c.workspace)
			p.DenyExec = c.denyExec
			return c.sb.Wrap(cmd, p)
		}
	}
	return o
}

// hookSandbox confines command hooks, or is nil: a command hook's workspace
// is its working directory, and it may read (workspace mode: write) Workdir.
func (c *sandboxConfig) hookSandbox() func(cmd *exec.Cmd) (bool, error) {
	if c.sb == nil || c.hooks == sandbox.Off {
		return nil
	}
	return func(cmd *exec.Cmd) (bool, error) {
		dir := cmd.Dir
		if dir == "" {
			dir = c.cwd
		}
		p := c.policy(c.hooks, dir)
		if c.hooks == sandbox.Workspace {
			p.Write = []string{c.workspace}
		} else {
			p.Read = append(p.Read[:len(p.Read):len(p.Read)], c.workspace)
		}
		return c.sb.Wrap(cmd, p)
	}
}

// hookSandboxNote names the hooks sandbox and its setting in the failure
// of a hook whose output shows a refusal, so that a person sees it was the
// sandbox and what to change; "" when hooks run unconfined.
func (c *sandboxConfig) hookSandboxNote() string {
	if c.sb == nil || c.hooks == sandbox.Off {
		return ""
	}
	return fmt.Sprintf("the hooks sandbox (%s; --hooks-sandbox, sandbox.hooks in server.yaml) may have refused it", c.hooks)
}

// MCPConfine returns the confinement of stdio MCP servers (for
// mcptool.Options.Sandbox) under sb: each server runs as its "sandbox" in
// mcp.json says (default workspace, on base's workspace), and may read its
// working directory, the process's working directory cwd and its
// "sandboxRead" besides, and connect to its "sandboxConnect" ports. base is
// called for each server, so that it sees every protected path registered
// by then. A nil sb confines nothing.
func MCPConfine(sb *sandbox.Sandbox, cwd string, base func() sandbox.Policy) func(cmd *exec.Cmd, server string, sc *mcptool.ServerConfig) error {
	if sb == nil {
		return nil
	}
	return func(cmd *exec.Cmd, server string, sc *mcptool.ServerConfig) error {
		p := base()
		p.Mode = sandbox.Workspace
		if sc.Sandbox != "" {
			m, err := sandbox.ParseMode(sc.Sandbox)
			if err != nil {
				return err
			}
			p.Mode = m
		}
		p.Read = append(append(append([]string(nil), p.Read...), sc.SandboxRead...), cwd)
		if cmd.Dir != "" {
			// A "cwd" relative to a relative mcp.json path is relative to
			// this process's working directory, as exec reads it.
			dir, err := filepath.Abs(cmd.Dir)
			if err != nil {
				return err
			}
			p.Read = append(p.Read, dir)
		}
		p.ConnectTCP = append(append([]uint16(nil), p.ConnectTCP...), sc.SandboxConnect...)
		_, err := sb.Wrap(cmd, p)
		return err
	}
}

func (c *sandboxConfig) mcpSandbox() func(cmd *exec.Cmd, server string, sc *mcptool.ServerConfig) error {
	confine := MCPConfine(c.sb, c.cwd, func() sandbox.Policy { return c.policy(sandbox.Workspace, c.workspace) })
	if confine == nil {
		return nil
	}
	return func(cmd *exec.Cmd, server string, sc *mcptool.ServerConfig) error {
		if m, err := sandbox.ParseMode(cmp.Or(sc.Sandbox, string(sandbox.Workspace))); err == nil && m != sandbox.Off {
			c.warnBroadRead(server, sc.SandboxRead)
		}
		return confine(cmd, server, sc)
	}
}

// warnBroadRead tells the person when a stdio server's "sandboxRead" (an
// mcp.json may come with the workspace, written by anyone) grants the
// whole file system, the home directory or a tree that holds the state
// directory: tollgate's own files there (the store, its key, the MCP
// logins) stay hidden from the server (Options.Hide), but everything
// else in that tree is readable to it.
func (c *sandboxConfig) warnBroadRead(server string, read []string) {
	if c.notice == nil {
		return
	}
	home, _ := os.UserHomeDir()
	for _, r := range read {
		abs, err := filepath.Abs(r)
		if err != nil {
			continue
		}
		real := abs
		if rr, err := filepath.EvalSymlinks(abs); err == nil {
			real = rr
		}
		var what string
		switch {
		case real == "/":
			what = "the whole file system"
		case home != "" && (real == home || abs == home):
			what = "your home directory"
		case c.stateDir != "" && (within(c.stateDir, abs) || within(realOr(c.stateDir), real)):
			what = "a tree that holds tollgate's state directory " + c.stateDir
		default:
			continue
		}
		c.notice("mcp: server %s: warning: \"sandboxRead\": %s lets it read %s; the store, its decision key and the MCP logins stay hidden, the rest does not", server, strconv.Quote(r), what)
	}
}

// realOr is p with its links resolved, or p.
func realOr(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// within reports whether path is root or lies below it.
func within(path, root string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// setupSandbox reads the configuration's Sandbox: bash (default
// workspace), command hooks (default as bash), further readable paths,
// ports and passed variables. The sandbox is made even with bash and hooks
// off: stdio MCP servers run confined unless their own configuration says
// off.
func setupSandbox(ctx context.Context, s *setup) error {
	sc := s.cfg.Sandbox
	if sc == nil {
		sc = &runs.SandboxConfig{}
	}
	c := &sandboxConfig{passEnv: sc.PassEnv, connect: sc.Connect, stateDir: s.b.opts.StateDir, notice: s.notice}
	if c.stateDir != "" {
		c.stateDir, _ = filepath.Abs(c.stateDir)
	}
	for _, h := range s.b.opts.Hide {
		if abs, err := filepath.Abs(h); err == nil {
			c.hide = append(c.hide, abs)
		}
	}
	var err error
	if c.bash, err = sandbox.ParseMode(cmp.Or(sc.Bash, string(sandbox.Workspace))); err != nil {
		return &runs.FieldError{Field: "sandbox.bash", Err: err}
	}
	c.hooks = c.bash
	if sc.Hooks != "" {
		if c.hooks, err = sandbox.ParseMode(sc.Hooks); err != nil {
			return &runs.FieldError{Field: "sandbox.hooks", Err: err}
		}
	}
	for _, r := range sc.Read {
		abs, err := filepath.Abs(r)
		if err != nil {
			return &runs.FieldError{Field: "sandbox.read", Err: fmt.Errorf("%s: %v", r, err)}
		}
		c.read = append(c.read, abs)
	}
	if c.cwd, err = os.Getwd(); err != nil {
		return err
	}
	c.workspace = s.cfg.Workdir
	if real, err := filepath.EvalSymlinks(c.workspace); err == nil {
		c.workspace = real
	}
	s.sandbox = c
	if s.cfg.Model.Provider == "script" {
		s.addProtected(s.cfg.Model.Name)
	}
	sb, err := sandbox.New(&sandbox.Options{Logger: s.b.opts.WarnLogger, Helper: s.b.opts.SandboxHelper})
	if err != nil {
		if c.bash == sandbox.Off && c.hooks == sandbox.Off {
			return nil
		}
		return fmt.Errorf("sandbox: %w (set sandbox.bash and sandbox.hooks to off to run commands unconfined)", err)
	}
	c.sb = sb
	return holdClaudeSeal(s, filepath.Join(c.workspace, ".claude"))
}

// holdClaudeSeal keeps the workspace's .claude directory, which every
// sandboxed command of the run seals, in place for the whole run, and
// registers the closer that removes it when the run ends if the workspace
// had none when the build began and it is still empty (see
// [HoldClaudeSeal]).
func holdClaudeSeal(s *setup, claude string) error {
	release, err := HoldClaudeSeal(claude)
	if err != nil {
		return err
	}
	s.closers = append(s.closers, release)
	return nil
}

// HoldClaudeSeal keeps claude, a workspace's .claude directory that
// sandboxed commands seal ([sandbox.Policy].Seal), in place until release
// is called; release then removes it if it was missing when HoldClaudeSeal
// was called and is still empty, so that the seal leaves no trace
// (sandbox.RemoveSealed, which leaves it while a command of another
// process still seals it). A run holds it for its whole length, as does
// `tollgate gateway` for its sandboxed MCP servers. The error says the
// directory's parent could not be locked (sandbox.HoldSealed).
func HoldClaudeSeal(claude string) (release func() error, err error) {
	_, err = os.Lstat(claude)
	missing := errors.Is(err, fs.ErrNotExist)
	unlock, err := sandbox.HoldSealed(claude)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	return func() error {
		unlock()
		if !missing {
			return nil
		}
		_, err := sandbox.RemoveSealed(claude)
		return err
	}, nil
}
