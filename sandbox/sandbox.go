package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tollgate-dev/tollgate/internal/glob"
)

// Mode says how much a sandboxed process may do.
type Mode string

// The modes, as written in flags and configuration files.
const (
	// Off runs the command unconfined.
	Off Mode = "off"
	// Workspace lets it write in the workspace and its private temporary
	// directory (see the package documentation).
	Workspace Mode = "workspace"
	// ReadOnly lets it write only in its private temporary directory.
	ReadOnly Mode = "read-only"
)

// ParseMode parses "off", "workspace" or "read-only". The error names the
// value and the choices.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case Off, Workspace, ReadOnly:
		return m, nil
	}
	return "", fmt.Errorf("sandbox mode %q: want off, workspace or read-only", s)
}

// defaultRead returns the trees a sandboxed process may read and execute
// below whatever its [Policy] says: the system's programs, libraries and
// configuration, and the kernel's /dev, /proc and /sys. The slice is fresh.
func defaultRead() []string {
	return []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/dev", "/proc", "/sys"}
}

// Policy is what one sandboxed command may do. Paths must be absolute; ones
// that do not exist are ignored.
type Policy struct {
	// Mode is off, workspace or read-only; empty means off.
	Mode Mode
	// Workspace is the tree the command works in: readable, and writable in
	// mode workspace.
	Workspace string
	// Read are further files and trees it may read and execute.
	Read []string
	// Write are further trees it may write (a cache directory, say).
	Write []string
	// Protect are files and trees it must not write even when they lie in a
	// writable tree: the state directory, the binary, configuration files.
	Protect []string
	// Seal are directories it must not write in at all, whether they exist
	// or not: one that is missing inside a writable tree is created empty
	// (with its missing parents) before it is mounted read-only, so that a
	// command cannot plant a file there (the workspace's .claude directory,
	// whose settings a later run may read). Like Protect, it needs mount
	// namespaces.
	Seal []string
	// Hide are files it must neither read, write nor execute even where
	// they lie in a tree it may read (the store's decision key, when a
	// Read tree holds the state directory): Landlock grants such a tree
	// entry by entry around them, as for the programs of DenyExec.
	Hide []string
	// ConnectTCP are the TCP ports it may connect to and bind; none by default.
	ConnectTCP []uint16
	// DenyExec are globs on program base names ("rm", "python*"; package
	// internal/glob: only * is special, case is ignored) that the command
	// must not execute, however it is spelled. The files these name on the
	// command's PATH and in the system's program directories get no
	// Landlock right (neither executed nor read, so neither copied nor fed
	// to an interpreter or a loader) where they lie in the read-only
	// trees; and an exec supervisor (ptrace(2), in the helper) kills,
	// before its first instruction, any process whose executable is one of
	// them (any link to it), a file of the same content (a copy, a memfd),
	// a file so named, or a dynamic loader run as a program; a process
	// whose argv[0] names one; and an interpreter whose first or second
	// argument is a denied script. The command's own program (cmd.Path, the bash tool's shell)
	// is exempt; what it executes is not. Each refusal is written to the
	// command's standard error. See the package documentation for what it
	// does not stop.
	DenyExec []string
	// MaxProcesses bounds the processes and threads the command may have at
	// once, its own included: beyond it fork and clone fail with EAGAIN, so
	// a fork bomb stops growing (and ends with the call). 0 means 4096; a
	// negative value, no bound.
	MaxProcesses int
	// MaxMemory bounds the command's memory, in bytes: the whole of it
	// where a memory cgroup can be made (beyond it the kernel kills a
	// process), and each process's data (RLIMIT_DATA: an allocation beyond
	// it fails). 0 means half the machine's memory, at least 1 GiB; a
	// negative value, no bound.
	MaxMemory int64
}

// defaultMaxProcesses is the bound on a command's processes and threads
// when [Policy].MaxProcesses is 0.
const defaultMaxProcesses = 4096

// defaultMaxMemory returns the bound on a command's memory when
// [Policy].MaxMemory is 0: half the machine's memory, at least 1 GiB.
func defaultMaxMemory() int64 {
	return max(totalMemory()/2, 1<<30)
}

// Options configures [New]. A nil *Options means all defaults.
type Options struct {
	// Helper is the binary that runs [Main]; empty means the running
	// executable (os.Executable).
	Helper string
	// TempDir is where private temporary directories are made; empty means
	// os.TempDir().
	TempDir string
	// NoNamespaces turns the user, mount and PID namespaces off even where the
	// kernel offers them (Protect then holds only outside writable trees, and
	// daemons that setsid may outlive the command).
	NoNamespaces bool
	// Logger receives the warnings (no Landlock, a protected path that cannot
	// be protected), each once. Nil discards.
	Logger *slog.Logger
}

// Status says what the sandbox can enforce on this machine.
type Status struct {
	// ABI is the Landlock ABI version the kernel offers; 0 means none.
	ABI int
	// Namespaces reports whether commands run in user, mount and PID
	// namespaces of their own.
	Namespaces bool
	// NamespacesError says why there are no namespaces when Namespaces is
	// false: what the helper met entering them (e.g. "entering user, mount
	// and PID namespaces: fork/exec ...: operation not permitted" where the
	// system refuses unprivileged user namespaces), or that they were
	// turned off.
	NamespacesError string
	// Helper is the helper binary.
	Helper string
}

// String describes the status in one line, e.g.
// "landlock ABI 7; namespaces: user, mount, pid".
func (s Status) String() string {
	ll := fmt.Sprintf("landlock ABI %d", s.ABI)
	if s.ABI == 0 {
		ll = "landlock unavailable (file, network and signal restrictions are off)"
	}
	ns := "namespaces: user, mount, pid"
	if !s.Namespaces {
		ns = "namespaces unavailable (protected paths inside the workspace stay writable; daemons that setsid may outlive a command)"
		if s.NamespacesError != "" {
			ns = "namespaces unavailable: " + s.NamespacesError + " (protected paths inside the workspace stay writable; daemons that setsid may outlive a command)"
		}
	}
	return ll + "; " + ns
}

// Sandbox wraps commands so that they start confined. It is safe for
// concurrent use.
type Sandbox struct {
	status  Status
	tempDir string
	log     *slog.Logger
	warned  sync.Map // warning text -> struct{}: each is logged once
}

// mainCalled records that [Main] ran in this process.
var mainCalled atomic.Bool

// probed holds the probes that answered, by helper file and kind: a
// helper is started to be probed once per process (see [New]).
var probed sync.Map

// probeOnce is probe, remembered while the helper is the same file (its
// path, size and time): a success is not asked again.
func probeOnce(helper string, ns bool) error {
	fi, err := os.Stat(helper)
	if err != nil {
		return probe(helper, ns)
	}
	key := fmt.Sprintf("%s\x00%v\x00%d\x00%d", helper, ns, fi.Size(), fi.ModTime().UnixNano())
	if _, ok := probed.Load(key); ok {
		return nil
	}
	if err := probe(helper, ns); err != nil {
		return err
	}
	probed.Store(key, struct{}{})
	return nil
}

// New checks what the kernel offers and that the helper answers, and returns
// a Sandbox. The helper is started to be probed once per process (while
// its file is the same): later calls reuse what the first found. It logs once, at WARN, when Landlock is missing. It fails when
// the helper cannot be started or does not run [Main], when no
// Options.Helper is given and this program's main never called [Main]
// (probing it would run the program itself), and on systems other than
// Linux.
func New(opts *Options) (*Sandbox, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Helper == "" {
		// Probing a binary whose main does not call Main would run the
		// program itself (a server, say) with the helper's arguments,
		// and wait on it.
		if !mainCalled.Load() {
			return nil, errors.New("sandbox: this program's main does not call sandbox.Main, so it cannot serve as the helper; call it first in main, or name a helper binary in Options.Helper")
		}
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("sandbox: the helper binary: %w", err)
		}
		o.Helper = exe
	}
	if o.TempDir == "" {
		o.TempDir = os.TempDir()
	}
	s := &Sandbox{tempDir: o.TempDir, log: o.Logger}
	s.status.Helper = o.Helper
	if err := probeOnce(o.Helper, false); err != nil {
		return nil, fmt.Errorf("sandbox: the helper %s does not answer (does its main call sandbox.Main first?): %w", o.Helper, err)
	}
	switch {
	case o.NoNamespaces:
		s.status.NamespacesError = "turned off (Options.NoNamespaces)"
	default:
		if err := probeOnce(o.Helper, true); err != nil {
			s.status.NamespacesError = err.Error()
		} else {
			s.status.Namespaces = true
		}
	}
	s.status.ABI = abi()
	if s.status.ABI == 0 {
		s.warnOnce("sandbox: this kernel offers no Landlock; file, network and signal restrictions are off (namespaces and the private TMPDIR still apply)")
	}
	return s, nil
}

// Status says what the sandbox enforces here.
func (s *Sandbox) Status() Status { return s.status }

func (s *Sandbox) warnOnce(msg string, args ...any) {
	if _, loaded := s.warned.LoadOrStore(msg, struct{}{}); !loaded {
		s.log.Warn(msg, args...)
	}
}

// spec is what the helper is told, as JSON in its second argument.
type spec struct {
	Probe      bool     `json:"probe,omitempty"`
	Mode       Mode     `json:"mode,omitempty"`
	Read       []string `json:"read,omitempty"`
	Write      []string `json:"write,omitempty"`
	Protect    []string `json:"protect,omitempty"`
	Seal       []string `json:"seal,omitempty"`
	ConnectTCP []uint16 `json:"connectTCP,omitempty"`
	DenyExec   []string `json:"denyExec,omitempty"`
	Hide       []string `json:"hide,omitempty"`
	TempDir    string   `json:"tempDir,omitempty"`
	Namespaces bool     `json:"namespaces,omitempty"`
	MaxProcs   int      `json:"maxProcs,omitempty"`
	MaxMem     int64    `json:"maxMem,omitempty"`
	Path       string   `json:"path,omitempty"`
	Args       []string `json:"args,omitempty"`
	// Stage2 and Tmp are set by the helper for its second stage, which
	// enters the Landlock domain and executes the command.
	Stage2 bool   `json:"stage2,omitempty"`
	Tmp    string `json:"tmp,omitempty"`
	// Hidden are the real paths of the denied programs' files, which the
	// second stage grants no access to.
	Hidden []string `json:"hidden,omitempty"`
}

// helperArg is the first argument that makes a binary the helper.
const helperArg = "__tollgate-sandbox-helper__"

// Wrap rewrites cmd, made by [os/exec.Command] or [os/exec.CommandContext] and
// not yet started, to run confined by p through the helper. Its Dir, Env,
// standard streams and SysProcAttr (process group, session) are kept; it
// adds PR_SET_PDEATHSIG and, where available, the namespaces. With p.Mode off
// (or empty) it changes nothing. It reports whether killing the started
// process (the helper) kills everything the command starts, daemons included
// (true with namespaces). Errors: a started command, a relative path in p, a
// command that could not be found (cmd.Err).
//
// The spawning packages take it bound to a policy, as
// func(cmd *exec.Cmd) (bool, error) { return sb.Wrap(cmd, p) }
// (builtin.Options.Sandbox, declarative.Options.Sandbox).
func (s *Sandbox) Wrap(cmd *exec.Cmd, p Policy) (wholeTree bool, err error) {
	if p.Mode == "" || p.Mode == Off {
		return false, nil
	}
	if _, err := ParseMode(string(p.Mode)); err != nil {
		return false, err
	}
	if cmd.Process != nil {
		return false, fmt.Errorf("sandbox: the command was already started")
	}
	if cmd.Err != nil {
		return false, cmd.Err
	}
	for _, list := range [][]string{{p.Workspace}, p.Read, p.Write, p.Protect, p.Seal, p.Hide} {
		for _, path := range list {
			if path != "" && !filepath.IsAbs(path) {
				return false, fmt.Errorf("sandbox: policy path %q is not absolute", path)
			}
		}
	}
	for _, g := range p.DenyExec {
		if !glob.Valid(g) || strings.Contains(g, "/") {
			return false, fmt.Errorf("sandbox: denied program %q is not a base name or a glob with *", g)
		}
	}
	prog := cmd.Path
	if !filepath.IsAbs(prog) {
		// Relative to cmd.Dir, itself relative to this process's working
		// directory (or that directory when empty), as exec reads them.
		base, err := filepath.Abs(cmd.Dir)
		if err != nil {
			return false, err
		}
		prog = filepath.Join(base, prog)
	}
	sp := spec{
		Mode: p.Mode, ConnectTCP: slices.Clone(p.ConnectTCP), TempDir: s.tempDir,
		Namespaces: s.status.Namespaces, Path: prog, Args: slices.Clone(cmd.Args),
		Protect: slices.Clone(p.Protect), Seal: slices.Clone(p.Seal), DenyExec: slices.Clone(p.DenyExec), Hide: slices.Clone(p.Hide),
		MaxProcs: p.MaxProcesses, MaxMem: p.MaxMemory,
	}
	if sp.MaxProcs == 0 {
		sp.MaxProcs = defaultMaxProcesses
	}
	if sp.MaxMem == 0 {
		sp.MaxMem = defaultMaxMemory()
	}
	sp.Read = append(defaultRead(), p.Read...)
	sp.Read = append(sp.Read, prog)
	sp.Write = slices.Clone(p.Write)
	if p.Workspace != "" {
		sp.Read = append(sp.Read, p.Workspace)
		if p.Mode == Workspace {
			sp.Write = append(sp.Write, p.Workspace)
		}
	}
	if !s.status.Namespaces {
		for _, prot := range append(slices.Clone(p.Protect), p.Seal...) {
			for _, w := range sp.Write {
				if within(prot, w) {
					s.warnOnce(fmt.Sprintf("sandbox: %s lies inside the writable %s and this system offers no mount namespace: a sandboxed command can write it", prot, w))
				}
			}
		}
	}
	b, err := json.Marshal(sp)
	if err != nil {
		return false, err
	}
	cmd.Path = s.status.Helper
	cmd.Args = []string{s.status.Helper, helperArg, string(b)}
	prepareAttr(cmd)
	return s.status.Namespaces, nil
}

// within reports whether path is root or lies below it.
func within(path, root string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
