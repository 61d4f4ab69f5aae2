//go:build linux

package sandbox_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tollgate-dev/tollgate/sandbox"
)

// otherUser is the user the namespace test runs as when the tests run as
// root (as in CI): present on every Debian system.
const otherUser = "nobody"

// The namespaces hold for a user other than root in a process that is not
// dumpable, as tollgate is (it hides its environment): a setsid daemon dies
// with the command and a sealed .claude directory in the workspace stays
// unwritable. The ID mappings of a child forked by a process that is not
// dumpable could not be written by such a user (its /proc/PID/uid_map
// belongs to root), and namespaces were off for every user but root. As
// root, the test runs itself again as otherUser, with the tests of the
// process and memory limits.
func TestNamespacesForAUserOtherThanRoot(t *testing.T) {
	if os.Getuid() != 0 {
		checkNamespacesNotDumpable(t)
		return
	}
	u, err := user.Lookup(otherUser)
	if err != nil {
		t.Fatalf("needs the user %s to run as: %v", otherUser, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	// The test binary, in a directory that user may enter, and a home
	// (HOME, TMPDIR) of its own: go test's build directory is root's alone.
	// (t.TempDir's parent is root's alone too.)
	bin, err := os.MkdirTemp("", "tollgate-sandbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(bin) })
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	self := filepath.Join(bin, "sandbox.test")
	copyFile(t, os.Args[0], self, 0o755)
	home := filepath.Join(bin, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(home, uid, gid); err != nil {
		t.Fatal(err)
	}
	// The limits too: for such a user they are rlimits, where no cgroup
	// can be made.
	names := []string{t.Name(), "TestProcessLimit", "TestMemoryLimit"}
	cmd := exec.Command(self, "-test.run=^("+strings.Join(names, "|")+")$", "-test.v", "-test.count=1")
	cmd.Dir = home
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + home}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}}
	out, err := cmd.CombinedOutput()
	for _, name := range names {
		if err != nil || !strings.Contains(string(out), "--- PASS: "+name) {
			t.Fatalf("as %s (uid %d): %s: %v\n%s", otherUser, uid, name, err, out)
		}
	}
}

// checkNamespacesNotDumpable runs the checks as the current user, who is
// not root.
func checkNamespacesNotDumpable(t *testing.T) {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0) })
	s, err := sandbox.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if st := s.Status(); !st.Namespaces {
		t.Fatalf("uid %d, not dumpable: %s", os.Getuid(), st)
	}
	ws := t.TempDir()
	claude := filepath.Join(ws, ".claude")
	if err := os.Mkdir(claude, 0o755); err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(claude, "settings.json")
	if err := os.WriteFile(settings, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := sandbox.Policy{Mode: sandbox.Workspace, Workspace: ws, Seal: []string{claude}}
	marker := fmt.Sprintf("%d.%d", 800+os.Getpid()%100, os.Getpid())
	script := "setsid sleep " + marker + " </dev/null >/dev/null 2>&1 & " +
		`echo '{"hooks":{"PreToolUse":[]}}' > .claude/settings.json; echo x > .claude/settings.local.json; echo done`
	code, out := run(t, s, p, ws, script)
	if code != 0 || !strings.Contains(out, "done") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if pids := findProcesses(t, "sleep\x00"+marker); len(pids) > 0 {
		for _, p := range pids {
			_ = syscallKill(p)
		}
		t.Errorf("the setsid daemon outlived the command: pids %v", pids)
	}
	if b, _ := os.ReadFile(settings); string(b) != "{}" || exists(filepath.Join(claude, "settings.local.json")) {
		t.Errorf("the sealed .claude settings were written: %q\n%s", b, out)
	}
}

// copyFile copies the file from to the new file to with mode perm.
func copyFile(t *testing.T, from, to string, perm os.FileMode) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
