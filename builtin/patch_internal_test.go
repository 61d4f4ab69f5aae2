package builtin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func dirFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		b, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestApplyPatchUndoesCommitFailures fails each step of the commit in turn:
// the workspace must be exactly as before (contents, no leftovers) every
// time, and the patch applies fully when no step fails.
func TestApplyPatchUndoesCommitFailures(t *testing.T) {
	files := map[string]string{"1.txt": "one\n", "2.txt": "two\r\n", "4.txt": "four\n", "5.txt": "five\n"}
	p := "*** Begin Patch\n*** Update File: 1.txt\n-one\n+ONE\n*** Update File: 2.txt\n-two\n+TWO\n" +
		"*** Add File: sub/3.txt\n+three\n*** Delete File: 4.txt\n*** Update File: 5.txt\n*** Move to: 6.txt\n-five\n+six\n*** End Patch\n"
	want := map[string]string{"1.txt": "ONE\n", "2.txt": "TWO\r\n", "sub/3.txt": "three\n", "6.txt": "six\n"}
	for n := 1; ; n++ {
		dir := t.TempDir()
		for name, c := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		ws, err := newWorkspace(dir)
		if err != nil {
			t.Fatal(err)
		}
		b := &builtins{ws: ws}
		failed := false
		b.patchFault = func(step int) error {
			if step == n {
				failed = true
				return errors.New("injected failure")
			}
			return nil
		}
		res, _ := b.applyPatch(context.Background(), applyPatchInput{PatchText: p})
		if !failed {
			if res.IsError {
				t.Fatalf("without a fault: %s", res.Output)
			}
			if diff := cmp.Diff(want, dirFiles(t, dir)); diff != "" {
				t.Fatalf("applied patch (-want +got):\n%s", diff)
			}
			if n < 6 {
				t.Fatalf("only %d steps; the test does not reach the commit", n)
			}
			return
		}
		if !res.IsError || !strings.Contains(res.Output, "injected failure; no file was changed") {
			t.Fatalf("step %d: %q", n, res.Output)
		}
		if diff := cmp.Diff(files, dirFiles(t, dir)); diff != "" {
			t.Fatalf("failing step %d left the workspace changed (-want +got):\n%s", n, diff)
		}
	}
}

// FuzzParsePatch: the parser never panics, its errors name a line, and
// applying what it accepts to a small file never panics.
func FuzzParsePatch(f *testing.F) {
	f.Add("*** Begin Patch\n*** Update File: a\n@@ x\n a\n-b\n+c\n*** End of File\n*** End Patch")
	f.Add("*** Begin Patch\n*** Add File: n\n+x\n*** Delete File: d\n*** End Patch\n")
	f.Add("*** Begin Patch\n*** Update File: a\n*** Move to: b\n@@ -1,2 +1,2 @@\n-a\n+b\n\n*** End Patch")
	f.Add("*** Begin Patch\r\n*** Update File: a\r\n+x\r\n*** End Patch\r\n")
	f.Fuzz(func(t *testing.T, text string) {
		files, err := parsePatch(text)
		if err != nil {
			var pe *patchError
			if errors.As(err, &pe) && pe.line < 1 {
				t.Fatalf("error at line %d: %v", pe.line, err)
			}
			return
		}
		for _, fp := range files {
			if fp.path == "" {
				t.Fatalf("a section without a path was accepted: %q", text)
			}
			for _, content := range []string{"", "a\nb\nc\n", "a\r\nb\r\nc", "x"} {
				_, _ = applyHunks(parseText([]byte(content)), fp.hunks)
			}
		}
	})
}
