package bounded

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

// bombs are the documents that made the YAML parser take hundreds of
// megabytes or minutes: 40 KB of nesting in flow and block style, and a
// 416-byte document of nested aliases.
func bombs() map[string]string {
	laughs := "a: &a [x, x, x, x, x, x, x, x, x]\n"
	for i, n := range "bcdefghi" {
		prev := string("abcdefghi"[i])
		laughs += string(n) + ": &" + string(n) + " [" + strings.Repeat("*"+prev+", ", 8) + "*" + prev + "]\n"
	}
	return map[string]string{
		"flow":    "hooks: " + strings.Repeat("[", 20000) + strings.Repeat("]", 20000),
		"mapping": "hooks: " + strings.Repeat("{a: ", 10000) + strings.Repeat("}", 10000),
		"block":   strings.Repeat("- ", 20000) + "x\n",
		"indent":  nestedBlock(150),
		"aliases": laughs,
	}
}

// nestedBlock is a block mapping n levels deep, one key per line.
func nestedBlock(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Repeat(" ", i) + "k:\n")
	}
	return b.String()
}

func TestCheckYAMLRefusesBombs(t *testing.T) {
	for name, src := range bombs() {
		err := CheckYAML("f.yaml", []byte(src), Limits{})
		want := "nested deeper than 64 levels"
		if name == "aliases" {
			want = "YAML aliases (*name) are not supported"
		}
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "f.yaml:") {
			t.Errorf("%s (%d bytes): %v, want %q", name, len(src), err, want)
		}
	}
	if len(bombs()["aliases"]) > 420 {
		t.Errorf("the alias bomb has %d bytes", len(bombs()["aliases"]))
	}
}

func TestCheckYAMLAcceptsOrdinaryDocuments(t *testing.T) {
	for _, src := range []string{
		"hooks:\n  - event: preToolUse\n    matcher: \"*\"\n    action: {type: log, message: \"${tool}\"}\n",
		"turns:\n  - toolCalls:\n      - name: read\n        args: {path: a, opts: {x: [1, [2, {y: 3}]]}}\n",
		nestedBlock(64),
		"a: &x 1\nb: *x\n", // allowed below
	} {
		if err := CheckYAML("f", []byte(src), Limits{AllowAliases: true}); err != nil {
			t.Errorf("%q: %v", src, err)
		}
	}
	if err := CheckYAML("f", []byte(nestedBlock(65)), Limits{}); err == nil {
		t.Error("65 levels accepted with a limit of 64")
	}
	if err := CheckYAML("f", []byte("a: [[1]]\n"), Limits{MaxDepth: 2}); err == nil || !strings.Contains(err.Error(), "f:1:5: nested deeper than 2") {
		t.Errorf("depth 3 with a limit of 2: %v", err)
	}
}

func TestCheckJSON(t *testing.T) {
	deep := strings.Repeat("[", 65) + strings.Repeat("]", 65)
	if err := CheckJSON("m.json", []byte(deep), Limits{}); err == nil || err.Error() != "m.json:1:65: nested deeper than 64 levels" {
		t.Errorf("deep: %v", err)
	}
	ok := `{"a": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"", "b": [1, {"c": []}]}`
	if err := CheckJSON("m.json", []byte(ok), Limits{}); err != nil {
		t.Errorf("brackets inside a string counted: %v", err)
	}
}

// A document no longer than the depth limit is not scanned: it cannot nest
// past it, and is refused only for its size. One byte longer is scanned.
func TestCheckJSONShortDocuments(t *testing.T) {
	l := Limits{MaxBytes: 64, MaxDepth: 4}
	for _, src := range []string{"[[[[", "[[[]", `"[[["`} {
		if err := CheckJSON("f", []byte(src), l); err != nil {
			t.Errorf("%s within 4 levels: %v", src, err)
		}
	}
	if err := CheckJSON("f", []byte("[[[[["), l); err == nil || err.Error() != "f:1:5: nested deeper than 4 levels" {
		t.Errorf("[[[[[ with a limit of 4 levels: %v", err)
	}
	if err := CheckJSON("f", []byte("[[[]"), Limits{MaxBytes: 3, MaxDepth: 4}); err == nil || err.Error() != "f: the document is larger than 3 bytes" {
		t.Errorf("4 bytes with a limit of 3: %v", err)
	}
}

func TestReadSizeLimit(t *testing.T) {
	if _, err := Read(strings.NewReader("12345"), "f", Limits{MaxBytes: 4}); !IsLimit(err) || err.Error() != "f: the document is larger than 4 bytes" {
		t.Errorf("5 bytes with a limit of 4: %v", err)
	}
	if b, err := Read(strings.NewReader("1234"), "f", Limits{MaxBytes: 4}); err != nil || string(b) != "1234" {
		t.Errorf("4 bytes: %q %v", b, err)
	}
	var e *Error
	if _, err := Read(io.MultiReader(strings.NewReader("x"), errReader{}), "f", Limits{}); err == nil || errors.As(err, &e) {
		t.Errorf("a read error: %v", err)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		s    string
		max  int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 0, "hello"},
		{"hello world", 5, "hello…[6 of 11 bytes cut]"},
		{"ééé", 3, "é…[4 of 6 bytes cut]"}, // never half a character
	} {
		if got := Cut(tc.s, tc.max); got != tc.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", tc.s, tc.max, got, tc.want)
		}
	}
}

// FuzzCheckJSON: on valid JSON, CheckJSON refuses exactly the documents
// nested deeper than the limit, as encoding/json's tokens count it.
func FuzzCheckJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":"]["}]}`, `[[[]]]`, `"\\"[`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		const limit = 3
		err := CheckJSON("f", src, Limits{MaxDepth: limit})
		if !json.Valid(src) {
			return
		}
		d := json.NewDecoder(bytes.NewReader(src))
		depth, deepest := 0, 0
		for {
			tok, err := d.Token()
			if err != nil {
				break
			}
			switch tok {
			case json.Delim('['), json.Delim('{'):
				depth++
				deepest = max(deepest, depth)
			case json.Delim(']'), json.Delim('}'):
				depth--
			}
		}
		if (err != nil) != (deepest > limit) {
			t.Fatalf("%q: depth %d, CheckJSON: %v", src, deepest, err)
		}
	})
}

// FuzzCheckYAML: CheckYAML never panics, and it never accepts, under a depth
// limit of 4, a document that opens with five nested flow sequences.
func FuzzCheckYAML(f *testing.F) {
	for _, s := range bombs() {
		f.Add([]byte(s[:min(len(s), 200)]))
	}
	f.Add([]byte("a: [1, {b: [2]}]\n- x\n"))
	f.Add([]byte("[[[[[x]]]]]")) // reaches the assertion without fuzzing
	f.Fuzz(func(t *testing.T, src []byte) {
		const max = 4
		if CheckYAML("f", src, Limits{MaxDepth: max}) != nil {
			return
		}
		if bytes.HasPrefix(src, []byte("[[[[[")) {
			t.Fatalf("%q: five nested flow sequences accepted with a limit of %d", src, max)
		}
	})
}

func TestUniqueKeys(t *testing.T) {
	for _, tt := range []struct {
		src string
		dup bool
	}{
		{`{"decision":"deny","argsDigest":"x","decision":"approve"}`, true},
		{`{"a":{"b":1,"b":2}}`, true},
		{`{"a":[{"k":1},{"k":2}],"b":{"k":1},"k":3}`, false},
		{`{"a":"x","\u0061":"y"}`, true}, // the same key, escaped
		{`{"a":{"x":1},"a":2}`, true},
		{`[{"a":1,"b":[1,"a"],"c":null}]`, false},
		{`"a"`, false},
	} {
		err := UniqueKeys("body", []byte(tt.src))
		if (err != nil) != tt.dup {
			t.Errorf("%s: %v, want duplicate %v", tt.src, err, tt.dup)
		}
	}
}
