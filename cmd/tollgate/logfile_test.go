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
	if logs, err := l.open(nil); err == nil {
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
