package builtin_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tollgate-dev/tollgate/builtin"
	"github.com/tollgate-dev/tollgate/tool"
)

// workspace creates a temporary workspace holding files (path -> content) and
// returns its root and the builtin tools by name.
func workspace(t *testing.T, files map[string]string, opts *builtin.Options) (string, map[string]tool.Tool) {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tools, err := builtin.New(root, opts)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]tool.Tool{}
	for _, tl := range tools {
		byName[tl.Spec().Name] = tl
	}
	return root, byName
}

// call calls tool name with args (any value that encodes to a JSON object).
func call(t *testing.T, tools map[string]tool.Tool, name string, args any) tool.Result {
	t.Helper()
	return callCtx(t, context.Background(), tools, name, args)
}

func callCtx(t *testing.T, ctx context.Context, tools map[string]tool.Tool, name string, args any) tool.Result {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	tl, ok := tools[name]
	if !ok {
		t.Fatalf("no tool %q", name)
	}
	res, err := tl.Call(ctx, b)
	if err != nil {
		t.Fatalf("%s(%s) returned a Go error: %v", name, b, err)
	}
	return res
}

// outcome is what a test compares: the output and whether it is an error.
type outcome struct {
	Output  string
	IsError bool
}

func got(r tool.Result) outcome { return outcome{r.Output, r.IsError} }

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestNewToolsAndHints(t *testing.T) {
	tools, err := builtin.New(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Name   string
		Hints  tool.Hints
		Source string
	}
	var rows []row
	for _, tl := range tools {
		s := tl.Spec()
		if s.Hints == nil {
			t.Fatalf("%s has no hints", s.Name)
		}
		if s.InputSchema == nil || s.Description == "" {
			t.Errorf("%s lacks a schema or a description", s.Name)
		}
		rows = append(rows, row{s.Name, *s.Hints, s.Source})
	}
	want := []row{
		{"bash", tool.Hints{Destructive: true, OpenWorld: true}, "builtin"},
		{"read", tool.Hints{ReadOnly: true, Idempotent: true}, "builtin"},
		{"write", tool.Hints{Destructive: true}, "builtin"},
		{"edit", tool.Hints{Destructive: true}, "builtin"},
		{"grep", tool.Hints{ReadOnly: true, Idempotent: true}, "builtin"},
		{"glob", tool.Hints{ReadOnly: true, Idempotent: true}, "builtin"},
		{"webfetch", tool.Hints{ReadOnly: true, OpenWorld: true}, "builtin"},
		{"question", tool.Hints{ReadOnly: true}, "builtin"},
		{"apply_patch", tool.Hints{Destructive: true}, "builtin"},
		{"todowrite", tool.Hints{ReadOnly: true, Idempotent: true}, "builtin"},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"bash", "read", "write", "edit", "grep", "glob", "webfetch", "question", "apply_patch", "todowrite"}, builtin.Names()); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
}

func TestInputSchemas(t *testing.T) {
	tools, err := builtin.New(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	type shape struct {
		Properties []string
		Required   []string
	}
	gotShapes := map[string]shape{}
	for _, tl := range tools {
		s := tl.Spec().InputSchema
		props := append([]string(nil), s.PropertyOrder...)
		gotShapes[tl.Spec().Name] = shape{props, s.Required}
	}
	want := map[string]shape{
		"bash":        {[]string{"command", "timeout", "workdir"}, []string{"command"}},
		"read":        {[]string{"path", "offset", "limit"}, []string{"path"}},
		"write":       {[]string{"path", "content"}, []string{"path", "content"}},
		"edit":        {[]string{"path", "oldString", "newString", "replaceAll"}, []string{"path", "oldString", "newString"}},
		"grep":        {[]string{"pattern", "path", "include"}, []string{"pattern"}},
		"glob":        {[]string{"pattern", "path"}, []string{"pattern"}},
		"webfetch":    {[]string{"url", "format", "timeout"}, []string{"url"}},
		"apply_patch": {[]string{"patchText"}, []string{"patchText"}},
		"question":    {[]string{"questions"}, []string{"questions"}},
		"todowrite":   {[]string{"todos"}, []string{"todos"}},
	}
	if diff := cmp.Diff(want, gotShapes); diff != "" {
		t.Errorf("schemas (-want +got):\n%s", diff)
	}
}

func TestNewErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		root string
		opts *builtin.Options
		want string
	}{
		{"empty root", "", nil, "empty workspace root"},
		{"missing root", filepath.Join(dir, "nope"), nil, "no such file"},
		{"file root", file, nil, "not a directory"},
		{"negative", dir, &builtin.Options{ReadLimit: -1}, "negative"},
		{"timeout above max", dir, &builtin.Options{BashTimeout: time.Hour}, "exceeds MaxBashTimeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := builtin.New(tt.root, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New(%q) error = %v, want it to contain %q", tt.root, err, tt.want)
			}
		})
	}
}

func TestRead(t *testing.T) {
	long := strings.Repeat("é", 30) // 60 bytes
	files := map[string]string{
		"five.txt":  "one\ntwo\nthree\nfour\nfive\n",
		"nonl.txt":  "a\nb",
		"crlf.txt":  "x\r\ny\r\n",
		"empty.txt": "",
		"long.txt":  long + "\nshort\n",
		"bin.dat":   "ab\x00cd\n",
		"dir/f.txt": "in dir\n",
	}
	_, tools := workspace(t, files, &builtin.Options{ReadLimit: 3, MaxLineBytes: 15})
	tests := []struct {
		name string
		args map[string]any
		want outcome
	}{
		{"default limit", map[string]any{"path": "five.txt"},
			outcome{"     1\tone\n     2\ttwo\n     3\tthree\n[showing lines 1-3; more lines follow: continue with offset=4]\n", false}},
		{"offset continues", map[string]any{"path": "five.txt", "offset": 4},
			outcome{"     4\tfour\n     5\tfive\n", false}},
		{"offset and limit", map[string]any{"path": "five.txt", "offset": 2, "limit": 2},
			outcome{"     2\ttwo\n     3\tthree\n[showing lines 2-3; more lines follow: continue with offset=4]\n", false}},
		{"limit reaching the end exactly", map[string]any{"path": "five.txt", "offset": 3, "limit": 3},
			outcome{"     3\tthree\n     4\tfour\n     5\tfive\n", false}},
		{"no final newline", map[string]any{"path": "nonl.txt"}, outcome{"     1\ta\n     2\tb\n", false}},
		{"crlf", map[string]any{"path": "crlf.txt"}, outcome{"     1\tx\n     2\ty\n", false}},
		{"empty", map[string]any{"path": "empty.txt"}, outcome{"[empty file]", false}},
		{"long line cut at a rune boundary", map[string]any{"path": "long.txt"},
			outcome{"     1\tééééééé ... [line truncated]\n     2\tshort\n", false}},
		{"subdirectory", map[string]any{"path": "dir/f.txt"}, outcome{"     1\tin dir\n", false}},
		{"dot segments inside", map[string]any{"path": "dir/../five.txt", "limit": 1},
			outcome{"     1\tone\n[showing lines 1-1; more lines follow: continue with offset=2]\n", false}},
		{"past the end", map[string]any{"path": "five.txt", "offset": 9}, outcome{"offset 9 is past the end of five.txt (5 lines)", true}},
		{"missing", map[string]any{"path": "nope.txt"}, outcome{"nope.txt: no such file or directory", true}},
		{"directory", map[string]any{"path": "dir"}, outcome{"dir is a directory; use glob to list its files", true}},
		{"binary", map[string]any{"path": "bin.dat"}, outcome{"bin.dat is a binary file; read shows text files only", true}},
		{"empty path", map[string]any{"path": ""}, outcome{"path must not be empty", true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, got(call(t, tools, "read", tt.args))); diff != "" {
				t.Errorf("read(%v) (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

func TestReadSchemaRejectsBadArguments(t *testing.T) {
	_, tools := workspace(t, map[string]string{"a": "a\n"}, nil)
	for _, args := range []map[string]any{
		{"path": "a", "offset": 0},
		{"path": "a", "limit": -1},
		{"offset": 1},
		{"path": "a", "extra": true},
	} {
		r := call(t, tools, "read", args)
		if !r.IsError || !strings.Contains(r.Output, "invalid arguments") {
			t.Errorf("read(%v) = %+v, want a validation error", args, r)
		}
	}
}

func TestWrite(t *testing.T) {
	root, tools := workspace(t, map[string]string{"old.txt": "old", "dir/x": ""}, nil)
	tests := []struct {
		name    string
		args    map[string]any
		want    outcome
		file    string // checked when not empty
		content string
	}{
		{"create", map[string]any{"path": "new.txt", "content": "hi\n"}, outcome{"created new.txt (3 bytes)", false}, "new.txt", "hi\n"},
		{"parents", map[string]any{"path": "a/b/c.txt", "content": "x"}, outcome{"created a/b/c.txt (1 byte)", false}, "a/b/c.txt", "x"},
		{"overwrite", map[string]any{"path": "old.txt", "content": "new"}, outcome{"overwrote old.txt (3 bytes)", false}, "old.txt", "new"},
		{"empty content", map[string]any{"path": "e.txt", "content": ""}, outcome{"created e.txt (0 bytes)", false}, "e.txt", ""},
		{"absolute inside", map[string]any{"path": filepath.Join(root, "abs.txt"), "content": "a"},
			outcome{"created " + filepath.Join(root, "abs.txt") + " (1 byte)", false}, "abs.txt", "a"},
		{"directory", map[string]any{"path": "dir", "content": "x"}, outcome{"dir is a directory", true}, "", ""},
		{"root", map[string]any{"path": ".", "content": "x"}, outcome{". is the workspace root, not a file", true}, "", ""},
		{"parent is a file", map[string]any{"path": "old.txt/x", "content": "x"}, outcome{"old.txt/x: not a directory", true}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, got(call(t, tools, "write", tt.args))); diff != "" {
				t.Errorf("write(%v) (-want +got):\n%s", tt.args, diff)
			}
			if tt.file != "" {
				if c := readFile(t, filepath.Join(root, tt.file)); c != tt.content {
					t.Errorf("%s holds %q, want %q", tt.file, c, tt.content)
				}
			}
		})
	}
}

func TestEdit(t *testing.T) {
	const orig = "alpha beta\ngamma beta\n"
	tests := []struct {
		name    string
		args    map[string]any
		want    outcome
		content string // the file afterwards
	}{
		{"unique", map[string]any{"oldString": "alpha", "newString": "ALPHA"},
			outcome{"edited f.txt: replaced 1 occurrence", false}, "ALPHA beta\ngamma beta\n"},
		{"multi-line", map[string]any{"oldString": "beta\ngamma", "newString": "b\ng"},
			outcome{"edited f.txt: replaced 1 occurrence", false}, "alpha b\ng beta\n"},
		{"delete text", map[string]any{"oldString": "alpha ", "newString": ""},
			outcome{"edited f.txt: replaced 1 occurrence", false}, "beta\ngamma beta\n"},
		{"ambiguous", map[string]any{"oldString": "beta", "newString": "B"},
			outcome{"oldString occurs 2 times in f.txt; include more surrounding context to make it unique, or set replaceAll to replace every occurrence", true}, orig},
		{"replace all", map[string]any{"oldString": "beta", "newString": "B", "replaceAll": true},
			outcome{"edited f.txt: replaced 2 occurrences", false}, "alpha B\ngamma B\n"},
		{"replace all with one occurrence", map[string]any{"oldString": "gamma", "newString": "G", "replaceAll": true},
			outcome{"edited f.txt: replaced 1 occurrence", false}, "alpha beta\nG beta\n"},
		{"not found", map[string]any{"oldString": "delta", "newString": "D"},
			outcome{"oldString not found in f.txt; read the file and copy the text exactly, including whitespace and indentation", true}, orig},
		{"whitespace matters", map[string]any{"oldString": "alpha  beta", "newString": "x"},
			outcome{"oldString not found in f.txt; read the file and copy the text exactly, including whitespace and indentation", true}, orig},
		{"equal", map[string]any{"oldString": "alpha", "newString": "alpha"},
			outcome{"oldString and newString are equal; there is nothing to change", true}, orig},
		{"empty oldString", map[string]any{"oldString": "", "newString": "x"},
			outcome{"oldString must not be empty; use write to create or overwrite a whole file", true}, orig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, tools := workspace(t, map[string]string{"f.txt": orig}, nil)
			args := map[string]any{"path": "f.txt"}
			for k, v := range tt.args {
				args[k] = v
			}
			if diff := cmp.Diff(tt.want, got(call(t, tools, "edit", args))); diff != "" {
				t.Errorf("edit(%v) (-want +got):\n%s", args, diff)
			}
			if c := readFile(t, filepath.Join(root, "f.txt")); c != tt.content {
				t.Errorf("file holds %q, want %q", c, tt.content)
			}
		})
	}
}

func TestEditKeepsModeAndRejectsOthers(t *testing.T) {
	root, tools := workspace(t, map[string]string{"run.sh": "echo a\n", "d/x": ""}, nil)
	if err := os.Chmod(filepath.Join(root, "run.sh"), 0o750); err != nil {
		t.Fatal(err)
	}
	if r := call(t, tools, "edit", map[string]any{"path": "run.sh", "oldString": "a", "newString": "b"}); r.IsError {
		t.Fatal(r.Output)
	}
	fi, err := os.Stat(filepath.Join(root, "run.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o750 {
		t.Errorf("mode after edit = %v, want 0750", fi.Mode().Perm())
	}
	for path, want := range map[string]string{
		"missing.txt": "missing.txt: no such file or directory",
		"d":           "d is not a regular file",
	} {
		r := call(t, tools, "edit", map[string]any{"path": path, "oldString": "a", "newString": "b"})
		if diff := cmp.Diff(outcome{want, true}, got(r)); diff != "" {
			t.Errorf("edit %s (-want +got):\n%s", path, diff)
		}
	}
}

func TestGrep(t *testing.T) {
	files := map[string]string{
		"a.go":         "package a\nfunc Hello() {}\n",
		"b.txt":        "hello world\nbye\n",
		"sub/c.go":     "// Hello again\n",
		"sub/d.ts":     "const hello = 1\n",
		"sub/e.tsx":    "hello()\n",
		"bin.dat":      "hello\x00\n",
		".git/config":  "hello from git\n",
		"sub/deep/f.c": "Hello\n",
	}
	_, tools := workspace(t, files, nil)
	tests := []struct {
		name string
		args map[string]any
		want outcome
	}{
		{"all files, case-insensitive", map[string]any{"pattern": "(?i)hello"},
			outcome{"a.go:2: func Hello() {}\nb.txt:1: hello world\nsub/c.go:1: // Hello again\nsub/d.ts:1: const hello = 1\nsub/deep/f.c:1: Hello\nsub/e.tsx:1: hello()\n", false}},
		{"include by base name", map[string]any{"pattern": "Hello", "include": "*.go"},
			outcome{"a.go:2: func Hello() {}\nsub/c.go:1: // Hello again\n", false}},
		{"include with braces", map[string]any{"pattern": "hello", "include": "*.{ts,tsx}"},
			outcome{"sub/d.ts:1: const hello = 1\nsub/e.tsx:1: hello()\n", false}},
		{"include with a path", map[string]any{"pattern": "Hello", "include": "sub/**/*.c"},
			outcome{"sub/deep/f.c:1: Hello\n", false}},
		{"path is a directory", map[string]any{"pattern": "Hello", "path": "sub"},
			outcome{"sub/c.go:1: // Hello again\nsub/deep/f.c:1: Hello\n", false}},
		{"include relative to path", map[string]any{"pattern": "Hello", "path": "sub", "include": "deep/*"},
			outcome{"sub/deep/f.c:1: Hello\n", false}},
		{"path is a file", map[string]any{"pattern": "o", "path": "b.txt"},
			outcome{"b.txt:1: hello world\n", false}},
		{"inside .git when asked", map[string]any{"pattern": "git", "path": ".git"},
			outcome{".git/config:1: hello from git\n", false}},
		{"no matches", map[string]any{"pattern": "nothing-here"}, outcome{"no matches", false}},
		{"invalid regexp", map[string]any{"pattern": "a("},
			outcome{"invalid pattern: error parsing regexp: missing closing ): `a(`", true}},
		{"invalid include", map[string]any{"pattern": "a", "include": "*.{go"},
			outcome{`invalid include: glob pattern "*.{go": unmatched {`, true}},
		{"missing path", map[string]any{"pattern": "a", "path": "nope"}, outcome{"nope: no such file or directory", true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, got(call(t, tools, "grep", tt.args))); diff != "" {
				t.Errorf("grep(%v) (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

func TestGrepLimits(t *testing.T) {
	var b strings.Builder
	for range 5 {
		b.WriteString("match " + strings.Repeat("x", 40) + "\n")
	}
	_, tools := workspace(t, map[string]string{"m.txt": b.String()}, &builtin.Options{MaxGrepMatches: 3, MaxLineBytes: 10})
	r := call(t, tools, "grep", map[string]any{"pattern": "match"})
	want := strings.Repeat("m.txt:N: match xxxx ... [line truncated]\n", 3)
	for i := 1; i <= 3; i++ {
		want = strings.Replace(want, ":N:", ":"+string(rune('0'+i))+":", 1)
	}
	want += "[more matches not shown: the limit of 3 was reached; narrow the pattern, path or include]\n"
	if diff := cmp.Diff(outcome{want, false}, got(r)); diff != "" {
		t.Errorf("grep (-want +got):\n%s", diff)
	}
	if r.Metadata["truncated"] != true {
		t.Errorf("metadata = %v, want truncated", r.Metadata)
	}
}

func TestGlob(t *testing.T) {
	files := map[string]string{
		"a.go": "", "b.md": "", "sub/c.go": "", "sub/deep/d.go": "", "sub/deep/e.txt": "", ".hidden/f.go": "",
	}
	_, tools := workspace(t, files, nil)
	tests := []struct {
		name string
		args map[string]any
		want outcome
	}{
		{"top level only", map[string]any{"pattern": "*.go"}, outcome{"a.go\n", false}},
		{"double star", map[string]any{"pattern": "**/*.go"}, outcome{".hidden/f.go\na.go\nsub/c.go\nsub/deep/d.go\n", false}},
		{"double star in the middle", map[string]any{"pattern": "sub/**/*.go"}, outcome{"sub/c.go\nsub/deep/d.go\n", false}},
		{"braces", map[string]any{"pattern": "**/*.{md,txt}"}, outcome{"b.md\nsub/deep/e.txt\n", false}},
		{"everything under", map[string]any{"pattern": "sub/**"}, outcome{"sub/c.go\nsub/deep/d.go\nsub/deep/e.txt\n", false}},
		{"with path", map[string]any{"pattern": "*.go", "path": "sub"}, outcome{"sub/c.go\n", false}},
		{"with path and double star", map[string]any{"pattern": "**/*.txt", "path": "sub"}, outcome{"sub/deep/e.txt\n", false}},
		{"directories are not listed", map[string]any{"pattern": "sub"}, outcome{"no files match", false}},
		{"question mark", map[string]any{"pattern": "?.md"}, outcome{"b.md\n", false}},
		{"no match", map[string]any{"pattern": "**/*.rs"}, outcome{"no files match", false}},
		{"bad pattern", map[string]any{"pattern": "[a"}, outcome{`invalid pattern: glob pattern "[a": syntax error in pattern`, true}},
		{"absolute pattern", map[string]any{"pattern": "/etc/*"}, outcome{`invalid pattern: glob pattern "/etc/*" must be relative (use path for the directory to search)`, true}},
		{"dot-dot pattern", map[string]any{"pattern": "../*"}, outcome{`invalid pattern: glob pattern "../*" must not contain a ".." segment`, true}},
		{"path is a file", map[string]any{"pattern": "*", "path": "a.go"}, outcome{"a.go is not a directory", true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, got(call(t, tools, "glob", tt.args))); diff != "" {
				t.Errorf("glob(%v) (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

func TestGlobLimit(t *testing.T) {
	_, tools := workspace(t, map[string]string{"1": "", "2": "", "3": "", "4": ""}, &builtin.Options{MaxGlobResults: 2})
	want := outcome{"1\n2\n[2 more files not shown; narrow the pattern or path]\n", false}
	if diff := cmp.Diff(want, got(call(t, tools, "glob", map[string]any{"pattern": "*"}))); diff != "" {
		t.Errorf("glob (-want +got):\n%s", diff)
	}
}

func TestConcurrentCalls(t *testing.T) {
	_, tools := workspace(t, map[string]string{"a.txt": "a\n"}, nil)
	done := make(chan struct{})
	for i := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			name := "w" + string(rune('0'+i)) + ".txt"
			b, _ := json.Marshal(map[string]any{"path": name, "content": "x"})
			if r, err := tools["write"].Call(context.Background(), b); err != nil || r.IsError {
				t.Errorf("write: %v %v", r, err)
			}
			b, _ = json.Marshal(map[string]any{"pattern": "a"})
			if r, err := tools["grep"].Call(context.Background(), b); err != nil || r.IsError {
				t.Errorf("grep: %v %v", r, err)
			}
		}()
	}
	for range 8 {
		<-done
	}
}
