package builtin_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/builtin"
	"github.com/tollgate-dev/tollgate/tool"
)

// attackSetup builds parent/ws (the workspace) next to parent/out (a directory
// holding secret.txt), with symbolic links from the workspace to the outside:
//
//	ws/inside.txt        a file
//	ws/sub/              a directory
//	ws/link_in  -> inside.txt              (relative, stays inside)
//	ws/link_out -> parent/out/secret.txt   (absolute, leads out)
//	ws/rel_out  -> ../out/secret.txt       (relative, leads out)
//	ws/dir_out  -> parent/out              (a directory outside)
//	parent/ws_alias -> ws                  (the root reached through a link)
func attackSetup(t *testing.T) (parent, ws, out string) {
	t.Helper()
	parent = t.TempDir()
	ws, out = filepath.Join(parent, "ws"), filepath.Join(parent, "out")
	for _, d := range []string{filepath.Join(ws, "sub"), out} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(ws, "inside.txt"), "inside\n")
	write(filepath.Join(out, "secret.txt"), "secret\n")
	links := map[string]string{
		filepath.Join(ws, "link_in"):      "inside.txt",
		filepath.Join(ws, "link_out"):     filepath.Join(out, "secret.txt"),
		filepath.Join(ws, "rel_out"):      "../out/secret.txt",
		filepath.Join(ws, "dir_out"):      out,
		filepath.Join(parent, "ws_alias"): ws,
	}
	for link, target := range links {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	return parent, ws, out
}

// snapshot lists every file below dir with its content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			m[p] = string(b)
		} else {
			m[p] = "<dir>"
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestConfinementRefusesEscapes(t *testing.T) {
	parent, ws, out := attackSetup(t)
	secret := filepath.Join(out, "secret.txt")
	outside := map[string]bool{"../out/secret.txt": true, secret: true, "/etc/passwd": true}
	attacks := []struct {
		tool string
		args map[string]any
	}{
		// read
		{"read", map[string]any{"path": "../out/secret.txt"}},
		{"read", map[string]any{"path": "sub/../../out/secret.txt"}},
		{"read", map[string]any{"path": secret}},
		{"read", map[string]any{"path": "/etc/passwd"}},
		{"read", map[string]any{"path": "link_out"}},
		{"read", map[string]any{"path": "rel_out"}},
		{"read", map[string]any{"path": "dir_out/secret.txt"}},
		// write: existing and not-yet-existing files, through links and parents
		{"write", map[string]any{"path": "../out/new.txt", "content": "x"}},
		{"write", map[string]any{"path": filepath.Join(out, "new.txt"), "content": "x"}},
		{"write", map[string]any{"path": "link_out", "content": "pwned"}},
		{"write", map[string]any{"path": "rel_out", "content": "pwned"}},
		{"write", map[string]any{"path": "dir_out/secret.txt", "content": "pwned"}},
		{"write", map[string]any{"path": "dir_out/new.txt", "content": "x"}},
		{"write", map[string]any{"path": "dir_out/deep/er/new.txt", "content": "x"}},
		// edit
		{"edit", map[string]any{"path": "../out/secret.txt", "oldString": "secret", "newString": "pwned"}},
		{"edit", map[string]any{"path": secret, "oldString": "secret", "newString": "pwned"}},
		{"edit", map[string]any{"path": "link_out", "oldString": "secret", "newString": "pwned"}},
		{"edit", map[string]any{"path": "dir_out/secret.txt", "oldString": "secret", "newString": "pwned"}},
		// grep and glob
		{"grep", map[string]any{"pattern": "secret", "path": "../out"}},
		{"grep", map[string]any{"pattern": "secret", "path": out}},
		{"grep", map[string]any{"pattern": "secret", "path": "dir_out"}},
		{"grep", map[string]any{"pattern": "secret", "path": "link_out"}},
		{"glob", map[string]any{"pattern": "*", "path": "../out"}},
		{"glob", map[string]any{"pattern": "*", "path": "dir_out"}},
		{"glob", map[string]any{"pattern": "*", "path": "/"}},
		// bash's working directory
		{"bash", map[string]any{"command": "cat secret.txt", "workdir": "../out"}},
		{"bash", map[string]any{"command": "cat secret.txt", "workdir": out}},
		{"bash", map[string]any{"command": "cat secret.txt", "workdir": "dir_out"}},
	}
	for _, root := range []string{ws, filepath.Join(parent, "ws_alias")} {
		tools, err := builtin.New(root, nil)
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]tool.Tool{}
		for _, tl := range tools {
			byName[tl.Spec().Name] = tl
		}
		before := snapshot(t, out)
		for _, a := range attacks {
			r := call(t, byName, a.tool, a.args)
			if !r.IsError || !strings.HasPrefix(r.Output, "refused: path ") {
				t.Errorf("root %s: %s(%v) = %q (error %v), want a refusal", root, a.tool, a.args, r.Output, r.IsError)
			}
			if strings.Contains(r.Output, "secret\n") || strings.Contains(r.Output, "root:") {
				t.Errorf("%s(%v) leaked outside content: %q", a.tool, a.args, r.Output)
			}
			p, _ := a.args["path"].(string)
			if outside[p] && !strings.Contains(r.Output, "is outside the workspace") {
				t.Errorf("%s(%v) = %q, want the lexical refusal", a.tool, a.args, r.Output)
			}
		}
		if diff := snapshotDiff(before, snapshot(t, out)); diff != "" {
			t.Errorf("the outside directory changed: %s", diff)
		}
	}
}

func snapshotDiff(a, b map[string]string) string {
	var diffs []string
	for k, v := range a {
		if b[k] != v {
			diffs = append(diffs, k+" changed")
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			diffs = append(diffs, k+" appeared")
		}
	}
	slices.Sort(diffs)
	return strings.Join(diffs, ", ")
}

func TestConfinementAllowsInside(t *testing.T) {
	parent, ws, _ := attackSetup(t)
	alias := filepath.Join(parent, "ws_alias")
	tools, err := builtin.New(alias, nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]tool.Tool{}
	for _, tl := range tools {
		byName[tl.Spec().Name] = tl
	}
	tests := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"read", map[string]any{"path": "link_in"}, "     1\tinside\n"},
		{"read", map[string]any{"path": filepath.Join(ws, "inside.txt")}, "     1\tinside\n"},
		{"read", map[string]any{"path": filepath.Join(alias, "inside.txt")}, "     1\tinside\n"},
		{"read", map[string]any{"path": "sub/../inside.txt"}, "     1\tinside\n"},
		// Links that lead out are skipped by walks, never followed.
		{"grep", map[string]any{"pattern": "."}, "inside.txt:1: inside\nlink_in:1: inside\n"},
		{"glob", map[string]any{"pattern": "**"}, "inside.txt\nlink_in\n"},
		{"bash", map[string]any{"command": "pwd", "workdir": "sub"}, mustEval(t, ws) + "/sub\n"},
		{"bash", map[string]any{"command": "pwd"}, mustEval(t, ws) + "\n"},
		{"write", map[string]any{"path": "sub/new.txt", "content": "n"}, "created sub/new.txt (1 byte)"},
	}
	for _, tt := range tests {
		r := call(t, byName, tt.tool, tt.args)
		if r.IsError || r.Output != tt.want {
			t.Errorf("%s(%v) = %q (error %v), want %q", tt.tool, tt.args, r.Output, r.IsError, tt.want)
		}
	}
}

func mustEval(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
