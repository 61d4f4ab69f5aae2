package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --log-file does not write through a link a tool could have planted in
// the workspace: the user's file it points to stays as it was.
func TestLogFileRefusesASymbolicLink(t *testing.T) {
	ws, home := t.TempDir(), t.TempDir()
	rc := filepath.Join(home, ".bashrc")
	if err := os.WriteFile(rc, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(ws, "tollgate.log")
	if err := os.Symlink(rc, link); err != nil {
		t.Fatal(err)
	}
	l := &logFlags{file: link}
	if logs, err := l.open(nil, ws); err == nil {
		logs.Info.Info("written")
		logs.Close()
		t.Fatal("the log file was opened through the link")
	} else if !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("err = %v, want it to say the path is a symbolic link", err)
	}
	if b, _ := os.ReadFile(rc); string(b) != "mine\n" {
		t.Errorf("the link's target changed: %q", b)
	}
}

// A link a tool could have planted in place of a directory of the
// workspace is not followed either: `tollgate run` refuses a --log-file, a
// --records file and a --state-dir whose path goes through one, and writes nothing where it
// leads; a link above the workspace is the user's and is followed.
func TestRunRefusesLinkedDirectoriesInTheWorkspace(t *testing.T) {
	top, outside := t.TempDir(), t.TempDir()
	real := filepath.Join(top, "real")
	ws := filepath.Join(real, "ws")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "logs")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(top, "home")); err != nil {
		t.Fatal(err)
	}
	script := apWrite(t, top, "script.yaml", "turns:\n  - text: done\n")
	run := func(extra ...string) (int, string) {
		args := append([]string{"run", "--model", "script:" + script, "--workdir", filepath.Join(top, "home", "ws")}, extra...)
		code, out, errb := apMain(t, append(args, "hello")...)
		return code, out + errb
	}
	state := filepath.Join(top, "state")
	if code, out := run("--state-dir", state, "--log-file", filepath.Join(ws, "logs", "run.log")); code != exitUsage || !strings.Contains(out, "symbolic link") {
		t.Errorf("--log-file through a link: exit %d\n%s", code, out)
	}
	if code, out := run("--state-dir", filepath.Join(ws, "logs", "state")); code != exitUsage || !strings.Contains(out, "inside the workspace") {
		t.Errorf("--state-dir through a link: exit %d\n%s", code, out)
	}
	if code, out := run("--state-dir", state, "--records", filepath.Join(ws, "logs", "records.jsonl")); code == exitDone || !strings.Contains(out, "symbolic link") {
		t.Errorf("--records through a link: exit %d\n%s", code, out)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("written through the link: %v", entries)
	}
	// Through the link above the workspace: the user's, followed.
	if code, out := run("--state-dir", state, "--log-file", filepath.Join(top, "home", "ws", "run.log")); code != exitDone {
		t.Errorf("--log-file through a link above the workspace: exit %d\n%s", code, out)
	}
}
