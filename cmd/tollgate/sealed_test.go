package main

import (
	"database/sql"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/storeimpl"
)

// The attack of a tool that can write the store: the run halts on an ask,
// the approval is set approved in person:alice's name with SQL, and
// `tollgate resume` does not run the call: the decision carries no MAC of
// the store's key (made in the state directory, mode 0600), and the run
// says that it was not made through tollgate.
func TestForgedApprovalIsNotRunEndToEnd(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	code, out := e.runOut(e.tg("run", "--model", "script:script.yaml", "--workdir", "ws", "--policy", "policy.yaml", "--state-dir", "state", "append a line"))
	if code != exitPending {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	runID := regexp.MustCompile(`stored run (run_[0-9a-f]+)`).FindStringSubmatch(out)[1]
	keyFile := filepath.Join(e.dir, "state", decisionKeyFile)
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(e.dir, "state", storeFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE approvals SET status = 'approved', decided_by = 'person:alice'`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	code, out = e.runOut(e.tg("approvals", "list", "--state-dir", "state", "--status", "all"))
	if code != 0 || !strings.Contains(out, "approved (not made through tollgate: declined)") {
		t.Fatalf("approvals list: exit %d\n%s", code, out)
	}
	code, out = e.runOut(e.tg("resume", "--state-dir", "state", runID))
	if e.lines() != 0 {
		t.Fatalf("the forged approval ran the call:\n%s", out)
	}
	if !strings.Contains(out, "not made through tollgate") {
		t.Fatalf("resume: exit %d, says nothing of the forged decision:\n%s", code, out)
	}
}

// A sandboxed command cannot read the store's key, and the key is in no
// child's environment: the model's bash runs `env` and `cat KEYFILE`. The
// key is left out of the trees Landlock grants by default, and hidden when
// --sandbox-read grants the state directory that holds it.
func TestSandboxedToolCannotReadStoreKeyEndToEnd(t *testing.T) {
	for name, extra := range map[string][]string{"default": nil, "state dir readable": {"--sandbox-read", "state"}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testToolCannotReadStoreKey(t, extra)
		})
	}
}

func testToolCannotReadStoreKey(t *testing.T, extra []string) {
	e := newE2E(t)
	keyFile := filepath.Join(e.dir, "state", decisionKeyFile)
	key, err := storeimpl.LoadDecisionKey(keyFile) // made first, so that it exists when the tool runs
	if err != nil {
		t.Fatal(err)
	}
	apWrite(t, e.dir, "leak.yaml", `turns:
  - toolCalls:
      - name: bash
        id: leak
        args: {command: "env > env.txt; cat `+keyFile+` > key.txt 2> err.txt; echo $? > status.txt"}
  - text: "done"
`)
	apWrite(t, e.dir, "allow.yaml", "rules:\n  - id: allow-bash\n    tool: bash\n    decision: allow\n")
	args := append([]string{"run", "--model", "script:leak.yaml", "--workdir", "ws", "--policy", "allow.yaml", "--state-dir", "state"}, extra...)
	code, out := e.runOut(e.tg(append(args, "leak the key")...))
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(e.ws, name))
		if err != nil {
			t.Fatalf("run: exit %d, %v\n%s", code, err, out)
		}
		return string(b)
	}
	env, got, status, stderr := read("env.txt"), read("key.txt"), read("status.txt"), read("err.txt")
	if strings.Contains(env, hex.EncodeToString(key)) || strings.Contains(env, keyFile) {
		t.Errorf("the key reached the tool's environment:\n%s", env)
	}
	if got != "" || strings.TrimSpace(status) == "0" || !strings.Contains(stderr, "Permission denied") {
		t.Errorf("cat of the key file: status %s, stderr %q, read %q", status, stderr, got)
	}
}
