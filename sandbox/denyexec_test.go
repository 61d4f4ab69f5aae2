//go:build linux

package sandbox_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/sandbox"
)

// loader is the dynamic loader of this machine's programs.
func loader(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"} {
		if exists(p) {
			return p
		}
	}
	t.Fatalf("no dynamic loader known for %s", runtime.GOARCH)
	return ""
}

// A program the policy denies does not run, whatever the spelling: by
// name, by path, through a link, a copy, a copy in a memfd, an
// interpreter's exec, the dynamic loader or another argv[0]. Each script
// would delete its own victim file; every victim survives, and the
// programs that are not denied still run.
func TestDenyExecWhateverTheSpelling(t *testing.T) {
	s := newSandbox(t)
	py := python(t)
	ld := loader(t)
	ws := t.TempDir()
	spellings := []string{
		"rm v",
		"/bin/rm v",
		"/usr/bin/rm v",
		"\\rm v",
		"command rm v",
		"env rm v",
		"x=r; ${x}m v",
		"ln -s /usr/bin/rm ./r && ./r v",
		"cp /usr/bin/rm ./c && ./c v",
		"cat /usr/bin/rm > ./k && chmod +x ./k && ./k v",
		"cp /usr/bin/rm \"$TMPDIR/t\" && \"$TMPDIR/t\" v",
		"bash -c 'exec -a ls rm v'",
		"find . -name v -exec rm {} +",
		"echo v | xargs rm",
		py + ` -c 'import os; os.execv("/usr/bin/rm", ["rm", "v"])'`,
		py + ` -c 'import subprocess; subprocess.run(["ls-like", "v"], executable="/usr/bin/rm")'`,
		py + ` -c 'import os; f=os.memfd_create("m"); os.write(f, open("/usr/bin/rm","rb").read()); os.execv("/proc/self/fd/%d" % f, ["m", "v"])'`,
		ld + " /usr/bin/rm v",
		"cp /usr/bin/rm ./n && " + ld + " ./n v",
	}
	p := sandbox.Policy{Mode: sandbox.Workspace, Workspace: ws, Read: pythonTree(py), DenyExec: []string{"rm"}}
	for i, script := range spellings {
		victim := filepath.Join(ws, "v")
		if err := os.WriteFile(victim, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, out := run(t, s, p, ws, script)
		if !exists(victim) {
			t.Errorf("spelling %d %q deleted the victim:\n%s", i, script, out)
		}
		if !strings.Contains(out, "refused to execute") {
			t.Errorf("spelling %d %q: no refusal reported:\n%s", i, script, out)
		}
	}
	// The control: unconfined, the first spellings delete, and programs
	// that are not denied run under the supervisor.
	for _, script := range spellings[:3] {
		victim := filepath.Join(ws, "v")
		if err := os.WriteFile(victim, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		run(t, nil, p, ws, script)
		if exists(victim) {
			t.Fatalf("control: %q did not delete unconfined", script)
		}
	}
	code, out := run(t, s, p, ws, "echo a | tr a b; ls -d . && "+py+" -c 'print(6*7)'; sleep 0.01 & wait")
	if code != 0 || out != "b\n.\n42\n" {
		t.Fatalf("allowed programs under the supervisor: exit %d, %q", code, out)
	}
}

// A denied interpreter does not run, nor a script written for it, and a
// denied glob covers every name it matches; the exit status of a refused
// command is that of a killed one.
func TestDenyExecInterpreterAndGlob(t *testing.T) {
	s := newSandbox(t)
	py := python(t)
	ws := t.TempDir()
	script := filepath.Join(ws, "s.py")
	if err := os.WriteFile(script, []byte("#!"+py+"\nprint('ran')\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	p := sandbox.Policy{Mode: sandbox.Workspace, Workspace: ws, Read: pythonTree(py), DenyExec: []string{"python*"}}
	for _, c := range []string{"python3 -c 'print(\"ran\")'", py + " -c 'print(\"ran\")'", "./s.py", "sh -c ./s.py", "cp " + py + " ./p && ./p -c 'print(\"ran\")'"} {
		code, out := run(t, s, p, ws, c)
		if strings.Contains(out, "ran") || code == 0 {
			t.Errorf("%q ran a denied interpreter: exit %d\n%s", c, code, out)
		}
	}
	code, out := run(t, s, p, ws, "exec "+py+" -c 'print(1)'")
	if code != 128+9 {
		t.Errorf("a refused command's status: %d, want %d (killed)\n%s", code, 128+9, out)
	}
}

// A denied program that is a script does not run when executed, through
// its interpreter either.
func TestDenyExecScript(t *testing.T) {
	s := newSandbox(t)
	ws, bin := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "wipe"), []byte("#!/bin/sh\necho wiped\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	p := sandbox.Policy{Mode: sandbox.Workspace, Workspace: ws, Read: []string{bin}, DenyExec: []string{"wipe"}}
	for _, c := range []string{"wipe", bin + "/wipe", "sh " + bin + "/wipe", "cd " + bin + " && sh ./wipe"} {
		if _, out := run(t, s, p, ws, c); strings.Contains(out, "wiped") {
			t.Errorf("%q ran the denied script:\n%s", c, out)
		}
	}
}

// Wrap refuses a denied program that is not a base name or glob.
func TestDenyExecBadGlob(t *testing.T) {
	s := newSandbox(t)
	for _, g := range []string{"", "/bin/rm", "a\x00b"} {
		cmd := exec.Command("true")
		if _, err := s.Wrap(cmd, sandbox.Policy{Mode: sandbox.Workspace, DenyExec: []string{g}}); err == nil {
			t.Errorf("DenyExec %q: no error", g)
		}
	}
}

// The command's own program runs even when its name is denied (the bash
// tool's shell under a rule that denies bash); what it executes does not.
func TestDenyExecSparesTheCommandItself(t *testing.T) {
	s := newSandbox(t)
	ws := t.TempDir()
	p := sandbox.Policy{Mode: sandbox.Workspace, Workspace: ws, DenyExec: []string{"sh", "dash"}}
	_, out := run(t, s, p, ws, "echo own; sh -c 'echo nested'")
	if !strings.HasPrefix(out, "own\n") || strings.Contains(out, "nested") || !strings.Contains(out, "refused to execute") {
		t.Fatalf("own program and a nested denied one: %q", out)
	}
}

// Without namespaces (the helper is then no PID namespace's init, and
// /proc is the machine's) the supervisor refuses the same way, and a
// multi-call binary's denied applet is refused by its argument.
func TestDenyExecWithoutNamespaces(t *testing.T) {
	s, err := sandbox.New(&sandbox.Options{NoNamespaces: true})
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	// A stand-in for busybox: a copy of echo under that name, so that its
	// applet argument is all that names the program.
	if err := exec.Command("cp", "/usr/bin/echo", filepath.Join(ws, "busybox")).Run(); err != nil {
		t.Fatal(err)
	}
	p := sandbox.Policy{Mode: sandbox.Workspace, Workspace: ws, DenyExec: []string{"rm"}}
	for _, script := range []string{"rm v", "cp /usr/bin/rm c && ./c v", "./busybox rm v"} {
		if err := os.WriteFile(filepath.Join(ws, "v"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, out := run(t, s, p, ws, script)
		if !exists(filepath.Join(ws, "v")) || !strings.Contains(out, "refused to execute") || strings.Contains(out, "rm v") {
			t.Errorf("%q without namespaces: not refused\n%s", script, out)
		}
	}
	if _, out := run(t, s, p, ws, "./busybox ls"); out != "ls\n" {
		t.Errorf("an applet that is not denied: %q", out)
	}
}
