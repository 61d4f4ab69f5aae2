package builtin_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestEditCRLFMainC is the case of a CRLF file edited with the text read
// shows: the edit must match and keep every CRLF.
func TestEditCRLFMainC(t *testing.T) {
	root, tools := workspace(t, map[string]string{"main.c": "int main() {\r\n\treturn 0;\r\n}\r\n"}, nil)
	res := call(t, tools, "edit", map[string]any{"path": "main.c", "oldString": "\treturn 0;\n}", "newString": "\treturn 1;\n}"})
	if res.IsError {
		t.Fatalf("edit failed: %s", res.Output)
	}
	if got, want := readFile(t, filepath.Join(root, "main.c")), "int main() {\r\n\treturn 1;\r\n}\r\n"; got != want {
		t.Fatalf("main.c = %q, want %q", got, want)
	}
}

func TestEditLineEndings(t *testing.T) {
	tests := []struct {
		name             string
		file             string
		oldS, newS       string
		replaceAll       bool
		want             string
		wantErrSubstring string
	}{
		{name: "LF file stays LF", file: "a\nb\nc\n", oldS: "b\n", newS: "B\nB2\n", want: "a\nB\nB2\nc\n"},
		{name: "one-line edit adding a line in a CRLF file", file: "a\r\nb\r\nc\r\n", oldS: "b", newS: "b\nb2", want: "a\r\nb\r\nb2\r\nc\r\n"},
		{name: "CRLF oldString in a CRLF file", file: "a\r\nb\r\n", oldS: "a\r\nb", newS: "x\r\ny", want: "x\r\ny\r\n"},
		{name: "CRLF oldString in an LF file", file: "a\nb\n", oldS: "a\r\nb", newS: "x\ny", want: "x\ny\n"},
		{name: "mixed: each replaced break keeps its ending", file: "a\r\nb\nc\r\nd\n", oldS: "a\nb\nc", newS: "A\nB\nC", want: "A\r\nB\nC\r\nd\n"},
		{name: "mixed: extra lines take the last replaced ending", file: "a\nb\r\nc\n", oldS: "a\nb", newS: "A\nX\nB", want: "A\nX\nB\r\nc\n"},
		{name: "last line without a break takes the dominant ending", file: "a\r\nb\r\nc", oldS: "c", newS: "c\nd", want: "a\r\nb\r\nc\r\nd"},
		{name: "replaceAll in CRLF", file: "x\r\ny\r\nx\r\n", oldS: "x\n", newS: "z\n", replaceAll: true, want: "z\r\ny\r\nz\r\n"},
		{name: "BOM survives an edit of the first line", file: "\uFEFFfirst\r\nsecond\r\n", oldS: "first", newS: "1st", want: "\uFEFF1st\r\nsecond\r\n"},
		{name: "BOM survives when oldString carries it", file: "\uFEFFfirst\n", oldS: "\uFEFFfirst", newS: "1st", want: "\uFEFF1st\n"},
		{name: "lone CR is text, not a break", file: "a\rb\n", oldS: "a\rb", newS: "ab", want: "ab\n"},
		{name: "only line endings differ", file: "a\r\nb\r\n", oldS: "a\nb", newS: "a\r\nb", wantErrSubstring: "differ only in line endings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, tools := workspace(t, map[string]string{"f": tt.file}, nil)
			res := call(t, tools, "edit", map[string]any{"path": "f", "oldString": tt.oldS, "newString": tt.newS, "replaceAll": tt.replaceAll})
			if tt.wantErrSubstring != "" {
				if !res.IsError || !strings.Contains(res.Output, tt.wantErrSubstring) {
					t.Fatalf("edit = %q (error %v), want an error with %q", res.Output, res.IsError, tt.wantErrSubstring)
				}
				if got := readFile(t, filepath.Join(root, "f")); got != tt.file {
					t.Fatalf("file changed to %q", got)
				}
				return
			}
			if res.IsError {
				t.Fatalf("edit failed: %s", res.Output)
			}
			if got := readFile(t, filepath.Join(root, "f")); got != tt.want {
				t.Fatalf("file = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestReadAndEditAgree: whatever read shows of a line (CRLF, BOM) is text
// that edit finds.
func TestReadAndEditAgree(t *testing.T) {
	_, tools := workspace(t, map[string]string{"f": "\uFEFFone\r\ntwo\r\n"}, nil)
	out := call(t, tools, "read", map[string]any{"path": "f"}).Output
	if want := "     1\tone\n     2\ttwo\n"; out != want {
		t.Fatalf("read = %q, want %q", out, want)
	}
	res := call(t, tools, "edit", map[string]any{"path": "f", "oldString": "one\ntwo", "newString": "1\n2"})
	if res.IsError {
		t.Fatalf("edit of the text read shows failed: %s", res.Output)
	}
	if out := call(t, tools, "grep", map[string]any{"pattern": "^1$"}).Output; out != "f:1: 1\n" {
		t.Fatalf("grep ^1$ = %q: the BOM must not be part of line 1", out)
	}
}

func TestWriteKeepsConventions(t *testing.T) {
	tests := []struct {
		name, old, content, want string
	}{
		{"CRLF file, LF content", "a\r\nb\r\n", "x\ny\n", "x\r\ny\r\n"},
		{"CRLF file, content with its own CR", "a\r\nb\r\n", "x\r\ny\n", "x\r\ny\n"},
		{"mixed file is left alone", "a\r\nb\n", "x\ny\n", "x\ny\n"},
		{"LF file", "a\nb\n", "x\ny\n", "x\ny\n"},
		{"BOM kept", "\uFEFFa\n", "x\n", "\uFEFFx\n"},
		{"BOM and CRLF kept", "\uFEFFa\r\n", "x\n", "\uFEFFx\r\n"},
		{"content's own BOM", "\uFEFFa\n", "\uFEFFx\n", "\uFEFFx\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, tools := workspace(t, map[string]string{"f": tt.old}, nil)
			if res := call(t, tools, "write", map[string]any{"path": "f", "content": tt.content}); res.IsError {
				t.Fatal(res.Output)
			}
			if got := readFile(t, filepath.Join(root, "f")); got != tt.want {
				t.Fatalf("file = %q, want %q", got, tt.want)
			}
		})
	}
	// A new file is written exactly as given.
	root, tools := workspace(t, nil, nil)
	call(t, tools, "write", map[string]any{"path": "new", "content": "a\nb"})
	if got := readFile(t, filepath.Join(root, "new")); got != "a\nb" {
		t.Fatalf("new file = %q", got)
	}
}
