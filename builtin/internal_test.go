package builtin

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pattern string
		name    string
		want    bool
	}{
		{"*.go", "a.go", true},
		{"*.go", "dir/a.go", false},
		{"**/*.go", "a.go", true},
		{"**/*.go", "a/b/c.go", true},
		{"**/*.go", "a/b/c.got", false},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"a/**/b", "a/x/y/c", false},
		{"a/**", "a/x/y", true},
		{"a/**", "a", true},
		{"**", "anything/at/all", true},
		{"**/**/x", "x", true},
		{"**/x/**", "a/x/b/c", true},
		{"?.md", "ab.md", false},
		{"[ab].txt", "b.txt", true},
		{"*.{go,md}", "x.md", true},
		{"*.{go,md}", "x.txt", false},
		{"{src,lib}/**/*.{ts,tsx}", "lib/a/b.tsx", true},
		{"{src,lib}/**/*.{ts,tsx}", "test/a.ts", false},
		{"{a,{b,c}}.txt", "c.txt", true},
		{"lit{x}.txt", "lit{x}.txt", true},
		{`\*.txt`, "*.txt", true},
		{`\*.txt`, "a.txt", false},
		{"./a/./*.go", "a/b.go", true},
		{"a//b", "a/b", true},
	}
	for _, tt := range tests {
		g, err := compileGlob(tt.pattern)
		if err != nil {
			t.Errorf("compileGlob(%q): %v", tt.pattern, err)
			continue
		}
		if got := g.match(tt.name); got != tt.want {
			t.Errorf("%q matching %q = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}

func TestGlobMayMatchUnder(t *testing.T) {
	tests := []struct {
		pattern string
		dir     string
		want    bool
	}{
		{"src/*.go", "src", true},
		{"src/*.go", "node_modules", false},
		{"src/*.go", "src/deeper", false},
		{"src/**/*.go", "src/a/b/c", true},
		{"**/*.go", "any/where", true},
		{"*.go", "sub", false},
		{"src/**", "src", true},
		{"a/b/*.go", "a/c", false},
		{"{a,b}/*.go", "b", true},
	}
	for _, tt := range tests {
		g, err := compileGlob(tt.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.mayMatchUnder(tt.dir); got != tt.want {
			t.Errorf("%q under %q = %v, want %v", tt.pattern, tt.dir, got, tt.want)
		}
	}
}

func TestCompileGlobErrors(t *testing.T) {
	for _, p := range []string{"", "/abs", "a/../b", "[", "{a,b", "a}", "*.{a,b}}"} {
		if _, err := compileGlob(p); err == nil {
			t.Errorf("compileGlob(%q) succeeded, want an error", p)
		}
	}
	// Expansion is bounded: 2^9 = 512 patterns.
	if _, err := compileGlob(strings.Repeat("{a,b}", 9)); err == nil {
		t.Error("no error for a brace bomb")
	}
}

func TestExpandBraces(t *testing.T) {
	got, err := expandBraces("x{a,b{1,2}}y{,z}")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"xay", "xayz", "xb1y", "xb1yz", "xb2y", "xb2yz"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("expandBraces (-want +got):\n%s", diff)
	}
}

// FuzzGlob checks that compiling and matching never panic, that a match
// without "**" or braces agrees with path.Match segment by segment, and that
// a matching path's directories are never pruned by mayMatchUnder.
func FuzzGlob(f *testing.F) {
	for _, s := range [][2]string{{"**/*.go", "a/b.go"}, {"a/{b,c}/d", "a/c/d"}, {"[a-", "x"}, {"a/**/b/**", "a/b/c"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		g, err := compileGlob(pattern)
		if err != nil || name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, "//") {
			return
		}
		m := g.match(name)
		if !strings.ContainsAny(pattern, "{}") && !strings.Contains(pattern, "**") &&
			!strings.Contains(pattern, "//") && !strings.Contains(pattern, "./") && !strings.HasSuffix(pattern, "/") && pattern != "." {
			want, _ := path.Match(pattern, name)
			if m != want {
				t.Fatalf("match(%q, %q) = %v, path.Match says %v", pattern, name, m, want)
			}
		}
		if m {
			for d := path.Dir(name); d != "." && d != "/"; d = path.Dir(d) {
				if !g.mayMatchUnder(d) {
					t.Fatalf("%q matches %q but its directory %q is pruned", pattern, name, d)
				}
			}
		}
	})
}

func TestLineReader(t *testing.T) {
	type line struct {
		Text string
		Cut  bool
	}
	tests := []struct {
		name  string
		input string
		max   int
		want  []line
	}{
		{"plain", "a\nbb\n", 10, []line{{"a", false}, {"bb", false}}},
		{"no final newline", "a\nbb", 10, []line{{"a", false}, {"bb", false}}},
		{"empty lines", "\n\nx\n", 10, []line{{"", false}, {"", false}, {"x", false}}},
		{"crlf", "a\r\nb\r\n", 10, []line{{"a", false}, {"b", false}}},
		{"lone cr kept inside", "a\rb\n", 10, []line{{"a\rb", false}}},
		{"cut", "abcdef\nxy\n", 3, []line{{"abc", true}, {"xy", false}}},
		{"exactly max", "abc\n", 3, []line{{"abc", false}}},
		{"exactly max with crlf", "abc\r\n", 3, []line{{"abc", false}}},
		{"empty input", "", 3, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lr := newLineReader(strings.NewReader(tt.input), tt.max)
			var got []line
			for {
				l, cut, err := lr.next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, line{string(l), cut})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLineReaderHugeLine(t *testing.T) {
	// A line far longer than the reader's buffer takes only max bytes.
	input := bytes.Repeat([]byte("x"), 1<<20)
	input = append(input, "\r\nnext"...)
	lr := newLineReader(bytes.NewReader(input), 5)
	l, cut, err := lr.next()
	if err != nil || string(l) != "xxxxx" || !cut {
		t.Fatalf("first line = %q, %v, %v", l, cut, err)
	}
	if cap(lr.buf) > 1024 {
		t.Errorf("buffer grew to %d bytes", cap(lr.buf))
	}
	l, cut, err = lr.next()
	if err != nil || string(l) != "next" || cut {
		t.Fatalf("second line = %q, %v, %v", l, cut, err)
	}
}

// TestEscapeText pins the text of os.Root's escape error, which escapes
// relies on to tell a symlink escape from other failures.
func TestEscapeText(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("..", filepath.Join(dir, "up")); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, name := range []string{"../x", "up/x"} {
		_, err = r.Open(name)
		if !escapes(err) {
			t.Errorf("Open(%q) error %v is not recognized as an escape", name, err)
		}
	}
	if escapes(errors.New("other")) || escapes(nil) {
		t.Error("escapes is true for an unrelated error")
	}
}

func TestWorkspaceRel(t *testing.T) {
	w := &workspace{abs: "/ws/alias", real: "/ws/real"}
	tests := []struct {
		in, want string
		refused  bool
	}{
		{"a.txt", "a.txt", false},
		{"./a/../b", "b", false},
		{".", ".", false},
		{"/ws/alias/x", "x", false},
		{"/ws/real/x/y", "x/y", false},
		{"/ws/real", ".", false},
		{"..", "", true},
		{"a/../../b", "", true},
		{"/ws/realx", "", true},
		{"/ws/real/../other", "", true},
		{"/etc/passwd", "", true},
	}
	for _, tt := range tests {
		got, err := w.rel(tt.in)
		var ref *refusal
		if refused := errors.As(err, &ref); refused != tt.refused || got != filepath.FromSlash(tt.want) {
			t.Errorf("rel(%q) = %q, %v; want %q, refused %v", tt.in, got, err, tt.want, tt.refused)
		}
	}
}

// FuzzSpellPath: every spelling leads back to its name, and is valid UTF-8
// without control characters.
func FuzzSpellPath(f *testing.F) {
	for _, s := range []string{"a.txt", "caf\xe9", `a\x41`, "\x1b[0m", "\u0085", `\`, `\x`, `\xzz`, "d\xff/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		s := spellPath(name)
		if got := unspellPath(s); got != name {
			t.Fatalf("unspellPath(spellPath(%q)) = %q (spelled %q)", name, got, s)
		}
		if !utf8.ValidString(s) || strings.IndexFunc(s, isControl) >= 0 {
			t.Fatalf("spellPath(%q) = %q holds invalid UTF-8 or a control character", name, s)
		}
	})
}
