package readme

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "write ../../README.md from README.src.md")

// weave returns src with every "%include PATH" line replaced by the file at
// PATH (relative to dir); a Go file is included from its package clause on.
func weave(src []byte, dir string) ([]byte, error) {
	var out bytes.Buffer
	for i, line := range strings.SplitAfter(string(src), "\n") {
		name, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "%include ")
		if !ok {
			out.WriteString(line)
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("README.src.md:%d: %w", i+1, err)
		}
		if strings.HasSuffix(name, ".go") {
			j := bytes.Index(b, []byte("\npackage "))
			if j < 0 {
				return nil, fmt.Errorf("README.src.md:%d: %s has no package clause", i+1, name)
			}
			b = b[j+1:]
		}
		out.Write(b)
		if len(b) > 0 && b[len(b)-1] != '\n' {
			out.WriteByte('\n')
		}
	}
	return out.Bytes(), nil
}

// README.md is the weave of README.src.md and the programs it includes.
func TestREADMEIsWoven(t *testing.T) {
	src, err := os.ReadFile("README.src.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := weave(src, ".")
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("../../README.md", want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("README.md is not the weave of internal/readme/README.src.md: edit README.src.md or the programs it includes, then run go test ./internal/readme -update")
	}
}

// The front page fits on a few screens: the rest belongs in docs/.
func TestREADMEIsShort(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte("\n")); n > 200 {
		t.Errorf("README.md has %d lines, more than 200: move the detail to a page of docs/", n)
	}
}

// Every relative link of the front page leads to a file of the repository.
func TestREADMELinks(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for {
		i := strings.Index(s, "](")
		if i < 0 {
			break
		}
		s = s[i+2:]
		target, _, _ := strings.Cut(s, ")")
		if strings.Contains(target, "://") {
			continue
		}
		target, _, _ = strings.Cut(target, "#")
		if _, err := os.Stat(filepath.Join("../..", target)); err != nil {
			t.Errorf("README.md links to %s: %v", target, err)
		}
	}
}

func TestWeaveIncludesGoFromPackageClause(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte("// Doc.\npackage main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "out.txt"), []byte("no newline"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := weave([]byte("a\n%include p.go\n%include out.txt\nb\n"), dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := "a\npackage main\n\nfunc main() {}\nno newline\nb\n"; string(got) != want {
		t.Errorf("weave = %q, want %q", got, want)
	}
	if _, err := weave([]byte("%include missing.go\n"), dir); err == nil || !strings.Contains(err.Error(), "README.src.md:1:") {
		t.Errorf("weave of a missing file: err = %v, want one naming README.src.md:1", err)
	}
}
