package dbosengine_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/dbosengine"
)

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "w.yaml")
	doc := "database: sqlite:dbos.db\nstateDir: state\nstoreKeyFile: keys/decision.key\nqueue: q\nconcurrency: 3\nexecutorId: a\nheartbeat: 1s\ndeadAfter: 9s\nqueuePoll: 20ms\nanswerPoll: 1m\n"
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := dbosengine.LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if c.Database != "sqlite:"+filepath.Join(dir, "dbos.db") || c.StateDir != filepath.Join(dir, "state") || c.StoreKeyFile != filepath.Join(dir, "keys", "decision.key") {
		t.Errorf("relative paths are not resolved against the file's directory: %+v", c)
	}
	o, err := c.Options()
	if err != nil {
		t.Fatal(err)
	}
	if o.Queue != "q" || o.Concurrency != 3 || o.ExecutorID != "a" || o.Heartbeat != time.Second || o.DeadAfter != 9*time.Second ||
		o.QueuePoll != 20*time.Millisecond || o.AnswerPoll != time.Minute {
		t.Errorf("options: %+v", o)
	}
	t.Setenv("TOLLGATE_TEST_DBOS_URL", "postgres://u:secret@db/x")
	c = dbosengine.Config{DatabaseEnv: "TOLLGATE_TEST_DBOS_URL"}
	if o, err := c.Options(); err != nil || o.DatabaseURL != "postgres://u:secret@db/x" {
		t.Errorf("databaseEnv: %v %v", o.DatabaseURL, err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("database: sqlite:x\n#"+strings.Repeat("x", dbosengine.MaxConfigSize)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := dbosengine.LoadConfig(big); err == nil || !strings.Contains(err.Error(), "big.yaml") {
		t.Errorf("a file over the limit: %v", err)
	}
}

// A bad value is reported at its line and column, with its key.
func TestLoadConfigValueErrorsNamePosition(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TOLLGATE_TEST_UNSET_DBOS", "")
	for _, tc := range []struct{ doc, want string }{
		{"database: sqlite:d.db\nheartbeat: 5\n", ":2:12: heartbeat: \"5\" is not a positive duration"},
		{"database: sqlite:d.db\nconcurrency:   -2\n", ":2:16: concurrency: -2 is negative"},
		{"database: sqlite:d.db\nstore: mysql://x\n", ":2:8: store: want a PostgreSQL URL"},
		{"databaseEnv: TOLLGATE_TEST_UNSET_DBOS\n", ":1:14: databaseEnv: the variable TOLLGATE_TEST_UNSET_DBOS is not set"},
		{"queue: q\n", "c.yaml: database: required"}, // not in the file: no position
		{"database: sqlite:d.db\nconcurency: 4\n", `:2:1: concurency: unknown key "concurency"; did you mean "concurrency"?`},
	} {
		p := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(p, []byte(tc.doc), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := dbosengine.LoadConfig(p)
		if err == nil || !strings.HasPrefix(err.Error(), p) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.doc, err, tc.want)
		}
	}
}

// FuzzLoadConfig: no document makes LoadConfig panic or hang, and what it
// accepts gives options.
func FuzzLoadConfig(f *testing.F) {
	f.Add("database: sqlite:dbos.db\nstateDir: state\nconcurrency: 3\n")
	f.Add("databaseEnv: X\nheartbeat: 1s\n")
	f.Add("database: [a, {b: c}]\n")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, doc string) {
		p := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := dbosengine.LoadConfig(p)
		if err != nil {
			return
		}
		if _, err := c.Options(); err != nil {
			t.Fatalf("accepted a configuration whose options fail: %v", err)
		}
	})
}
