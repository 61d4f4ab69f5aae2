//go:build linux

package sandbox_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/sandbox"
)

// The test binary is its own helper: started by Wrap, it runs sandbox.Main
// and never reaches the tests. It is built once for the package.
func TestMain(m *testing.M) {
	sandbox.Main()
	os.Exit(m.Run())
}

func newSandbox(t *testing.T) *sandbox.Sandbox {
	t.Helper()
	s, err := sandbox.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status().ABI == 0 {
		t.Skip("this kernel offers no Landlock: the restrictions under test are not enforced here")
	}
	return s
}

// run runs sh -c script in dir, wrapped by s with p unless s is nil, and
// returns its exit code and combined output.
func run(t *testing.T, s *sandbox.Sandbox, p sandbox.Policy, dir, script string) (int, string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	if s != nil {
		if _, err := s.Wrap(cmd, p); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// An escape from the workspace is refused: the same script, unconfined,
// writes outside it.
func TestWritesOnlyInsideTheWorkspace(t *testing.T) {
	s := newSandbox(t)
	ws, outside := t.TempDir(), t.TempDir()
	script := fmt.Sprintf("echo in > in.txt; echo out > %s/escape.txt; echo $?", outside)
	p := sandbox.Policy{Mode: sandbox.Workspace, Workspace: ws}
	code, out := run(t, s, p, ws, script)
	if code != 0 || !exists(filepath.Join(ws, "in.txt")) {
		t.Fatalf("write inside the workspace failed: exit %d\n%s", code, out)
	}
	if exists(filepath.Join(outside, "escape.txt")) {
		t.Fatalf("the sandboxed command wrote outside the workspace:\n%s", out)
	}
	// Read-only mode: not even the workspace.
	code, out = run(t, s, sandbox.Policy{Mode: sandbox.ReadOnly, Workspace: ws}, ws, "echo again > again.txt")
	if code == 0 || exists(filepath.Join(ws, "again.txt")) {
		t.Fatalf("read-only mode wrote in the workspace: exit %d\n%s", code, out)
	}
	// Unconfined, the same script escapes: the check above means something.
	run(t, nil, p, ws, script)
	if !exists(filepath.Join(outside, "escape.txt")) {
		t.Fatal("control: the unconfined script did not write outside")
	}
}

// A protected directory inside the workspace (the state directory) stays
// read-only; the rest of the workspace is writable.
func TestProtectedPathInsideTheWorkspace(t *testing.T) {
	s := newSandbox(t)
	if !s.Status().Namespaces {
		t.Skip("no mount namespaces here: a protected path inside the workspace cannot be kept read-only (documented)")
	}
	ws := t.TempDir()
	state := filepath.Join(ws, ".tollgate")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "tollgate.db"), []byte("db"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := sandbox.Policy{Mode: sandbox.Workspace, Workspace: ws, Protect: []string{state}}
	code, out := run(t, s, p, ws, "cat .tollgate/tollgate.db; echo x >> .tollgate/tollgate.db; echo y > .tollgate/new; rm -f .tollgate/tollgate.db; echo z > other")
	if b, _ := os.ReadFile(filepath.Join(state, "tollgate.db")); string(b) != "db" {
		t.Errorf("the protected file changed: %q (exit %d)\n%s", b, code, out)
	}
	if exists(filepath.Join(state, "new")) {
		t.Errorf("a file was created in the protected directory\n%s", out)
	}
	if !strings.HasPrefix(out, "db") {
		t.Errorf("the protected file should stay readable:\n%s", out)
	}
	if !exists(filepath.Join(ws, "other")) {
		t.Errorf("the rest of the workspace should stay writable\n%s", out)
	}
}

// Reads outside the system trees, the workspace and Policy.Read are refused.
func TestReadsWhereConfigured(t *testing.T) {
	s := newSandbox(t)
	ws, secrets := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(secrets, "key"), []byte("hunter2"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := "cat " + filepath.Join(secrets, "key")
	code, out := run(t, s, sandbox.Policy{Mode: sandbox.Workspace, Workspace: ws}, ws, script)
	if code == 0 || strings.Contains(out, "hunter2") {
		t.Fatalf("read outside the allowed trees: exit %d\n%s", code, out)
	}
	code, out = run(t, s, sandbox.Policy{Mode: sandbox.Workspace, Workspace: ws, Read: []string{secrets}}, ws, script)
	if code != 0 || !strings.Contains(out, "hunter2") {
		t.Fatalf("read of a configured path failed: exit %d\n%s", code, out)
	}
}

// TCP connect is refused unless the port is allowed.
func TestTCPConnectOnlyToAllowedPorts(t *testing.T) {
	s := newSandbox(t)
	if s.Status().ABI < 4 {
		t.Skipf("Landlock ABI %d does not restrict TCP", s.Status().ABI)
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatal("needs bash (for /dev/tcp)")
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	ws := t.TempDir()
	script := fmt.Sprintf("exec bash -c 'echo > /dev/tcp/127.0.0.1/%d' && echo connected", port)
	code, out := run(t, s, sandbox.Policy{Mode: sandbox.Workspace, Workspace: ws}, ws, script)
	if code == 0 || strings.Contains(out, "connected") {
		t.Fatalf("connect to a port not allowed: exit %d\n%s", code, out)
	}
	code, out = run(t, s, sandbox.Policy{Mode: sandbox.Workspace, Workspace: ws, ConnectTCP: []uint16{uint16(port)}}, ws, script)
	if code != 0 {
		t.Fatalf("connect to an allowed port: exit %d\n%s", code, out)
	}
}

// A sandboxed command can neither signal the process that started it nor
// read its environment (where a provider key would be).
func TestNoSignalsOrEnvironOutside(t *testing.T) {
	s := newSandbox(t)
	if s.Status().ABI < 6 {
		t.Skipf("Landlock ABI %d does not scope signals", s.Status().ABI)
	}
	ws := t.TempDir()
	pid := os.Getpid()
	code, out := run(t, s, sandbox.Policy{Mode: sandbox.Workspace, Workspace: ws}, ws,
		fmt.Sprintf("kill -0 %d && echo signalled; cat /proc/%d/environ >/dev/null && echo read", pid, pid))
	if strings.Contains(out, "signalled") || strings.Contains(out, "read") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	// Unconfined, both work.
	_, out = run(t, nil, sandbox.Policy{}, ws, fmt.Sprintf("kill -0 %d && echo signalled; cat /proc/%d/environ >/dev/null && echo read", pid, pid))
	if !strings.Contains(out, "signalled") || !strings.Contains(out, "read") {
		t.Fatalf("control: %s", out)
	}
}

// A daemon started with setsid dies with the command: nothing is left once
// Wait returns.
func TestDaemonsDieWithTheCommand(t *testing.T) {
	s := newSandbox(t)
	if !s.Status().Namespaces {
		t.Skip("no PID namespaces here: daemons that setsid outlive the command (documented)")
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Fatal("needs setsid (util-linux)")
	}
	ws := t.TempDir()
	marker := fmt.Sprintf("%d.%d", 900+os.Getpid()%100, os.Getpid())
	script := "setsid sleep " + marker + " </dev/null >/dev/null 2>&1 & echo started"
	code, out := run(t, s, sandbox.Policy{Mode: sandbox.Workspace, Workspace: ws}, ws, script)
	if code != 0 || !strings.Contains(out, "started") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if pids := findProcesses(t, "sleep\x00"+marker); len(pids) > 0 {
		for _, p := range pids {
			_ = syscallKill(p)
		}
		t.Fatalf("the setsid daemon outlived the command: pids %v", pids)
	}
}

// The command gets a private TMPDIR, removed when it ends, and its exit
// status comes through.
func TestPrivateTempDirAndExitStatus(t *testing.T) {
	s := newSandbox(t)
	ws := t.TempDir()
	code, out := run(t, s, sandbox.Policy{Mode: sandbox.ReadOnly, Workspace: ws}, ws, `echo "$TMPDIR"; echo x > "$TMPDIR/f" && exit 7`)
	dir := strings.TrimSpace(out)
	if code != 7 || !strings.Contains(dir, "tollgate-sandbox-") {
		t.Fatalf("exit %d, output %q", code, out)
	}
	if exists(dir) {
		t.Errorf("the private temporary directory %s was not removed", dir)
	}
}

func TestNewRefusesAHelperWithoutMain(t *testing.T) {
	if _, err := sandbox.New(&sandbox.Options{Helper: "/bin/true"}); err == nil || !strings.Contains(err.Error(), "sandbox.Main") {
		t.Fatalf("err = %v", err)
	}
}

func TestWrapOffChangesNothing(t *testing.T) {
	s := newSandbox(t)
	cmd := exec.Command("sh", "-c", "true")
	before := cmd.Path
	if tree, err := s.Wrap(cmd, sandbox.Policy{Mode: sandbox.Off}); err != nil || tree || cmd.Path != before {
		t.Fatalf("Wrap(off): tree %v, err %v, path %s", tree, err, cmd.Path)
	}
	if _, err := s.Wrap(exec.Command("sh"), sandbox.Policy{Mode: sandbox.Workspace, Workspace: "rel"}); err == nil {
		t.Error("a relative workspace was accepted")
	}
	for _, m := range []string{"off", "workspace", "read-only"} {
		if _, err := sandbox.ParseMode(m); err != nil {
			t.Error(err)
		}
	}
	if _, err := sandbox.ParseMode("on"); err == nil || !strings.Contains(err.Error(), "off, workspace or read-only") {
		t.Errorf("ParseMode(on): %v", err)
	}
}

// findProcesses returns the PIDs whose command line contains needle
// (arguments separated by NUL).
func findProcesses(t *testing.T, needle string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(needle)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Without namespaces, Landlock still confines writes and the private TMPDIR
// is still removed; a protected path inside the workspace cannot be kept
// read-only, and Wrap says so once.
func TestWithoutNamespaces(t *testing.T) {
	var logs bytes.Buffer
	s, err := sandbox.New(&sandbox.Options{NoNamespaces: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if s.Status().ABI == 0 {
		t.Skip("this kernel offers no Landlock")
	}
	if st := s.Status(); st.Namespaces || !strings.Contains(st.String(), "namespaces unavailable: turned off") {
		t.Fatalf("NoNamespaces was ignored or not given as the reason: %s", st)
	}
	ws, outside := t.TempDir(), t.TempDir()
	p := sandbox.Policy{Mode: sandbox.Workspace, Workspace: ws, Protect: []string{filepath.Join(ws, ".tollgate")}}
	for range 2 {
		code, out := run(t, s, p, ws, fmt.Sprintf(`echo in > in.txt; echo out > %s/escape.txt; echo "$TMPDIR"`, outside))
		if !exists(filepath.Join(ws, "in.txt")) || exists(filepath.Join(outside, "escape.txt")) {
			t.Fatalf("exit %d\n%s", code, out)
		}
		if lines := strings.Split(strings.TrimSpace(out), "\n"); exists(lines[len(lines)-1]) {
			t.Errorf("TMPDIR %s left behind", lines[len(lines)-1])
		}
	}
	if n := strings.Count(logs.String(), "no mount namespace"); n != 1 {
		t.Errorf("the warning about the protected path was logged %d times, want 1:\n%s", n, logs.String())
	}
}

// A protected file in a subdirectory of the workspace cannot be swapped by
// renaming or removing its directory and writing another in its place: the
// directories above it are mount points of the command's own.
func TestProtectedFileDirectoryCannotBeSwapped(t *testing.T) {
	s := newSandbox(t)
	if !s.Status().Namespaces {
		t.Skip("no mount namespaces here: a protected path inside the workspace cannot be kept read-only (documented)")
	}
	ws := t.TempDir()
	conf := filepath.Join(ws, "a", "conf")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		t.Fatal(err)
	}
	pol := filepath.Join(conf, "policy.yaml")
	if err := os.WriteFile(pol, []byte("rules: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := sandbox.Policy{Mode: sandbox.Workspace, Workspace: ws, Protect: []string{pol}}
	for _, script := range []string{
		"mv a/conf a/conf.orig; mkdir -p a/conf; printf 'autonomy: full_auto\\n' > a/conf/policy.yaml",
		"mv a a.orig; mkdir -p a/conf; printf 'autonomy: full_auto\\n' > a/conf/policy.yaml",
		"rm -rf a; mkdir -p a/conf; printf 'autonomy: full_auto\\n' > a/conf/policy.yaml",
	} {
		code, out := run(t, s, p, ws, script+"; echo z > other")
		if b, err := os.ReadFile(pol); err != nil || string(b) != "rules: []\n" {
			t.Errorf("%s: the protected file is now %q, %v (exit %d)\n%s", script, b, err, code, out)
		}
		if !exists(filepath.Join(ws, "other")) {
			t.Errorf("%s: the rest of the workspace should stay writable\n%s", script, out)
		}
	}
	if !exists(filepath.Join(ws, "a", "conf")) {
		t.Fatal("the protected file's directory was moved")
	}
}

// A sealed directory is read-only to the command whether it exists or
// not: a missing one is created empty first, so nothing can be planted in
// it; an existing one keeps its files.
func TestSealedDirectory(t *testing.T) {
	s := newSandbox(t)
	if !s.Status().Namespaces {
		t.Skip("no mount namespaces here: a sealed directory inside the workspace cannot be kept read-only (documented)")
	}
	ws := t.TempDir()
	claude := filepath.Join(ws, ".claude")
	p := sandbox.Policy{Mode: sandbox.Workspace, Workspace: ws, Seal: []string{claude}}
	plant := "mkdir -p .claude; echo '{\"hooks\":{}}' > .claude/settings.local.json; mv .claude .claude.x; mkdir .claude; echo '{}' > .claude/settings.json; echo z > other"
	code, out := run(t, s, p, ws, plant)
	if exists(filepath.Join(claude, "settings.local.json")) || exists(filepath.Join(claude, "settings.json")) || exists(filepath.Join(ws, ".claude.x")) {
		t.Fatalf("a file was planted in the sealed directory (exit %d)\n%s", code, out)
	}
	if fi, err := os.Stat(claude); err != nil || !fi.IsDir() {
		t.Fatalf("the missing sealed directory was not created: %v", err)
	}
	if !exists(filepath.Join(ws, "other")) {
		t.Fatalf("the rest of the workspace should stay writable\n%s", out)
	}
	if err := os.WriteFile(filepath.Join(claude, "settings.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out = run(t, s, p, ws, "cat .claude/settings.json; echo x > .claude/settings.json; rm -f .claude/settings.json")
	if b, _ := os.ReadFile(filepath.Join(claude, "settings.json")); string(b) != "{}" || !strings.HasPrefix(out, "{}") {
		t.Fatalf("the existing settings changed or were unreadable: %q (exit %d)\n%s", b, code, out)
	}
}

// Landlock (up to ABI 7) does not govern connecting to a Unix domain
// socket by its path: a sandboxed command reached any socket its user
// may, outside the workspace too (the store's PostgreSQL with peer
// authentication, a Docker daemon, an SSH agent, the desktop bus). It can
// no longer make a Unix socket at all; socketpair, TCP within the allowed
// ports, and everything unconfined work as before.
func TestNoUnixSocketsOutside(t *testing.T) {
	s := newSandbox(t)
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("needs python3 (scripts/test.sh installs it)")
	}
	if real, err := filepath.EvalSymlinks(py); err == nil {
		py = real
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "api.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("secret\n"))
			c.Close()
		}
	}()
	ws := t.TempDir()
	client := fmt.Sprintf(`%s -c 'import socket,sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
print("got", s.recv(16))' %s`, py, sock)
	p := sandbox.Policy{Mode: sandbox.Workspace, Workspace: ws, Read: []string{filepath.Dir(py), filepath.Dir(filepath.Dir(py))}}
	if code, out := run(t, s, p, ws, client); code == 0 || strings.Contains(out, "secret") {
		t.Fatalf("a sandboxed command reached a Unix socket outside the workspace: exit %d\n%s", code, out)
	}
	pair := fmt.Sprintf(`%s -c 'import socket
a, b = socket.socketpair()
a.send(b"x")
print("pair", b.recv(1))'`, py)
	if code, out := run(t, s, p, ws, pair); code != 0 || !strings.Contains(out, "pair b'x'") {
		t.Fatalf("socketpair: exit %d\n%s", code, out)
	}
	// Unconfined, the same client reads the socket.
	if code, out := run(t, nil, sandbox.Policy{}, ws, client); code != 0 || !strings.Contains(out, "secret") {
		t.Fatalf("control: exit %d\n%s", code, out)
	}
	// Route netlink (interfaces, addresses) stays open; sock_diag, which
	// lists every socket of the machine, does not.
	netlink := fmt.Sprintf(`%s -c 'import socket
socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0).close()
print("route ok")
try:
    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 4).close()
    print("diag ok")
except OSError as e:
    print("diag refused", e.errno)'`, py)
	if code, out := run(t, s, p, ws, netlink); code != 0 || !strings.Contains(out, "route ok") || strings.Contains(out, "diag ok") {
		t.Fatalf("netlink in the sandbox: exit %d\n%s", code, out)
	}
	if code, out := run(t, nil, sandbox.Policy{}, ws, netlink); code != 0 || !strings.Contains(out, "diag ok") {
		t.Fatalf("netlink control: exit %d\n%s", code, out)
	}
}

// Landlock's TCP rules govern TCP alone: a stream socket made with
// IPPROTO_MPTCP (262) connected and bound where TCP was refused, and so
// reached a store's PostgreSQL on loopback and approved its own calls.
// In the sandbox every IPv4 and IPv6 socket other than TCP and UDP is
// refused (MPTCP, SCTP, UDP-Lite, raw); unconfined, MPTCP connects.
func TestNoMPTCPOrOtherInetProtocols(t *testing.T) {
	s := newSandbox(t)
	if s.Status().ABI < 4 {
		t.Skipf("Landlock ABI %d does not restrict TCP", s.Status().ABI)
	}
	py := python(t)
	port := acceptAndClose(t)
	ws := t.TempDir()
	probe := fmt.Sprintf(`%s -c 'import socket
for name, fam, typ, proto in [("mptcp", socket.AF_INET, socket.SOCK_STREAM, 262),
        ("mptcp6", socket.AF_INET6, socket.SOCK_STREAM, 262),
        ("sctp", socket.AF_INET, socket.SOCK_STREAM, 132),
        ("udplite", socket.AF_INET, socket.SOCK_DGRAM, 136),
        ("raw", socket.AF_INET, socket.SOCK_RAW, 6)]:
    try:
        s = socket.socket(fam, typ, proto)
    except OSError as e:
        print(name, "refused", e.errno)
        continue
    print(name, "made")
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)
s.connect(("127.0.0.1", %d))
print("mptcp connected")'`, py, port)
	p := sandbox.Policy{Mode: sandbox.Workspace, Workspace: ws, Read: pythonTree(py)}
	code, out := run(t, s, p, ws, probe)
	for _, name := range []string{"mptcp", "mptcp6", "sctp", "udplite", "raw"} {
		if !strings.Contains(out, name+" refused 13") {
			t.Errorf("%s socket in the sandbox: not refused with EACCES\n%s", name, out)
		}
	}
	if code == 0 || strings.Contains(out, "mptcp connected") {
		t.Fatalf("an MPTCP socket connected from the sandbox: exit %d\n%s", code, out)
	}
	// TCP and UDP sockets, blocking or not, are still made.
	plain := fmt.Sprintf(`%s -c 'import socket
socket.socket(socket.AF_INET, socket.SOCK_STREAM | socket.SOCK_NONBLOCK, 0).close()
socket.socket(socket.AF_INET6, socket.SOCK_STREAM, socket.IPPROTO_TCP).close()
socket.socket(socket.AF_INET, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC, socket.IPPROTO_UDP).close()
print("plain ok")'`, py)
	if code, out := run(t, s, p, ws, plain); code != 0 || !strings.Contains(out, "plain ok") {
		t.Fatalf("TCP and UDP sockets in the sandbox: exit %d\n%s", code, out)
	}
	// Unconfined, the same connection is made: the refusal is the sandbox's.
	if code, out := run(t, nil, sandbox.Policy{}, ws, probe); code != 0 || !strings.Contains(out, "mptcp connected") {
		t.Fatalf("control: MPTCP unconfined: exit %d\n%s", code, out)
	}
}

// The reproduction as reported: a short LD_PRELOAD shim turns every
// TCP socket of any program into an MPTCP one. With it, bash's /dev/tcp
// neither connects nor binds from the sandbox; without the sandbox it
// connects.
func TestMPTCPShimDoesNotConnect(t *testing.T) {
	s := newSandbox(t)
	if s.Status().ABI < 4 {
		t.Skipf("Landlock ABI %d does not restrict TCP", s.Status().ABI)
	}
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Fatal("needs gcc (scripts/test.sh installs it) to build the LD_PRELOAD shim")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatal("needs bash (for /dev/tcp)")
	}
	shimDir := t.TempDir()
	src := filepath.Join(shimDir, "mptcp.c")
	if err := os.WriteFile(src, []byte(`#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <sys/socket.h>
int socket(int d, int t, int p) {
	int (*real)(int, int, int) = (int (*)(int, int, int))dlsym(RTLD_NEXT, "socket");
	if ((d == AF_INET || d == AF_INET6) && (t & 0xf) == SOCK_STREAM && (p == 0 || p == IPPROTO_TCP)) p = 262;
	return real(d, t, p);
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	shim := filepath.Join(shimDir, "mptcp.so")
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-o", shim, src, "-ldl").CombinedOutput(); err != nil {
		t.Fatalf("building the shim: %v\n%s", err, out)
	}
	port := acceptAndClose(t)
	ws := t.TempDir()
	connect := fmt.Sprintf("LD_PRELOAD=%s bash -c 'echo > /dev/tcp/127.0.0.1/%d' && echo connected", shim, port)
	p := sandbox.Policy{Mode: sandbox.Workspace, Workspace: ws, Read: []string{shimDir}}
	if code, out := run(t, s, p, ws, connect); code == 0 || strings.Contains(out, "connected") {
		t.Fatalf("the MPTCP shim connected from the sandbox: exit %d\n%s", code, out)
	}
	if code, out := run(t, nil, sandbox.Policy{}, ws, connect); code != 0 || !strings.Contains(out, "connected") {
		t.Fatalf("control: the shim unconfined: exit %d\n%s", code, out)
	}
	// Binding a listening MPTCP socket is refused too (python, since bash
	// cannot listen).
	py := python(t)
	bind := fmt.Sprintf(`%s -c 'import socket
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)
s.bind(("127.0.0.1", 0)); s.listen(1)
print("mptcp listening")'`, py)
	p.Read = append(p.Read, pythonTree(py)...)
	if code, out := run(t, s, p, ws, bind); code == 0 || strings.Contains(out, "listening") {
		t.Fatalf("an MPTCP socket listened in the sandbox: exit %d\n%s", code, out)
	}
	if code, out := run(t, nil, sandbox.Policy{}, ws, bind); code != 0 || !strings.Contains(out, "listening") {
		t.Fatalf("control: MPTCP listen unconfined: exit %d\n%s", code, out)
	}
}

// python is the real path of python3, which scripts/test.sh installs.
func python(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("needs python3 (scripts/test.sh installs it)")
	}
	if real, err := filepath.EvalSymlinks(py); err == nil {
		py = real
	}
	return py
}

// pythonTree is what a sandboxed python3 at py must read beyond the
// system's defaults: its directory and the one above it.
func pythonTree(py string) []string {
	return []string{filepath.Dir(py), filepath.Dir(filepath.Dir(py))}
}

// acceptAndClose listens on a loopback port for the test's length,
// closing every connection it accepts, and returns the port.
func acceptAndClose(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// The helper is started to be probed once per process: a second sandbox
// on the same helper starts it no more.
func TestProbedOnce(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	helper := filepath.Join(dir, "helper")
	script := fmt.Sprintf("#!/bin/sh\necho x >> %q\nexec %q \"$@\"\n", count, exe)
	if err := os.WriteFile(helper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	starts := func() int {
		b, _ := os.ReadFile(count)
		return bytes.Count(b, []byte("x"))
	}
	if _, err := sandbox.New(&sandbox.Options{Helper: helper}); err != nil {
		t.Skipf("no sandbox here: %v", err)
	}
	first := starts()
	if first == 0 {
		t.Fatal("the helper was never started")
	}
	for range 3 {
		if _, err := sandbox.New(&sandbox.Options{Helper: helper}); err != nil {
			t.Fatal(err)
		}
	}
	if n := starts(); n != first {
		t.Fatalf("three more sandboxes started the helper %d more times, want 0", n-first)
	}
}
