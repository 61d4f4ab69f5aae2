//go:build linux

package sandbox_test

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/sandbox"
)

// forkScript forks n children that wait, counts the forks that succeed,
// prints the count, and ends the children.
const forkScript = `import os, signal, sys
pids = []
for i in range(%d):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        signal.pause()
        os._exit(0)
    pids.append(pid)
print("forked", len(pids))
for p in pids:
    os.kill(p, signal.SIGKILL)
for p in pids:
    os.waitpid(p, 0)
`

// systemPython is Debian's python3, which a sandboxed command may run (one
// in the home directory, as pyenv's, it may not).
func systemPython(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3", "/usr/local/bin/python3"} {
		if _, err := exec.LookPath(p); err == nil {
			return p
		}
	}
	t.Fatal("needs python3 in /usr/bin (scripts/test.sh installs it)")
	return ""
}

// A sandboxed command cannot have more processes than Policy.MaxProcesses
// (2,000 background sleeps started before): a fork bomb stops growing.
// Unconfined, the same script forks all it asks for.
func TestProcessLimit(t *testing.T) {
	s := newSandbox(t)
	py := systemPython(t)
	ws := t.TempDir()
	script := fmt.Sprintf("%s -c '%s'", py, fmt.Sprintf(forkScript, 300))
	forked := func(out string) int {
		_, n, _ := strings.Cut(out, "forked ")
		c, err := strconv.Atoi(strings.TrimSpace(n))
		if err != nil {
			t.Fatalf("no count in %q", out)
		}
		return c
	}
	p := sandbox.Policy{Mode: sandbox.Workspace, Workspace: ws, MaxProcesses: 64}
	code, out := run(t, s, p, ws, script)
	if n := forked(out); code != 0 || n >= 64 || n == 0 {
		t.Fatalf("forked %d with MaxProcesses 64 (exit %d, %s)\n%s", n, code, s.Status(), out)
	}
	if code, out := run(t, nil, p, ws, script); code != 0 || forked(out) != 300 {
		t.Fatalf("control: exit %d\n%s", code, out)
	}
}

// A sandboxed command cannot allocate more than Policy.MaxMemory.
func TestMemoryLimit(t *testing.T) {
	s := newSandbox(t)
	py := systemPython(t)
	ws := t.TempDir()
	script := py + ` -c 'b = bytearray(512 << 20); print("allocated", len(b))'`
	p := sandbox.Policy{Mode: sandbox.Workspace, Workspace: ws, MaxMemory: 128 << 20}
	if code, out := run(t, s, p, ws, script); code == 0 || strings.Contains(out, "allocated") {
		t.Fatalf("allocated 512 MiB with MaxMemory 128 MiB (exit %d)\n%s", code, out)
	}
	p.MaxMemory = 0 // the default, half the machine's memory or more
	if code, out := run(t, s, p, ws, script); code != 0 || !strings.Contains(out, "allocated") {
		t.Fatalf("the default limit refused 512 MiB: exit %d\n%s", code, out)
	}
}
