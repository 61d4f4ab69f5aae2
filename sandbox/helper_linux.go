//go:build linux

package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	links "github.com/tollgate-dev/tollgate/internal/realpath"
)

// probeReply is what a helper prints to a probe.
const probeReply = "tollgate-sandbox-helper ok"

// abi returns the Landlock ABI version of the kernel, 0 when there is none.
func abi() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// probe starts the helper with a probe spec, in namespaces when ns is set,
// and checks its answer. The error carries what the helper said on its
// standard error (why it could not enter the namespaces, say).
func probe(helper string, ns bool) error {
	b, _ := json.Marshal(spec{Probe: true, Namespaces: ns})
	cmd := exec.Command(helper, helperArg, string(b))
	cmd.Env = []string{}
	prepareAttr(cmd)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(bytes.TrimSpace(ee.Stderr)) > 0 {
			msg := bytes.TrimSpace(ee.Stderr)
			msg = bytes.TrimPrefix(msg[:min(len(msg), 500)], []byte("tollgate sandbox: "))
			return fmt.Errorf("%s", msg)
		}
		return err
	}
	if !bytes.Contains(out, []byte(probeReply)) {
		return fmt.Errorf("unexpected answer %q", bytes.TrimSpace(out[:min(len(out), 200)]))
	}
	return nil
}

// prepareAttr asks for the helper to die with its parent. The helper enters
// the namespaces itself (see [helper]): tollgate is not dumpable (it hides
// its environment), a child it forks is not either until its execve, and the
// /proc/PID/uid_map of a process that is not dumpable belongs to root, so a
// user other than root could not write the child's ID mappings.
func prepareAttr(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

// nsAttr is what starts the helper's init in new user, mount and PID
// namespaces, with this process's user and group mapped to themselves. A
// user other than root keeps CAP_SYS_ADMIN in the new user namespace across
// the init's execve only as an ambient capability (capabilities(7)): the
// init needs it to mount; the second stage drops it before it executes the
// command (dropCapabilities).
func nsAttr() *syscall.SysProcAttr {
	uid, gid := os.Getuid(), os.Getgid()
	return &syscall.SysProcAttr{
		Pdeathsig:                  syscall.SIGKILL,
		AmbientCaps:                []uintptr{unix.CAP_SYS_ADMIN},
		Cloneflags:                 syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		GidMappingsEnableSetgroups: false,
	}
}

// Main makes the running binary act as the sandbox helper when it was started
// as one by [Sandbox.Wrap] (its first argument is the hidden marker): it then
// never returns. Otherwise it returns at once, having done nothing. Call it
// first in main of every binary that serves as a helper (the tollgate command
// does; a library host that uses [New] without Options.Helper must).
func Main() {
	mainCalled.Store(true)
	if len(os.Args) < 3 || os.Args[1] != helperArg {
		return
	}
	os.Exit(helper(os.Args[2]))
}

// helper runs one sandboxed command and returns the exit status to end with.
func helper(specJSON string) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "tollgate sandbox: "+format+"\n", args...)
		return 126
	}
	var sp spec
	if err := json.Unmarshal([]byte(specJSON), &sp); err != nil {
		return fail("bad helper arguments: %v", err)
	}
	init := sp.Namespaces && os.Getpid() == 1
	if !init && !sp.Stage2 && !sp.Probe {
		// The first stage joins cgroups of its own, so that the limits
		// hold for all it starts.
		_, leave := joinCgroups(max(sp.MaxProcs, 0), max(sp.MaxMem, 0))
		defer leave()
	}
	if sp.Namespaces && !init && !sp.Stage2 {
		// First stage: this process is dumpable again (it was just
		// executed), so it can write the ID mappings of a child of its own.
		return enterNamespaces(fail)
	}
	if sp.Probe {
		if init {
			if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
				return fail("making mounts private: %v", err)
			}
			if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
				return fail("mounting /proc: %v", err)
			}
		}
		fmt.Println(probeReply)
		return 0
	}
	if len(sp.Args) == 0 || sp.Path == "" {
		return fail("no command")
	}
	if sp.Stage2 {
		if err := restrict(sp, sp.Tmp); err != nil {
			return fail("%v", err)
		}
		if err := filterSockets(); err != nil {
			return fail("%v", err)
		}
		if sp.MaxMem > 0 && !inMemoryCgroup() {
			if err := setMemoryLimit(sp.MaxMem); err != nil {
				return fail("%v", err)
			}
		}
		// The capabilities are the calling thread's: drop them on the
		// thread that executes the command.
		runtime.LockOSThread()
		if err := dropCapabilities(); err != nil {
			return fail("%v", err)
		}
		err := syscall.Exec(sp.Path, sp.Args, os.Environ())
		return fail("executing %s: %v", sp.Path, err)
	}
	if sp.Namespaces {
		if err := protect(sp.Protect, sp.Seal, sp.Write); err != nil {
			return fail("%v", err)
		}
		// A /proc of this PID namespace: the command sees its own processes
		// only (and Landlock's all-threads call finds this process's threads).
		if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fail("mounting /proc: %v", err)
		}
	}
	if init && sp.MaxProcs > 0 {
		// Counted in this user namespace alone: the command's processes.
		if err := setProcessLimit(sp.MaxProcs); err != nil {
			return fail("%v", err)
		}
	}
	tmp, err := os.MkdirTemp(sp.TempDir, "tollgate-sandbox-")
	if err != nil {
		return fail("private temporary directory: %v", err)
	}
	defer os.RemoveAll(tmp)
	// The command runs in a second stage of this binary that enters the
	// Landlock domain and then executes it: this process stays outside the
	// domain, free to remove the temporary directory at the end.
	self, err := os.Executable()
	if err != nil {
		return fail("%v", err)
	}
	var deny *deniedFiles
	if len(sp.DenyExec) > 0 {
		deny = resolveDenied(sp.DenyExec, os.Getenv("PATH"))
	}
	stage := sp
	stage.Stage2, stage.Tmp = true, tmp
	if deny != nil {
		stage.Hidden = deny.hidden(sp.Path)
	}
	for _, h := range sp.Hide {
		// A hidden file that does not exist yet (a store's -journal, a
		// directory of logins made later) is hidden too: the directory
		// meant to hold it is then granted entry by entry, so that what
		// appears in it later gets no right.
		stage.Hidden = append(stage.Hidden, links.Resolve(h)) // absolute (Policy.check); links resolved as far as it exists
	}
	b, err := json.Marshal(stage)
	if err != nil {
		return fail("%v", err)
	}
	child := &exec.Cmd{Path: self, Args: []string{self, helperArg, string(b)}, Env: withTmp(os.Environ(), tmp),
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}}
	status, err := runChild(child, deny, forwardedSignals())
	if init {
		// Whatever the command left behind (daemons included) goes now, so
		// that none outlives the command or writes into the removed TMPDIR.
		// kill(-1) from the init of a PID namespace reaches only its members.
		_ = syscall.Kill(-1, syscall.SIGKILL)
		for {
			if _, err := syscall.Wait4(-1, nil, syscall.WALL, nil); errors.Is(err, syscall.ECHILD) {
				break
			} else if err != nil && !errors.Is(err, syscall.EINTR) {
				break
			}
		}
	}
	if err != nil {
		return fail("running %s: %v", sp.Path, err)
	}
	return exitCode(status)
}

// enterNamespaces runs this helper again, with the same arguments, as the
// init of new user, mount and PID namespaces, and returns its exit status.
func enterNamespaces(fail func(string, ...any) int) int {
	self, err := os.Executable()
	if err != nil {
		return fail("%v", err)
	}
	child := &exec.Cmd{Path: self, Args: slices.Clone(os.Args), Env: os.Environ(),
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, SysProcAttr: nsAttr()}
	status, err := runChild(child, nil, forwardedSignals())
	if err != nil {
		return fail("entering user, mount and PID namespaces: %v", err)
	}
	return exitCode(status)
}

// forwardedSignals returns a channel that receives the signals a caller
// sends to stop the helper (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1/2),
// for [runChild] to pass on.
func forwardedSignals() chan os.Signal {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
	return sigs
}

// exitCode is the exit status to end with for a child that ended with
// status: its own, or 128 plus the signal that killed it.
func exitCode(status unix.WaitStatus) int {
	if status.Signaled() {
		return 128 + int(status.Signal())
	}
	return status.ExitStatus()
}

// runChild starts child, forwards sigs to it, and waits for it to end;
// with deny, under the exec supervisor ([superviseExec]). An error is one
// starting or waiting for it.
func runChild(child *exec.Cmd, deny *deniedFiles, sigs chan os.Signal) (unix.WaitStatus, error) {
	started := make(chan struct{})
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-started:
		case <-done:
			return
		}
		for {
			select {
			case s := <-sigs:
				_ = child.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	if deny != nil {
		return superviseExec(child, deny, os.Stderr, started)
	}
	if err := child.Start(); err != nil {
		return 0, err
	}
	close(started)
	err := child.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return 0, err
	}
	ws, _ := child.ProcessState.Sys().(syscall.WaitStatus)
	return unix.WaitStatus(ws), nil
}

// dropCapabilities clears the calling thread's ambient, inheritable,
// permitted and effective capabilities, so that a command run as a user
// other than root holds none in the sandbox's user namespace (root regains
// them at execve, as root in that namespace; Landlock still refuses it every
// mount and unmount).
func dropCapabilities() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("dropping the ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var none [2]unix.CapUserData
	if err := unix.Capset(&hdr, &none[0]); err != nil {
		return fmt.Errorf("dropping the capabilities: %w", err)
	}
	return nil
}

// withTmp returns env with TMPDIR (and TMP, TEMP) set to tmp.
func withTmp(env []string, tmp string) []string {
	out := make([]string, 0, len(env)+3)
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if name != "TMPDIR" && name != "TMP" && name != "TEMP" {
			out = append(out, kv)
		}
	}
	return append(out, "TMPDIR="+tmp, "TMP="+tmp, "TEMP="+tmp)
}

// protect makes every existing path read-only in the helper's mount
// namespace: mounts stop propagating to the parent namespace, then each path
// is bind-mounted on itself and remounted read-only (keeping the flags the
// kernel locks on it).
func protect(paths, seal, writable []string) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	inWritable := func(p string) bool {
		for _, w := range writable {
			if within(p, realpath(w)) {
				return true
			}
		}
		return false
	}
	// The sealed directories stay while this helper runs (RemoveSealed).
	if err := lockSealParents(seal); err != nil {
		return err
	}
	// A sealed directory that is missing is created empty, so that it can
	// be mounted read-only and nothing can be created in its place.
	for _, d := range seal {
		if _, err := os.Lstat(d); errors.Is(err, fs.ErrNotExist) && inWritable(realpath(filepath.Dir(d))) {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return fmt.Errorf("sealing %s: %w", d, err)
			}
		}
	}
	var reals []string
	for _, p := range append(slices.Clone(paths), seal...) {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue // does not exist: nothing to protect
		}
		reals = append(reals, real)
	}
	// The directories between a writable tree and a protected path become
	// mount points of their own (bound onto themselves, still writable):
	// a mount point cannot be renamed or removed (EBUSY), so the command
	// cannot move a protected file's directory aside and put another in
	// its place. Shallowest first, so that each bind carries the ones below.
	var dirs []string
	for _, real := range reals {
		for d := filepath.Dir(real); d != "/" && d != "." && inWritable(d); d = filepath.Dir(d) {
			if !slices.Contains(dirs, d) {
				dirs = append(dirs, d)
			}
		}
	}
	slices.SortFunc(dirs, func(a, b string) int { return strings.Count(a, "/") - strings.Count(b, "/") })
	for _, d := range dirs {
		if err := unix.Mount(d, d, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("pinning %s in place: bind mount: %w", d, err)
		}
	}
	for _, real := range reals {
		if err := readOnly(real); err != nil {
			return err
		}
	}
	// The working directory was entered before these mounts, on what now
	// lies beneath them: enter it again by its name, so that relative paths
	// meet the mounts too.
	if wd, err := os.Getwd(); err == nil {
		if err := os.Chdir(wd); err != nil {
			return fmt.Errorf("entering %s again after the mounts: %w", wd, err)
		}
	}
	return nil
}

// realpath is p with its links resolved, or p when it does not exist.
func realpath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// readOnly bind-mounts real onto itself read-only, keeping the flags of
// the mount it lies on.
func readOnly(real string) error {
	if err := unix.Mount(real, real, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("protecting %s: bind mount: %w", real, err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(real, &st); err != nil {
		return fmt.Errorf("protecting %s: %w", real, err)
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY)
	for _, f := range [][2]int64{
		{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if st.Flags&f[0] != 0 {
			flags |= uintptr(f[1])
		}
	}
	if err := unix.Mount("", real, "", flags, ""); err != nil {
		return fmt.Errorf("protecting %s: read-only remount: %w", real, err)
	}
	return nil
}

// restrict enters the Landlock domain of sp (best effort: what the kernel
// offers, up to ABI 7).
func restrict(sp spec, tmp string) error {
	rules := readRules(sp.Read, sp.Hidden)
	write := append([]string{tmp}, sp.Write...)
	dirs, files := split(write)
	if len(dirs) > 0 {
		rules = append(rules, landlock.RWDirs(dirs...).WithRefer().IgnoreIfMissing())
	}
	if len(files) > 0 {
		rules = append(rules, landlock.RWFiles(files...).IgnoreIfMissing())
	}
	rules = append(rules, landlock.RWFiles("/dev/null", "/dev/zero", "/dev/full").IgnoreIfMissing())
	for _, port := range sp.ConnectTCP {
		rules = append(rules, landlock.ConnectTCP(port), landlock.BindTCP(port))
	}
	if err := landlock.V7.BestEffort().Restrict(rules...); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return nil
}

// split sorts existing paths into directories and other files; missing ones
// are dropped.
func split(paths []string) (dirs, files []string) {
	for _, p := range paths {
		fi, err := os.Stat(p)
		switch {
		case err != nil:
		case fi.IsDir():
			dirs = append(dirs, p)
		default:
			files = append(files, p)
		}
	}
	return dirs, files
}
