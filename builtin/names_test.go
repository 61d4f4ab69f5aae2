package builtin_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNamesThatAreNotUTF8 pins the escaped spelling of file names that are
// not valid UTF-8 (or hold control characters or escape-like text): grep and
// glob list them, and the spelling leads read and edit back to the file.
func TestNamesThatAreNotUTF8(t *testing.T) {
	names := []struct{ disk, spelled string }{
		{"caf\xe9.txt", `caf\xe9.txt`},
		{"bell\x07\x1b[31m.txt", `bell\x07\x1b[31m.txt`},
		{`lit\x41.txt`, `lit\x5cx41.txt`},
		{"d\xff/in.txt", `d\xff/in.txt`},
		{"plain.txt", "plain.txt"},
	}
	files := map[string]string{}
	for _, n := range names {
		files[n.disk] = "needle " + n.spelled + "\n"
	}
	root, tools := workspace(t, files, nil)
	if _, err := os.Stat(filepath.Join(root, "caf\xe9.txt")); err != nil {
		t.Fatalf("the file system refuses non-UTF-8 names: %v", err)
	}

	grep := call(t, tools, "grep", map[string]any{"pattern": "needle"})
	globbed := call(t, tools, "glob", map[string]any{"pattern": "**/*.txt"})
	for _, n := range names {
		if want := n.spelled + ":1: needle " + n.spelled + "\n"; !strings.Contains(grep.Output, want) {
			t.Errorf("grep output lacks %q:\n%s", want, grep.Output)
		}
		if !strings.Contains(globbed.Output, n.spelled+"\n") {
			t.Errorf("glob output lacks %q:\n%s", n.spelled, globbed.Output)
		}
		res := call(t, tools, "read", map[string]any{"path": n.spelled})
		if res.IsError || !strings.Contains(res.Output, "needle") {
			t.Errorf("read %q = %q", n.spelled, res.Output)
		}
		res = call(t, tools, "edit", map[string]any{"path": n.spelled, "oldString": "needle", "newString": "pin"})
		if res.IsError {
			t.Errorf("edit %q: %s", n.spelled, res.Output)
		}
		if got := readFile(t, filepath.Join(root, n.disk)); !strings.HasPrefix(got, "pin ") {
			t.Errorf("%q holds %q after the edit", n.disk, got)
		}
	}
	for _, out := range []string{grep.Output, globbed.Output} {
		if strings.ContainsAny(out, "\x07\x1b") || !isUTF8(out) {
			t.Errorf("listing holds raw control characters or invalid UTF-8: %q", out)
		}
	}
	// A directory that is not UTF-8 can be searched by its spelling.
	if res := call(t, tools, "grep", map[string]any{"pattern": "pin", "path": `d\xff`}); res.Output != `d\xff/in.txt:1: pin d\xff/in.txt`+"\n" {
		t.Errorf("grep in d\\xff = %q", res.Output)
	}
	// An escape cannot leave the workspace: \x2e\x2e is "..".
	if res := call(t, tools, "read", map[string]any{"path": `\x2e\x2e/etc/passwd`}); !res.IsError || !strings.Contains(res.Output, "outside the workspace") {
		t.Errorf("read of an escaped .. = %q", res.Output)
	}
}

func isUTF8(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }
