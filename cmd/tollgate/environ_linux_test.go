package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// With the sandbox off, a bash call read the provider key from tollgate's
// own environment through /proc/$PPID/environ. tollgate is no longer
// dumpable, so a child running as the same user (not root: root may read
// any process's memory) is refused.
func TestParentEnvironIsUnreadable(t *testing.T) {
	t.Parallel()
	const key = "sk-environ-secret-0123456789"
	bin := tollgateBinary(t)
	dir, err := os.MkdirTemp("", "tollgate-environ-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// As root, run tollgate as nobody, so that its child is a same-user
	// process without CAP_SYS_PTRACE.
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	own := filepath.Join(dir, "tollgate")
	copyFile(t, bin, own)
	ws := filepath.Join(dir, "ws")
	state := filepath.Join(dir, "state")
	for _, d := range []string{ws, state} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	apWrite(t, ws, "s.yaml", `turns:
  - toolCalls:
      - {name: bash, args: {command: 'tr "\0" "\n" < /proc/$PPID/environ; echo "status=$?"'}}
  - text: done
`)
	if cred != nil {
		for _, p := range []string{dir, own, ws, state, filepath.Join(ws, "s.yaml")} {
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
	}
	var out bytes.Buffer
	// A process another test forks while the copy was open for writing
	// holds it until that process executes its own program; until then the
	// copy cannot be executed ("text file busy"), so that is tried again.
	for attempt := 0; ; attempt++ {
		out.Reset()
		c := exec.Command(own, "run", "--model", "script:s.yaml", "--sandbox", "off", "--state-dir", state, "go")
		c.Dir = ws
		c.Env = append(os.Environ(), "OPENAI_API_KEY="+key, "HOME="+dir)
		c.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		c.Stdout, c.Stderr = &out, &out
		err := c.Run()
		if errors.Is(err, syscall.ETXTBSY) && attempt < 100 {
			continue
		}
		if err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		break
	}
	if strings.Contains(out.String(), key) || !strings.Contains(out.String(), "status=1") {
		t.Errorf("the tool read tollgate's environment:\n%s", out.String())
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
