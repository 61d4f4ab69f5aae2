package builtin_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func patch(body ...string) string {
	return "*** Begin Patch\n" + strings.Join(body, "\n") + "\n*** End Patch"
}

func TestApplyPatch(t *testing.T) {
	files := map[string]string{
		"a.txt":      "one\ntwo\nthree\nfour\n",
		"crlf.txt":   "alpha\r\nbeta\r\ngamma\r\n",
		"bom.txt":    "\uFEFFx\ny\n",
		"old/m.txt":  "move me\n",
		"gone.txt":   "bye\n",
		"nobreak":    "l1\nl2",
		"dup.txt":    "k\nv\nk\nv\n",
		"spaces.txt": "a  \nb\n",
	}
	tests := []struct {
		name    string
		patch   string
		want    map[string]string // path -> content afterwards; "" = absent
		out     string
		isError bool
	}{
		{name: "update with context", patch: patch("*** Update File: a.txt", "@@", " one", "-two", "+TWO", " three"),
			want: map[string]string{"a.txt": "one\nTWO\nthree\nfour\n"}, out: "applied the patch:\nM a.txt\n"},
		{name: "first hunk without @@", patch: patch("*** Update File: a.txt", " three", "-four", "+4"),
			want: map[string]string{"a.txt": "one\ntwo\nthree\n4\n"}},
		{name: "CRLF kept", patch: patch("*** Update File: crlf.txt", "@@", " alpha", "-beta", "+BETA", "+BETA2", " gamma"),
			want: map[string]string{"crlf.txt": "alpha\r\nBETA\r\nBETA2\r\ngamma\r\n"}},
		{name: "CRLF patch text", patch: strings.ReplaceAll(patch("*** Update File: a.txt", "-one", "+ONE"), "\n", "\r\n"),
			want: map[string]string{"a.txt": "ONE\ntwo\nthree\nfour\n"}},
		{name: "BOM kept", patch: patch("*** Update File: bom.txt", "-x", "+X"),
			want: map[string]string{"bom.txt": "\uFEFFX\ny\n"}},
		{name: "@@ context picks the occurrence", patch: patch("*** Update File: dup.txt", "@@ v", " k", "-v", "+V"),
			want: map[string]string{"dup.txt": "k\nv\nk\nV\n"}},
		{name: "trailing whitespace tolerated", patch: patch("*** Update File: spaces.txt", "-a", "+A"),
			want: map[string]string{"spaces.txt": "A\nb\n"}},
		{name: "end of file", patch: patch("*** Update File: dup.txt", "@@", " k", "-v", "+END", "*** End of File"),
			want: map[string]string{"dup.txt": "k\nv\nk\nEND\n"}},
		{name: "file without a final break", patch: patch("*** Update File: nobreak", "-l2", "+L2"),
			want: map[string]string{"nobreak": "l1\nL2"}},
		{name: "append to a file without a final break", patch: patch("*** Update File: nobreak", "@@", " l2", "+l3"),
			want: map[string]string{"nobreak": "l1\nl2\nl3"}},
		{name: "add, delete, move", patch: patch("*** Add File: new/n.txt", "+hello", "+world",
			"*** Delete File: gone.txt", "*** Update File: old/m.txt", "*** Move to: moved/m.txt", "-move me", "+moved"),
			want: map[string]string{"new/n.txt": "hello\nworld\n", "gone.txt": "", "old/m.txt": "", "moved/m.txt": "moved\n"},
			out:  "applied the patch:\nA new/n.txt\nD gone.txt\nR old/m.txt -> moved/m.txt\n"},
		{name: "hunk not found", patch: patch("*** Update File: a.txt", "-five", "+5"), isError: true,
			out: "a.txt: hunk 1 (patch line 3): its lines are not in the file after line 0:\nfive; no file was changed"},
		{name: "add over an existing file", patch: patch("*** Add File: a.txt", "+x"), isError: true,
			out: "patch line 2: Add File: a.txt already exists; update it instead"},
		{name: "delete a missing file", patch: patch("*** Delete File: nope.txt"), isError: true,
			out: "patch line 2: nope.txt: no such file or directory"},
		{name: "outside the workspace", patch: patch("*** Add File: ../evil.txt", "+x"), isError: true,
			out: `patch line 2: refused: path "../evil.txt" is outside the workspace`},
		{name: "move outside the workspace", patch: patch("*** Update File: a.txt", "*** Move to: /etc/x", "-one", "+1"), isError: true,
			out: `patch line 2: refused: path "/etc/x" is outside the workspace`},
		{name: "one file twice", patch: patch("*** Update File: a.txt", "-one", "+1", "*** Update File: a.txt", "-two", "+2"), isError: true,
			out: "invalid patch: a file appears in more than one section (or is moved onto another one); give each file one section"},
		{name: "no begin", patch: "*** Update File: a.txt\n-one\n+1\n*** End Patch", isError: true,
			out: `invalid patch: patch line 1: the patch must start with "*** Begin Patch"`},
		{name: "bad hunk line", patch: patch("*** Update File: a.txt", "-one", "?1"), isError: true,
			out: `invalid patch: patch line 4: a hunk line must start with ' ', '-' or '+', found "?1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, tools := workspace(t, files, nil)
			res := call(t, tools, "apply_patch", map[string]any{"patchText": tt.patch})
			if res.IsError != tt.isError || (tt.out != "" && res.Output != tt.out) {
				t.Fatalf("apply_patch = %q (error %v), want %q (error %v)", res.Output, res.IsError, tt.out, tt.isError)
			}
			after := map[string]string{}
			for p := range files {
				after[p] = files[p]
			}
			for p, c := range tt.want {
				after[p] = c
				if c == "" {
					delete(after, p)
				}
			}
			if tt.isError {
				after = files // nothing changes
			}
			if diff := cmp.Diff(after, snapshotFiles(t, root)); diff != "" {
				t.Errorf("workspace (-want +got):\n%s", diff)
			}
		})
	}
}

// snapshotFiles maps every regular file under root to its content (and
// fails on a leftover temporary file).
func snapshotFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if strings.HasPrefix(d.Name(), ".tollgate-") {
			t.Errorf("leftover %s", rel)
		}
		b, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestApplyPatchAllOrNothing: a patch that updates one file and fails on the
// second changes neither, whatever the order.
func TestApplyPatchAllOrNothing(t *testing.T) {
	files := map[string]string{"first.go": "package a\n\nfunc A() {}\n", "second.go": "package b\n\nfunc B() {}\n"}
	for _, p := range []string{
		patch("*** Update File: first.go", "-func A() {}", "+func A() { panic(1) }",
			"*** Update File: second.go", "-func C() {}", "+func C() { panic(2) }"),
		patch("*** Update File: first.go", "-func A() {}", "+func A() {}\nfunc A2() {}",
			"*** Delete File: missing.go"),
		patch("*** Add File: third.go", "+package c",
			"*** Update File: first.go", "-func A() {}", "+x",
			"*** Add File: second.go", "+clobber"),
	} {
		root, tools := workspace(t, files, nil)
		res := call(t, tools, "apply_patch", map[string]any{"patchText": p})
		if !res.IsError {
			t.Fatalf("apply_patch succeeded: %s", res.Output)
		}
		if diff := cmp.Diff(files, snapshotFiles(t, root)); diff != "" {
			t.Errorf("a failed patch changed the workspace (-want +got):\n%s", diff)
		}
	}
}
