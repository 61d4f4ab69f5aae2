package main

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tollgate-dev/tollgate/internal/runbuild"
	"github.com/tollgate-dev/tollgate/mcptool"
	"github.com/tollgate-dev/tollgate/sandbox"
)

// sandboxRunExtension adds the sandbox flags to `tollgate run`: bash
// (--sandbox), command hooks (--hooks-sandbox) and stdio MCP servers (their
// "sandbox" in mcp.json) run confined by package sandbox, with
// --sandbox-read and --sandbox-connect widening what they may do, and
// --pass-env naming variables passed to them beyond the allowlist.
func sandboxRunExtension() runExtension {
	return runExtension{
		flags: func(fs *pflag.FlagSet, f *runFlags) {
			fs.StringVar(&f.sandbox, "sandbox", string(sandbox.Workspace), "confine bash: workspace (write only in --workdir and a private TMPDIR, no TCP), read-only, or off (bash then runs with your rights: it can write the state directory's store and record a decision under any name)")
			fs.StringVar(&f.hooksSandbox, "hooks-sandbox", "", "confine command hooks: workspace (the working directory), read-only or off (default: as --sandbox)")
			fs.StringArrayVar(&f.sandboxRead, "sandbox-read", nil, "a further file or directory sandboxed commands may read; repeatable")
			fs.Var(newPortsValue(&f.sandboxConnect), "sandbox-connect", "a TCP port sandboxed commands may connect to; repeatable")
			fs.StringArrayVar(&f.passEnv, "pass-env", nil, "pass this environment variable (or NAME* prefix) to bash and command hooks beyond the allowlist (PATH, HOME, LANG, TERM, ...); repeatable")
		},
	}
}

// toolsSandbox is the confinement of the stdio MCP servers that `tollgate
// tools --mcp` starts: the same as `tollgate run` gives them (each server's
// "sandbox", default workspace on workdir; the binary, the MCP files and
// the state directory protected), so that listing tools never runs a server with more power
// than a run would.
// Where no sandbox can be made (no helper, not Linux), only the servers
// configured "sandbox": "off" start. The workspace's .claude directory is
// sealed, as in a run, so that no server plants Claude Code settings there;
// release, once the servers have stopped, removes it if the seal made it
// (runbuild.HoldClaudeSeal) and says so on stderr if it could not.
func toolsSandbox(env *cliEnv, workdir string, reads []string, connect []uint16, mcpFiles []string) (confine func(*exec.Cmd, string, *mcptool.ServerConfig) error, release func(), err error) {
	var read []string
	for _, r := range reads {
		abs, err := env.abs(r)
		if err != nil {
			return nil, nil, usageErr("tools: --sandbox-read %s: %v", r, err)
		}
		read = append(read, abs)
	}
	cwd, err := env.wd()
	if err != nil {
		return nil, nil, err
	}
	workspace, err := env.abs(workdir)
	if err != nil {
		return nil, nil, usageErr("tools: --workdir %s: %v", workdir, err)
	}
	if real, err := filepath.EvalSymlinks(workspace); err == nil {
		workspace = real
	}
	var protect []string
	if exe, err := os.Executable(); err == nil {
		protect = append(protect, exe)
	}
	for _, f := range mcpFiles {
		if abs, err := env.abs(f); err == nil {
			protect = append(protect, abs)
		}
	}
	logger := slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	sb, err := sandbox.New(&sandbox.Options{Logger: logger})
	if err != nil {
		// Only the servers configured "sandbox": "off" start; the others
		// fail with this error in their status.
		return func(_ *exec.Cmd, _ string, sc *mcptool.ServerConfig) error {
			if m, perr := sandbox.ParseMode(sc.Sandbox); perr == nil && sc.Sandbox != "" && m == sandbox.Off {
				return nil
			}
			return fmt.Errorf("%v (run the server unconfined with \"sandbox\": \"off\" in mcp.json)", err)
		}, func() {}, nil
	}
	claude := filepath.Join(workspace, ".claude")
	unseal, err := runbuild.HoldClaudeSeal(claude)
	if err != nil {
		return nil, nil, err
	}
	release = func() {
		if err := unseal(); err != nil {
			fmt.Fprintf(env.stderr, "tollgate: %s: %v\n", claude, err)
		}
	}
	// The default state directory's store, key and MCP logins are hidden,
	// as from a run's servers, and the directory is not theirs to write
	// even when the workspace holds it (a gateway started in ~).
	var hide []string
	if dir, err := defaultStateDir(env); err == nil {
		hide = stateHidden(dir, "")
		if abs, err := env.abs(dir); err == nil {
			protect = append(protect, abs)
		}
	}
	return runbuild.MCPConfine(sb, cwd, func() sandbox.Policy {
		return sandbox.Policy{Mode: sandbox.Workspace, Workspace: workspace, Read: read, ConnectTCP: connect, Protect: protect, Seal: []string{claude}, Hide: hide}
	}), release, nil
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
