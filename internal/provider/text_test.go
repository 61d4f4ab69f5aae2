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

// deltas hands on the text of pieces (each a JSON string's contents, as a
// stream's text deltas) as a stream does with TextDelta: after each piece
// the delta up to its last whole character, and what is held back once the
// stream ends.
func deltas(t *testing.T, pieces ...[]byte) []string {
	t.Helper()
	var (
		text strings.Builder
		sent int
		out  []string
	)
	for i, p := range pieces {
		var c Cursor
		if !c.Reset(append(append([]byte(`"`), p...), '"')) {
			t.Fatalf("%q: not a JSON string", p)
		}
		s, ok := c.Text()
		if !ok {
			t.Fatalf("%q: Cursor.Text false", p)
		}
		text.WriteString(s)
		var d string
		d, sent = TextDelta(text.String(), sent, false)
		out = append(out, d)
		if i == len(pieces)-1 {
			d, sent = TextDelta(text.String(), sent, true)
			out = append(out, d)
		}
	}
	if sent != text.Len() {
		t.Fatalf("sent %d of %d bytes", sent, text.Len())
	}
	return out
}

// TestTextDeltaSplitMidCharacter: a character cut between two text deltas,
// as raw bytes or between the halves of an escaped surrogate pair, is held
// back until it is whole: no delta has U+FFFD or invalid UTF-8 in it, and
// the deltas join into the text; what stays cut at the end is U+FFFD, as
// ValidText makes it.
func TestTextDeltaSplitMidCharacter(t *testing.T) {
	const want = "été/日本語 😀 done"
	check := func(how string, ds []string, want string) {
		t.Helper()
		for _, d := range ds {
			if !utf8.ValidString(d) || strings.ContainsRune(d, utf8.RuneError) {
				t.Fatalf("%s: delta %q of %q is not whole characters", how, d, ds)
			}
		}
		if got := strings.Join(ds, ""); got != want {
			t.Fatalf("%s: deltas %q join into %q, want %q", how, ds, got, want)
		}
	}
	for i := range len(want) + 1 {
		for j := i; j <= len(want); j++ {
			check(fmt.Sprintf("UTF-8 cut at %d and %d", i, j), deltas(t, rawJSON(want[:i]), rawJSON(want[i:j]), rawJSON(want[j:])), want)
		}
	}
	parts := asciiJSON(want)
	for i := range len(parts) + 1 {
		a, b := strings.Join(parts[:i], ""), strings.Join(parts[i:], "")
		check(fmt.Sprintf("escapes cut after %d", i), deltas(t, []byte(a), []byte(b)), want)
	}
	for _, tc := range []struct {
		pieces []string
		want   string
	}{
		{[]string{`a\ud83d`}, "a\ufffd"},
		{[]string{"a\xe6\x97"}, "a\ufffd\ufffd"},
		{[]string{"a\xff", "b"}, "a\ufffdb"},
		{[]string{`\ude00`, `\ud83d`, "x"}, "\ufffd\ufffdx"},
	} {
		var pieces [][]byte
		for _, p := range tc.pieces {
			pieces = append(pieces, []byte(p))
		}
		ds := deltas(t, pieces...)
		if got := strings.Join(ds, ""); got != tc.want {
			t.Errorf("%q: deltas %q, want %q", tc.pieces, ds, tc.want)
		}
	}
}

// FuzzTextDelta: however a stream's text is cut into pieces, the deltas
// are valid UTF-8 and join into ValidText of the whole.
func FuzzTextDelta(f *testing.F) {
	for _, s := range []string{"été/日本語 😀", "\xed\xa0\xbd\xed\xb8\x80", "a\xffb\xe6\x97", "\xf0\x9f\x98"} {
		f.Add([]byte(s), uint8(1), uint8(3))
	}
	f.Fuzz(func(t *testing.T, s []byte, i, j uint8) {
		cuts := []int{min(int(i), len(s)), min(int(i)+int(j), len(s))}
		var (
			text strings.Builder
			sent int
			got  string
		)
		prev := 0
		for _, c := range append(cuts, len(s)) {
			text.Write(s[prev:c])
			prev = c
			d, end := TextDelta(text.String(), sent, false)
			if !utf8.ValidString(d) || end < sent || end > text.Len() {
				t.Fatalf("%q: delta %q, end %d (sent %d, len %d)", s, d, end, sent, text.Len())
			}
			got, sent = got+d, end
		}
		d, _ := TextDelta(text.String(), sent, true)
		got += d
		if want := ValidText(string(s)); got != want {
			t.Fatalf("%q cut at %v: deltas %q, want %q", s, cuts, got, want)
		}
	})
}
