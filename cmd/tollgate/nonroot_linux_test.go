package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// For a user other than root, tollgate (which is not dumpable) could not
// write the ID mappings of the sandbox's user namespace, so namespaces were
// off for every such user and `doctor` blamed the system: a setsid daemon
// outlived the run and the workspace's .claude settings were writable. As
// root, the test runs tollgate as nobody.
func TestSandboxForAUserOtherThanRoot(t *testing.T) {
	bin := tollgateBinary(t)
	dir, err := os.MkdirTemp("", "tollgate-nonroot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		cred = &syscall.Credential{Uid: 65534, Gid: 65534, NoSetGroups: true}
	}
	own := filepath.Join(dir, "tollgate")
	copyFile(t, bin, own)
	ws, state := filepath.Join(dir, "ws"), filepath.Join(dir, "state")
	claude := filepath.Join(ws, ".claude")
	for _, d := range []string{ws, state, claude} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	settings := filepath.Join(claude, "settings.json")
	if err := os.WriteFile(settings, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	marker := fmt.Sprintf("%d.%d", 700+os.Getpid()%100, os.Getpid())
	apWrite(t, ws, "s.yaml", `turns:
  - toolCalls:
      - {name: bash, args: {command: 'setsid sleep `+marker+` </dev/null >/dev/null 2>&1 & echo "{\"hooks\":{}}" > .claude/settings.json; echo "wrote=$?"'}}
  - text: done
`)
	if cred != nil {
		for _, p := range []string{dir, own, ws, state, claude, settings, filepath.Join(ws, "s.yaml")} {
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
	}
	tollgate := func(args ...string) (int, string) {
		c := exec.Command(own, args...)
		c.Dir = ws
		c.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir}
		c.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		_ = c.Run()
		return c.ProcessState.ExitCode(), out.String()
	}
	if _, out := tollgate("doctor"); !strings.Contains(out, "namespaces: user, mount, pid") {
		t.Fatalf("doctor, as uid %d:\n%s", uidOf(cred), out)
	}
	code, out := tollgate("run", "--model", "script:s.yaml", "--state-dir", state, "go")
	if code != 0 || !strings.Contains(out, "wrote=") {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	if pids := processesWith(t, "sleep\x00"+marker); len(pids) > 0 {
		for _, p := range pids {
			_ = killProcess(p)
		}
		t.Errorf("the setsid daemon outlived the run: pids %v\n%s", pids, out)
	}
	if b, _ := os.ReadFile(settings); string(b) != "{}" || strings.Contains(out, "wrote=0") {
		t.Errorf("the workspace's .claude settings were written: %q\n%s", b, out)
	}
}

// uidOf is the user a command runs as with cred.
func uidOf(cred *syscall.Credential) int {
	if cred == nil {
		return os.Geteuid()
	}
	return int(cred.Uid)
}
