package builtin_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/builtin"
)

// The files that govern a run (here a policy file and a state directory in
// the workspace) are never written by the file tools, whatever spelling or
// symbolic link reaches them; other files are.
func TestProtectedFilesAreNeverWritten(t *testing.T) {
	root, tools := workspace(t, map[string]string{"policy.yaml": "rules: []\n", ".tollgate/tollgate.db": "db", "notes.txt": "a\n"},
		&builtin.Options{Protect: []string{"policy.yaml", ".tollgate", ".claude/settings.json"}})
	if err := os.Symlink("policy.yaml", filepath.Join(root, "alias.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".tollgate", filepath.Join(root, "st")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args any
	}{
		{"write", map[string]any{"path": "policy.yaml", "content": "rules: []\n# gone\n"}},
		{"write", map[string]any{"path": filepath.Join(root, "policy.yaml"), "content": "x"}},
		{"write", map[string]any{"path": "./sub/../policy.yaml", "content": "x"}},
		{"write", map[string]any{"path": "st/tollgate.db", "content": "garbage"}},
		{"write", map[string]any{"path": ".tollgate/new.db", "content": "garbage"}},
		{"write", map[string]any{"path": ".claude/settings.json", "content": "{}"}},
		{"edit", map[string]any{"path": "alias.yaml", "oldString": "rules: []", "newString": "rules: [x]"}},
		{"apply_patch", map[string]any{"patchText": "*** Begin Patch\n*** Add File: st/planted\n+x\n*** End Patch\n"}},
		{"apply_patch", map[string]any{"patchText": "*** Begin Patch\n*** Update File: notes.txt\n*** Move to: policy.yaml\n@@\n-a\n+b\n*** End Patch\n"}},
	}
	for _, c := range cases {
		res := call(t, tools, c.name, c.args)
		if !res.IsError || !strings.Contains(res.Output, "govern this agent") {
			t.Errorf("%s %v: %+v, want a refusal", c.name, c.args, res)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, "policy.yaml")); string(b) != "rules: []\n" {
		t.Errorf("policy.yaml changed: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(root, ".tollgate/tollgate.db")); string(b) != "db" {
		t.Errorf("the store changed: %q", b)
	}
	for _, p := range []string{".tollgate/new.db", ".tollgate/planted", ".claude/settings.json"} {
		if _, err := os.Stat(filepath.Join(root, p)); err == nil {
			t.Errorf("%s was created", p)
		}
	}
	if res := call(t, tools, "write", map[string]any{"path": "notes.txt", "content": "b\n"}); res.IsError {
		t.Fatalf("an ordinary file must stay writable: %s", res.Output)
	}
}

// bash runs in a session of its own, without the operator's terminal, so
// that a command cannot open /dev/tty and type into the shell that started
// tollgate (TIOCSTI), sandbox or not.
func TestBashHasItsOwnSession(t *testing.T) {
	_, tools := workspace(t, nil, nil)
	res := call(t, tools, "bash", map[string]any{"command": `read -r _ _ _ _ _ sid _ < /proc/$$/stat; if [ "$sid" = "$$" ]; then echo own-session; else echo "shared session $sid"; fi`})
	if res.IsError || !strings.Contains(res.Output, "own-session") {
		t.Fatalf("%+v", res)
	}
}

// edit refuses a file larger than MaxEditBytes instead of holding it (and
// its rewritten copy) in memory; a sparse file makes the size cheap to test.
func TestEditRefusesHugeFile(t *testing.T) {
	root, tools := workspace(t, nil, nil)
	f, err := os.Create(filepath.Join(root, "big"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(16<<20 + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	res := call(t, tools, "edit", map[string]any{"path": "big", "oldString": "a", "newString": "b"})
	if !res.IsError || !strings.Contains(res.Output, "at most") {
		t.Fatalf("%+v", res)
	}
}
