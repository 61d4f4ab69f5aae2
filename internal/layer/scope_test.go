package layer_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/internal/layer"
)

// A proposal is never broader than the call when the program runs code or
// writes files through its arguments, or when no plain word follows it:
// the call's exact arguments are remembered.
func TestProposeNarrow(t *testing.T) {
	for _, tc := range []struct {
		script     string
		pattern    string // "" for exactly these arguments
		notCovered []string
	}{
		{"node --version", "", []string{"node -e 'require(\"fs\").writeFileSync(\"x\",\"y\")'", "node --version --eval x"}},
		{"python3 -m pytest", "", []string{"python3 -c 'import os'", "python3 -m http.server"}},
		{"python3 run tests", "", []string{"python3 run evil"}},
		{"sed -n 1p f", "", []string{"sed -i s/a/b/ f", "sed '1e rm x' f", "sed 'w /etc/x' f"}},
		{"curl -s https://example.com", "", []string{"curl -o x https://evil"}},
		{"awk '{print}' f", "", []string{"awk 'BEGIN{system(\"rm x\")}'"}},
		{"find . -name x", "", []string{"find . -delete", "find . -exec rm {} +"}},
		{"git -c core.pager=cat log", "", []string{"git -c core.fsmonitor=./x status"}},
		{"git config user.name", "", []string{"git config core.fsmonitor ./x"}},
		{"tee log", "", []string{"tee /etc/passwd"}},
		{"ls -la", "", []string{"ls -la /etc"}},
		{"go test ./server", "go test *", []string{"go vet ./..."}},
		{"git status --short", "git status *", []string{"git push"}},
	} {
		args, _ := json.Marshal(map[string]string{"command": tc.script})
		p, err := layer.Propose("r", "bash", args, approval.Allow, "")
		if err != nil {
			t.Fatalf("Propose(%q): %v", tc.script, err)
		}
		if tc.pattern == "" {
			if !strings.Contains(p.Text, "equals:") || strings.Contains(p.Text, "pattern") {
				t.Errorf("Propose(%q) = %s; want exactly these arguments", tc.script, p.Text)
			}
		} else if !strings.Contains(p.Text, `pattern: ["`+tc.pattern+`"]`) {
			t.Errorf("Propose(%q) = %s; want pattern %q", tc.script, p.Text, tc.pattern)
		}
		l := compile(t, p)
		if a := l.Answer(bashCall(tc.script)); a == nil {
			t.Errorf("the remembered %q does not cover itself", tc.script)
		}
		for _, s := range tc.notCovered {
			if a := l.Answer(bashCall(s)); a != nil {
				t.Errorf("remembered %q covers %q", tc.script, s)
			}
		}
	}
}

// A remembered path covers its directory only inside the workspace and
// below its root, and never a dotfile or a directory such as .git by a
// prefix.
func TestProposePathScope(t *testing.T) {
	for _, tc := range []struct {
		path, workspace, prefix string
	}{
		{"/w/a.go", "/w", "/w/a.go"},
		{"/w/a.go", "", "/w/a.go"},
		{"/elsewhere/x/a.go", "/w", "/elsewhere/x/a.go"},
		{"/w/notes/a.md", "/w", "/w/notes"},
		{"/w/notes/.env", "/w", "/w/notes/.env"},
		{"/w/.git/config", "/w", "/w/.git/config"},
		{"/w/.claude/settings.json", "/w", "/w/.claude/settings.json"},
		{"notes/a.md", "", "notes"},
		{"a.md", "", "a.md"},
		{".codex/x/config.toml", "", ".codex/x/config.toml"},
	} {
		args, _ := json.Marshal(map[string]string{"path": tc.path, "content": "x"})
		p, err := layer.ProposeIn("r", "write", args, approval.Allow, "", tc.workspace)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(p.Text, `pathPrefix: "`+tc.prefix+`"`) {
			t.Errorf("ProposeIn(%s in %q) = %s; want prefix %s", tc.path, tc.workspace, p.Text, tc.prefix)
		}
	}
	args := `{"path":"/w/src/a.go","content":"x"}`
	p, err := layer.ProposeIn("r", "write", json.RawMessage(args), approval.Allow, "", "/w")
	if err != nil {
		t.Fatal(err)
	}
	l, err := compile(t, p).WithWorkdir("/w")
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{
		"/w/src/b.go": true, "src/c.go": true, "/w/src/.git/hooks/pre-commit": false, "/w/src/.bashrc": false,
		"/w/src/x/.claude/settings.json": false, "/w/.git/hooks/pre-commit": false, "/w/.bashrc": false,
	} {
		b, _ := json.Marshal(map[string]string{"path": path, "content": "y"})
		if got := l.Answer(approval.Call{Tool: "write", Args: b}) != nil; got != want {
			t.Errorf("remembered /w/src/a.go: covers %s = %v, want %v", path, got, want)
		}
	}
}

// A remembered deny stays as wide as before: wide is its safe side.
func TestProposeDenyStaysWide(t *testing.T) {
	for script, want := range map[string]string{"node --version": "node *", "ls": "ls *", "sed -n 1p f": "sed *"} {
		args, _ := json.Marshal(map[string]string{"command": script})
		p, err := layer.Propose("r", "bash", args, approval.Deny, "")
		if err != nil || !strings.Contains(p.Text, `pattern: ["`+want+`"]`) {
			t.Errorf("Propose(deny %q) = %s, %v; want pattern %q", script, p.Text, err, want)
		}
	}
}

// A call remembered with exactly its arguments is covered beside command
// rules, whatever its script does.
func TestExactBesideCommandRules(t *testing.T) {
	exact := propose(t, "exact", "bash", `{"command":"FOO=1 node --version"}`, approval.Allow)
	l := compile(t, propose(t, "go", "bash", `{"command":"go test ./x"}`, approval.Allow), exact)
	if a := l.Answer(bashCall("FOO=1 node --version")); a == nil || !strings.Contains(a.Reason, "rule exact") {
		t.Errorf("the exactly remembered call: %+v", a)
	}
	if a := l.Answer(bashCall("FOO=1 go test ./x")); a != nil {
		t.Errorf("FOO=1 go test: %+v", a)
	}
}
