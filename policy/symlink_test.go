package policy

import (
	"encoding/json"
	"github.com/tollgate-dev/tollgate/approval"
	"os"
	"path/filepath"
	"testing"
)

// With a rule denying pathPrefix "secret", a symbolic link public -> secret
// in the workspace let the agent read and overwrite secret/... as
// public/...; the rule now judges the file a path leads to, for the builtin
// tools' arguments and an MCP filesystem server's alike.
func TestPathPrefixFollowsSymlinks(t *testing.T) {
	parent := t.TempDir()
	ws := filepath.Join(parent, "ws")
	for _, d := range []string{filepath.Join(ws, "secret", "deep"), filepath.Join(ws, "open")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ws, "secret", "key.txt"), []byte("k"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"public":        "secret",            // a directory link
		"open/key.txt":  "../secret/key.txt", // a file link
		"chain":         "public/deep",       // a link through a link
		"absolute":      filepath.Join(ws, "secret"),
		"loop":          "loop",                   // resolved no further
		"open/innocent": "../open/../secret/deep", // with dots
	} {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	alias := filepath.Join(parent, "alias")
	if err := os.Symlink(ws, alias); err != nil {
		t.Fatal(err)
	}
	spec := PolicySpec{Rules: []Rule{{ID: "no-secret", Args: []ArgCondition{{Field: "path", PathPrefix: "secret"}}, Decision: approval.Deny, Reason: "secret"}}}
	p, err := NewPolicy(spec)
	if err != nil {
		t.Fatal(err)
	}
	if p, err = p.WithWorkdir(ws, alias); err != nil {
		t.Fatal(err)
	}
	for path, denied := range map[string]bool{
		"secret/key.txt":                   true,
		"public/key.txt":                   true,
		"public/new.txt":                   true, // not there yet: judged by its parent
		"open/key.txt":                     true,
		"chain/x":                          true,
		"absolute/key.txt":                 true,
		"open/innocent/x":                  true,
		filepath.Join(ws, "public/k"):      true,
		filepath.Join(alias, "public/k"):   true,
		filepath.Join(alias, "secret"):     true,
		"open/other.txt":                   false,
		"loop/x":                           false,
		"publicity":                        false,
		filepath.Join(parent, "elsewhere"): false,
	} {
		for _, tl := range []string{"read", "mcp__fs__read_text_file"} {
			args, _ := json.Marshal(map[string]string{"path": path})
			v := p.Evaluate(approval.Call{Tool: tl, Args: args}).Verdict
			if got := v.Decision == approval.Deny; got != denied {
				t.Errorf("%s %s: %s by %s, want denied=%v", tl, path, v.Decision, v.By, denied)
			}
		}
	}
}
