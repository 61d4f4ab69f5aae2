package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tollgate-dev/tollgate/builtin"
	"github.com/tollgate-dev/tollgate/mcptool"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/sandbox"
)

// sandboxConfig is what the sandbox flags of `tollgate run` decided; the
// other extensions and build read it from runSetup.
type sandboxConfig struct {
	sb         *sandbox.Sandbox // nil when every mode is off
	bash       sandbox.Mode     // --sandbox
	hooks      sandbox.Mode     // --hooks-sandbox
	read       []string         // --sandbox-read, absolute
	connect    []uint16         // --sandbox-connect
	passEnv    []string         // --pass-env
	workspace  string           // --workdir, absolute with its links resolved
	cwd        string           // the process's working directory
	protectFns []func() []string
}

// protect returns the paths no sandboxed command may write: the binary, the
// files given on the command line, and what the other extensions add (the
// state directory, hooks, policy and MCP files).
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

// addProtected registers files that no tool may write: sandboxed commands
// (resolved when a command is wrapped) and the file tools alike.
func (rs *runSetup) addProtected(files ...string) {
	for _, f := range files {
		if abs, err := filepath.Abs(f); err == nil {
			rs.protected = append(rs.protected, abs)
		}
	}
	if rs.sandbox == nil || len(files) == 0 {
		return
	}
	rs.sandbox.protectFns = append(rs.sandbox.protectFns, func() []string { return files })
}

// policy returns the policy of a bash call (workspace: --workdir) or a
// command hook (workspace: the working directory).
// The workspace's .claude directory is sealed, existing or not: its
// settings are what --claude-project-settings reads, so no command may plant
// a hook there.
func (c *sandboxConfig) policy(mode sandbox.Mode, workspace string) sandbox.Policy {
	p := sandbox.Policy{Mode: mode, Workspace: workspace, Read: c.read, ConnectTCP: c.connect, Protect: c.protect()}
	if c.workspace != "" {
		p.Seal = []string{filepath.Join(c.workspace, ".claude")}
	}
	return p
}

// builtinOptions are the builtins' options under these flags.
func (c *sandboxConfig) builtinOptions() *builtin.Options {
	o := &builtin.Options{PassEnv: c.passEnv}
	if c.sb != nil && c.bash != sandbox.Off {
		o.Sandbox = func(cmd *exec.Cmd) (bool, error) { return c.sb.Wrap(cmd, c.policy(c.bash, c.workspace)) }
	}
	return o
}

// hookSandbox is declarative.Options.Sandbox under these flags, or nil: a
// command hook's workspace is its working directory (where it runs: the
// run's workspace, else the process's) and --workdir.
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

// mcpSandbox is mcptool.Options.Sandbox: a stdio server runs as its
// "sandbox" says (default workspace, on --workdir), and may read its working
// directory and "sandboxRead" besides.
func (c *sandboxConfig) mcpSandbox() func(cmd *exec.Cmd, server string, sc *mcptool.ServerConfig) error {
	if c == nil || c.sb == nil {
		return nil
	}
	return func(cmd *exec.Cmd, server string, sc *mcptool.ServerConfig) error {
		mode := sandbox.Workspace
		if sc.Sandbox != "" {
			m, err := sandbox.ParseMode(sc.Sandbox)
			if err != nil {
				return err
			}
			mode = m
		}
		p := c.policy(mode, c.workspace)
		p.Read = append(append(append([]string(nil), p.Read...), sc.SandboxRead...), c.cwd)
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
		_, err := c.sb.Wrap(cmd, p)
		return err
	}
}

// sandboxRunExtension adds the sandbox flags to `tollgate run`: bash
// (--sandbox), command hooks (--hooks-sandbox) and stdio MCP servers (their
// "sandbox" in mcp.json) run confined by package sandbox, with
// --sandbox-read and --sandbox-connect widening what they may do, and
// --pass-env naming variables passed to them beyond the allowlist.
func sandboxRunExtension() runExtension {
	return runExtension{
		flags: func(fs *pflag.FlagSet, f *runFlags) {
			fs.StringVar(&f.sandbox, "sandbox", string(sandbox.Workspace), "confine bash: workspace (write only in --workdir and a private TMPDIR, no TCP), read-only, or off")
			fs.StringVar(&f.hooksSandbox, "hooks-sandbox", "", "confine command hooks: workspace (the working directory), read-only or off (default: as --sandbox)")
			fs.StringArrayVar(&f.sandboxRead, "sandbox-read", nil, "a further file or directory sandboxed commands may read; repeatable")
			fs.Var(newPortsValue(&f.sandboxConnect), "sandbox-connect", "a TCP port sandboxed commands may connect to; repeatable")
			fs.StringArrayVar(&f.passEnv, "pass-env", nil, "pass this environment variable (or NAME* prefix) to bash and command hooks beyond the allowlist (PATH, HOME, LANG, TERM, ...); repeatable")
		},
		setup: func(ctx context.Context, rs *runSetup) error {
			sc := rs.cfg.Sandbox
			if sc == nil {
				sc = &runs.SandboxConfig{}
			}
			mode, hooksMode, reads := cmp.Or(sc.Bash, string(sandbox.Workspace)), sc.Hooks, sc.Read
			c := &sandboxConfig{passEnv: sc.PassEnv, connect: sc.Connect}
			var err error
			if c.bash, err = sandbox.ParseMode(mode); err != nil {
				return usageErr("run: --sandbox: %v", err)
			}
			c.hooks = c.bash
			if hooksMode != "" {
				if c.hooks, err = sandbox.ParseMode(hooksMode); err != nil {
					return usageErr("run: --hooks-sandbox: %v", err)
				}
			}
			for _, r := range reads {
				abs, err := filepath.Abs(r)
				if err != nil {
					return usageErr("run: --sandbox-read %s: %v", r, err)
				}
				c.read = append(c.read, abs)
			}
			if c.cwd, err = os.Getwd(); err != nil {
				return err
			}
			c.workspace = rs.cfg.Workdir
			if real, err := filepath.EvalSymlinks(c.workspace); err == nil {
				c.workspace = real
			}
			rs.sandbox = c
			if rs.cfg.Model.Provider == "script" {
				rs.addProtected(rs.cfg.Model.Name)
			}
			// The sandbox is made even with bash and hooks off: stdio MCP
			// servers run confined unless their own configuration says off.
			logger := slog.New(slog.NewTextHandler(rs.env.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			sb, err := sandbox.New(&sandbox.Options{Logger: logger})
			if err != nil {
				if c.bash == sandbox.Off && c.hooks == sandbox.Off {
					return nil
				}
				return withCode(exitError, fmt.Errorf("run: %v (turn confinement off with --sandbox off)", err))
			}
			c.sb = sb
			return nil
		},
	}
}

// toolsSandbox is the confinement of the stdio MCP servers that `tollgate
// tools --mcp` starts: the same as `tollgate run` gives them (each server's
// "sandbox", default workspace on workdir; the binary and the MCP files
// protected), so that listing tools never runs a server with more power
// than a run would.
// Where no sandbox can be made (no helper, not Linux), only the servers
// configured "sandbox": "off" start.
func toolsSandbox(env *cliEnv, workdir string, reads []string, connect []uint16, mcpFiles []string) (func(*exec.Cmd, string, *mcptool.ServerConfig) error, error) {
	c := &sandboxConfig{connect: connect}
	for _, r := range reads {
		abs, err := filepath.Abs(r)
		if err != nil {
			return nil, usageErr("tools: --sandbox-read %s: %v", r, err)
		}
		c.read = append(c.read, abs)
	}
	var err error
	if c.cwd, err = os.Getwd(); err != nil {
		return nil, err
	}
	if c.workspace, err = filepath.Abs(workdir); err != nil {
		return nil, usageErr("tools: --workdir %s: %v", workdir, err)
	}
	if real, err := filepath.EvalSymlinks(c.workspace); err == nil {
		c.workspace = real
	}
	files := append([]string(nil), mcpFiles...)
	c.protectFns = append(c.protectFns, func() []string { return files })
	logger := slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if c.sb, err = sandbox.New(&sandbox.Options{Logger: logger}); err != nil {
		// Only the servers configured "sandbox": "off" start; the others
		// fail with this error in their status.
		return func(_ *exec.Cmd, _ string, sc *mcptool.ServerConfig) error {
			if m, perr := sandbox.ParseMode(sc.Sandbox); perr == nil && sc.Sandbox != "" && m == sandbox.Off {
				return nil
			}
			return fmt.Errorf("%v (run the server unconfined with \"sandbox\": \"off\" in mcp.json)", err)
		}, nil
	}
	return c.mcpSandbox(), nil
}

// portsValue is a repeatable flag of TCP ports.
type portsValue struct{ ports *[]uint16 }

func newPortsValue(p *[]uint16) *portsValue { return &portsValue{ports: p} }

func (v *portsValue) String() string {
	if v.ports == nil {
		return ""
	}
	s := make([]string, len(*v.ports))
	for i, p := range *v.ports {
		s[i] = fmt.Sprint(p)
	}
	return strings.Join(s, ",")
}

func (v *portsValue) Set(s string) error {
	var p uint16
	if _, err := fmt.Sscanf(s, "%d", &p); err != nil || p == 0 || fmt.Sprint(p) != s {
		return fmt.Errorf("%q is not a TCP port (1-65535)", s)
	}
	*v.ports = append(*v.ports, p)
	return nil
}

func (v *portsValue) Type() string { return "port" }

// GetSlice makes the flag repeat in the arguments stored for resume.
func (v *portsValue) GetSlice() []string {
	s := make([]string, len(*v.ports))
	for i, p := range *v.ports {
		s[i] = fmt.Sprint(p)
	}
	return s
}

func (v *portsValue) Append(s string) error { return v.Set(s) }

func (v *portsValue) Replace(s []string) error {
	*v.ports = nil
	for _, x := range s {
		if err := v.Set(x); err != nil {
			return err
		}
	}
	return nil
}

// newDoctorCmd is `tollgate doctor`: what the sandbox can enforce here.
func newDoctorCmd(env *cliEnv) *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Say what this machine's sandbox can enforce (Landlock ABI, namespaces)",
		Long: `Say what the sandbox of bash, command hooks and stdio MCP servers can
enforce on this machine: the Landlock ABI the kernel offers (0: none; file,
network and signal restrictions are then off) and whether commands run in
user, mount and PID namespaces of their own (without them a protected path
inside the workspace stays writable and daemons that setsid may outlive a
command).

Exit status: 0 when Landlock and namespaces are both available, 1 otherwise.`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error {
			sb, err := sandbox.New(nil)
			if err != nil {
				fmt.Fprintf(env.stdout, "sandbox: unavailable: %v\n", err)
				return withCode(exitError, nil)
			}
			st := sb.Status()
			fmt.Fprintf(env.stdout, "sandbox: %s\nhelper: %s\n", st, st.Helper)
			if st.ABI == 0 || !st.Namespaces {
				return withCode(exitError, nil)
			}
			return nil
		},
	}
}
