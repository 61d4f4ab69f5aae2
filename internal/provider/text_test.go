package provider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// asciiJSON is s as a JSON string whose non-ASCII characters are all
// escaped, astral ones as surrogate pairs, as Python's json.dumps writes it.
func asciiJSON(s string) []string {
	var parts []string // one escape or byte per part
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			parts = append(parts, `\`+string(r))
		case r < 0x20 || r >= utf8.RuneSelf:
			if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
				parts = append(parts, fmt.Sprintf(`\u%04x`, r1), fmt.Sprintf(`\u%04x`, r2))
			} else {
				parts = append(parts, fmt.Sprintf(`\u%04x`, r))
			}
		default:
			parts = append(parts, string(r))
		}
	}
	return parts
}

// rawJSON is the text of s as a JSON string, without its quotes, with its
// bytes as they are (a cut character's bytes too), as a server that writes
// bytes writes it.
func rawJSON(s string) []byte {
	var b []byte
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = fmt.Appendf(b, `\u%04x`, c)
		default:
			b = append(b, c)
		}
	}
	return b
}

// joined decodes each piece as one chunk's arguments and joins them as the
// accumulator does.
func joined(t *testing.T, pieces ...[]byte) string {
	t.Helper()
	var b strings.Builder
	for _, p := range pieces {
		var f struct {
			Arguments Text `json:"arguments"`
		}
		if err := json.Unmarshal(append(append([]byte(`{"arguments":"`), p...), `"}`...), &f); err != nil {
			t.Fatalf("%q: %v", p, err)
		}
		b.WriteString(string(f.Arguments))
	}
	return ValidText(b.String())
}

// TestTextSplitMidCharacter: a character cut between two chunks, as raw bytes (a server that cuts
// UTF-8 between bytes) or between the halves of an escaped surrogate pair (a
// server that cuts UTF-16), is whole once the pieces are joined, wherever
// the cut falls.
func TestTextSplitMidCharacter(t *testing.T) {
	const want = `{"path":"été/日本語 😀.txt","quote":"a\"b\\c"}`
	for i := range len(want) + 1 {
		if got := joined(t, rawJSON(want[:i]), rawJSON(want[i:])); got != want {
			t.Fatalf("UTF-8 cut at byte %d: %q, want %q", i, got, want)
		}
	}
	parts := asciiJSON(want)
	for i := range len(parts) + 1 {
		a, b := strings.Join(parts[:i], ""), strings.Join(parts[i:], "")
		if got := joined(t, []byte(a), []byte(b)); got != want {
			t.Fatalf("escapes cut after %d of %d: %q | %q gave %q, want %q", i, len(parts), a, b, got, want)
		}
	}
	// What stays invalid becomes U+FFFD, as encoding/json decodes it.
	for _, tc := range []struct{ in, want string }{
		{`\ud83d`, "\ufffd"},
		{`\ude00\ud83d`, "\ufffd\ufffd"},
		{"a\xffb", "a\ufffdb"},
		{"\xe6\x97", "\ufffd\ufffd"},
	} {
		if got := joined(t, []byte(tc.in)); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzText: a whole JSON string decodes as encoding/json decodes it
// (raw bytes that look like the WTF-8 of a surrogate aside: kept as one
// U+FFFD rather than three).
func FuzzText(f *testing.F) {
	for _, s := range []string{`{\"path\":\"a.txt\"}`, `\ud83d\ude00`, `\ud83d`, "\xe6\x97", `\u00e9\n\t\/`, `\uDBFF\uDFFF`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		quoted := append(append([]byte(`"`), in...), '"')
		var want string
		if json.Unmarshal(quoted, &want) != nil {
			return
		}
		for i := 0; i+1 < len(in); i++ {
			if in[i] == 0xed && in[i+1] >= 0xa0 && in[i+1] <= 0xbf {
				return
			}
		}
		var a Text
		if err := a.UnmarshalJSON(quoted); err != nil {
			t.Fatal(err)
		}
		if got := ValidText(string(a)); got != want {
			t.Fatalf("%q: %q, want %q", in, got, want)
		}
		var c Cursor
		if !c.Reset(quoted) {
			t.Fatalf("%q: not valid", quoted)
		}
		if got, ok := c.Text(); !ok || got != string(a) {
			t.Fatalf("%q: Cursor.Text %q, %v; UnmarshalJSON %q", in, got, ok, a)
		}
		if !bytes.Equal([]byte(ValidText(want)), []byte(want)) {
			t.Fatalf("ValidText changed valid text %q", want)
		}
	})
}

// TestTextValues: an object or an array is its own text, without the white
// space outside its strings; another value leaves the field as it is; both
// ways of decoding agree.
func TestTextValues(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"{ \"path\" : \"a b.txt\",\n \"n\": [1, 2] }", `{"path":"a b.txt","n":[1,2]}`},
		{`[ "x\" y" ]`, `["x\" y"]`},
		{`"plain é"`, "plain é"},
		{`12`, "kept"},
		{`null`, "kept"},
		{`true`, "kept"},
	} {
		a := Text("kept")
		if err := json.Unmarshal([]byte(tc.in), &a); err != nil || string(a) != tc.want {
			t.Errorf("UnmarshalJSON(%s) = %q, %v; want %q", tc.in, a, err, tc.want)
		}
		var c Cursor
		c.Reset([]byte(tc.in))
		got, ok := c.Text()
		if !ok {
			got = "kept"
		}
		if got != tc.want {
			t.Errorf("Cursor.Text(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
