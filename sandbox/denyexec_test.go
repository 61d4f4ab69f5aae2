//go:build linux

package sandbox_test

import (
	"cmp"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
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
// would delete its own victim file; every victim survives. The program's
// own file is refused by Landlock (it is not even readable); a copy made
// before (in the workspace, where commands may execute what they write)
// by the exec supervisor, which says so, and the process it refuses ends
// as killed (137).
func TestDenyExecWhateverTheSpelling(t *testing.T) {
	s := newSandbox(t)
	py := python(t)
	ld := loader(t)
	ws := t.TempDir()
	if out, err := exec.Command("cp", "/usr/bin/rm", filepath.Join(ws, "c")).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if err := os.Symlink("/usr/bin/rm", filepath.Join(ws, "l")); err != nil {
		t.Fatal(err)
	}
	const supervisor, either = "refused to execute", ""
	spellings := []struct{ script, refusal string }{
		{"rm v", either},
		{"/bin/rm v", either},
		{"/usr/bin/rm v", either},
		{"\\rm v", either},
		{"command rm v", either},
		{"env rm v", either},
		{"x=r; ${x}m v", either},
		{"./l v", either},
		{"ln -s /usr/bin/rm ./r && ./r v", either},
		{"bash -c 'exec -a ls rm v'", either},
		{"find . -name v -exec rm {} +", either},
		{"echo v | xargs rm", either},
		{py + ` -c 'import os; os.execv("/usr/bin/rm", ["rm", "v"])'`, either},
		{ld + " /usr/bin/rm v", either},
		{"./c v", supervisor},
		{"cp ./c ./d && ./d v", supervisor},
		{"cat ./c > ./k && chmod +x ./k && ./k v", supervisor},
		{"cp ./c \"$TMPDIR/t\" && \"$TMPDIR/t\" v", supervisor},
		{"bash -c 'exec -a ls ./c v'", supervisor},
		{py + ` -c 'import subprocess; subprocess.run(["ls-like", "v"], executable="./c")'`, supervisor},
		{py + ` -c 'import os; f=os.memfd_create("m"); os.write(f, open("./c","rb").read()); os.execv("/proc/self/fd/%d" % f, ["m", "v"])'`, supervisor},
		{ld + " ./c v", supervisor},
	}
	p := sandbox.Policy{Mode: sandbox.Workspace, Workspace: ws, Read: pythonTree(py), DenyExec: []string{"rm"}}
	victim := filepath.Join(ws, "v")
	for i, sp := range spellings {
		if err := os.WriteFile(victim, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, out := run(t, s, p, ws, sp.script)
		if !exists(victim) {
			t.Errorf("spelling %d %q deleted the victim:\n%s", i, sp.script, out)
		}
		refused := strings.Contains(out, supervisor) || sp.refusal == either && strings.Contains(out, "Permission denied")
		if !refused {
			t.Errorf("spelling %d %q: no refusal (want %q):\n%s", i, sp.script, cmp.Or(sp.refusal, "any"), out)
		}
	}
	if code, out := run(t, s, p, ws, "exec ./c v"); code != 128+9 {
		t.Errorf("a refused command's status: %d, want %d (killed)\n%s", code, 128+9, out)
	}
	// The control: unconfined, the spellings delete, and programs that are
	// not denied run under the supervisor.
	for _, script := range []string{"rm v", "./c v"} {
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

// The files of a denied program are not readable either, so that an
// interpreter cannot read a denied script nor a copy be made; their
// directory stays listable and its other programs run.
func TestDenyExecHidesTheProgram(t *testing.T) {
	s := newSandbox(t)
	ws, bin := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "wipe"), []byte("#!/bin/sh\necho wiped\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	p := sandbox.Policy{Mode: sandbox.Workspace, Workspace: ws, Read: []string{bin}, DenyExec: []string{"rm", "wipe"}}
	script := "cat /usr/bin/rm > /dev/null && echo read; sh < " + bin + "/wipe; (. " + bin + "/wipe); " +
		"ls /usr/bin | grep -x rm; ls /bin/rm; ls " + bin + "; echo a | /bin/tr a b"
	_, out := run(t, s, p, ws, script)
	if strings.Contains(out, "read") || strings.Contains(out, "wiped") {
		t.Errorf("a denied program's file was read:\n%s", out)
	}
	for _, want := range []string{"\nrm\n/bin/rm\nwipe\nb\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q (listings and other programs):\n%s", want, out)
		}
	}
}

// A denied interpreter does not run, nor a script written for it, and a
// denied glob covers every name it matches.
func TestDenyExecInterpreterAndGlob(t *testing.T) {
	s := newSandbox(t)
	py := python(t)
	ws := t.TempDir()
	script := filepath.Join(ws, "s.py")
	if err := os.WriteFile(script, []byte("#!"+py+"\nprint('ran')\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	p := sandbox.Policy{Mode: sandbox.Workspace, Workspace: ws, Read: pythonTree(py), DenyExec: []string{"python*"}}
	for _, c := range []string{"python3 -c 'print(\"ran\")'", py + " -c 'print(\"ran\")'", "./s.py", "sh -c ./s.py"} {
		code, out := run(t, s, p, ws, c)
		if strings.Contains(out, "ran") || code == 0 {
			t.Errorf("%q ran a denied interpreter: exit %d\n%s", c, code, out)
		}
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
	// A copy of rm, and a stand-in for busybox: a copy of echo under that
	// name, so that its applet argument is all that names the program.
	for src, dst := range map[string]string{"/usr/bin/rm": "c", "/usr/bin/echo": "busybox"} {
		if out, err := exec.Command("cp", src, filepath.Join(ws, dst)).CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	p := sandbox.Policy{Mode: sandbox.Workspace, Workspace: ws, DenyExec: []string{"rm"}}
	for _, script := range []string{"./c v", "bash -c 'exec -a rm ./busybox v'", "./busybox rm v"} {
		if err := os.WriteFile(filepath.Join(ws, "v"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, out := run(t, s, p, ws, script)
		if !exists(filepath.Join(ws, "v")) || !strings.Contains(out, "refused to execute") || strings.Contains(out, "v\n") {
			t.Errorf("%q without namespaces: not refused\n%s", script, out)
		}
	}
	if _, out := run(t, s, p, ws, "./busybox ls"); out != "ls\n" {
		t.Errorf("an applet that is not denied: %q", out)
	}
}

// A child made with clone(2) and CLONE_UNTRACED would be no tracee of the
// exec supervisor: what it executes would go unjudged (a copy of a denied
// program ran). The filter refuses such a clone (EPERM) and clone3(2),
// whose flags it cannot read (ENOSYS: the C library falls back to clone).
func TestDenyExecNoUntracedChild(t *testing.T) {
	s := newSandbox(t)
	py := python(t)
	ws := t.TempDir()
	if out, err := exec.Command("cp", "/usr/bin/rm", filepath.Join(ws, "c")).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	p := sandbox.Policy{Mode: sandbox.Workspace, Workspace: ws, Read: pythonTree(py), DenyExec: []string{"rm"}}
	victim := filepath.Join(ws, "v")
	if err := os.WriteFile(victim, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	// clone(CLONE_UNTRACED|SIGCHLD) as fork(2) would, then clone3(NULL, 0).
	var nrClone, nrClone3 = 56, 435
	if runtime.GOARCH == "arm64" {
		nrClone = 220
	}
	script := py + ` -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
pid = libc.syscall(` + strconv.Itoa(nrClone) + `, 0x00800000|17, 0, 0, 0, 0)
if pid == 0:
    os.execv("./c", ["c", "v"])
print("clone", pid, ctypes.get_errno())
if pid > 0:
    os.waitpid(pid, 0)
ctypes.set_errno(0)
print("clone3", libc.syscall(` + strconv.Itoa(nrClone3) + `, 0, 0), ctypes.get_errno())
'`
	code, out := run(t, s, p, ws, script)
	if !exists(victim) {
		t.Fatalf("an untraced child executed a copy of a denied program: exit %d\n%s", code, out)
	}
	if want := "clone -1 1\nclone3 -1 38\n"; out != want {
		t.Fatalf("got exit %d, %q; want %q", code, out, want)
	}
}
