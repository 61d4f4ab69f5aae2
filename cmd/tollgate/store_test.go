package main

import (
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/pgtest"
)

// With $TOLLGATE_STORE_URL, every command uses the PostgreSQL store: a run
// halted by one command is listed, approved and resumed by the others, and
// no SQLite file is made in the state directory.
func TestPostgresStoreCommands(t *testing.T) {
	t.Parallel()
	db := pgtest.Database(t)
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.Mkdir(ws, 0o755)
	state := filepath.Join(dir, "state")
	vars := map[string]string{envStoreURL: db, envStateDir: state}
	tgMain := func(t *testing.T, args ...string) (int, string, string) {
		t.Helper()
		return tgMainIn(t, "", vars, args...)
	}
	script := apWrite(t, dir, "s.yaml", "turns:\n  - toolCalls: [{name: bash, id: gated, args: {command: \"echo ran >> count.txt\"}}]\n  - text: done\n")
	policy := apWrite(t, dir, "p.yaml", "rules:\n  - id: ask-bash\n    tool: bash\n    decision: ask\n")
	code, out, errOut := tgMain(t, "run", "--model", "script:"+script, "--workdir", ws, "--policy", policy, "x")
	if code != exitPending {
		t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
	}
	m := regexp.MustCompile(`stored run (run_[0-9a-f]+) in PostgreSQL 127\.0\.0\.1:\d+/tollgate_test_`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("run did not say it stored the run in PostgreSQL:\n%s", out)
	}
	runID := m[1]
	code, out, _ = tgMain(t, "runs", "list")
	if code != 0 || !regexp.MustCompile(runID+`\s+pending\s`).MatchString(out) {
		t.Fatalf("runs list: exit %d\n%s", code, out)
	}
	code, out, _ = tgMain(t, "approvals", "list")
	req := regexp.MustCompile(`(?m)^(req_[0-9a-f]+)\s+` + runID + `\s+pending\s+bash`).FindStringSubmatch(out)
	if code != 0 || req == nil {
		t.Fatalf("approvals list: exit %d\n%s", code, out)
	}
	if code, out, errOut := tgMain(t, "approvals", "approve", req[1]); code != 0 {
		t.Fatalf("approve: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := tgMain(t, "resume", runID); code != 0 || !strings.Contains(out, "done") {
		t.Fatalf("resume: exit %d\n%s%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "count.txt")); string(b) != "ran\n" {
		t.Fatalf("the approved call ran %q, want once", b)
	}
	if _, err := os.Stat(filepath.Join(state, "tollgate.db")); err == nil {
		t.Fatal("a SQLite store was made in the state directory")
	}

	// The same database named by --store instead: the printed commands
	// repeat it.
	vars[envStoreURL] = ""
	code, out, errOut = tgMain(t, "run", "--model", "script:"+script, "--workdir", ws, "--policy", policy, "--store", db, "y")
	if code != exitPending || !strings.Contains(out, "tollgate resume --store "+db+" run_") {
		t.Fatalf("run --store: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, _ := tgMain(t, "runs", "list", "--store", db); code != 0 || strings.Count(out, "run_") != 2 {
		t.Fatalf("runs list --store: exit %d\n%s", code, out)
	}
}

// --store refuses what is not a PostgreSQL URL, and a password on the
// command line.
func TestStoreFlagRefusals(t *testing.T) {
	t.Parallel()
	vars := map[string]string{envStoreURL: ""}
	u, err := url.Parse("postgres://tollgate@127.0.0.1:1/db")
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword("tollgate", "hunter2")
	for _, tc := range []struct{ url, want string }{
		{"/var/lib/tollgate.db", "want a PostgreSQL URL"},
		{"mysql://x@h/db", "want a PostgreSQL URL"},
		{u.String(), "holds a password"},
	} {
		code, out, errOut := tgMainIn(t, "", vars, "runs", "list", "--store", tc.url)
		if code != exitUsage || !strings.Contains(errOut, tc.want) || strings.Contains(out+errOut, "hunter2") {
			t.Errorf("--store %s: exit %d\n%s%s", tc.url, code, out, errOut)
		}
	}
	vars[envStoreURL] = "sqlite:///x"
	if code, _, errOut := tgMainIn(t, "", vars, "runs", "list"); code != exitUsage || !strings.Contains(errOut, "$"+envStoreURL) {
		t.Errorf("$%s=sqlite:///x: exit %d\n%s", envStoreURL, code, errOut)
	}
}

// run, serve and worker open their store the same way: a state directory
// that cannot be made is a configuration error naming it, in the same
// words, exit 2 without the usage hint.
func TestStateDirErrorsAlike(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	blocker := filepath.Join(dir, "file")
	writeTestFile(t, blocker, "not a directory")
	state := filepath.Join(blocker, "state") // under a file: cannot be made
	script := apWrite(t, dir, "s.yaml", "turns:\n  - text: done\n")
	server := apWrite(t, dir, "server.yaml", "addr: 127.0.0.1:0\nstore: sqlite\nagents:\n  a:\n    model: script:s.yaml\n    workdir: ws\n")
	worker := apWrite(t, dir, "worker.yaml", "database: sqlite:"+filepath.Join(dir, "dbos.db")+"\nstateDir: "+state+"\n")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"run", []string{"run", "--model", "script:" + script, "--workdir", ws, "--state-dir", state, "hi"}},
		{"serve", []string{"serve", "--config", server, "--state-dir", state}},
		{"worker", []string{"worker", "--config", worker}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := tgMainIn(t, "", map[string]string{envStoreURL: ""}, tc.args...)
			want := "state directory " + state + ": "
			if code != exitUsage || !strings.Contains(errOut, want) || strings.Contains(errOut, "--help") {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit %d naming %q, without the usage hint", code, errOut, exitUsage, want)
			}
		})
	}
}
