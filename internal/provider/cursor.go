package provider

import (
	"encoding/json"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Cursor reads a JSON text value by value, for the hand-written decoders of
// the providers' wire structs. Its methods implement, field kind by field
// kind, what json.Unmarshal does with the same bytes when a value of
// another type is forgiven (the providers' lenient decoding): a string
// field takes a JSON string and keeps its value for anything else, an
// integer field takes an integer that fits, an object's keys match a
// field's name exactly or else case-insensitively (Unicode simple folding,
// as encoding/json matches them), a repeated key decodes again into the
// same field, unknown keys are skipped. The decoders built on it are
// checked against json.Unmarshal by differential tests and fuzz targets.
//
// The text must be valid JSON: [Cursor.Reset] checks it with json.Valid
// (encoding/json's own scanner, with its nesting limit of 10000), so that
// what is rejected and why is exactly what encoding/json rejects, and the
// decoding itself never meets a syntax error.
//
// Strings and raw values are borrowed: they share memory with the text, or
// with the cursor's own buffer of unescaped strings, and are valid only
// until the text or the cursor changes (the next Reset). A decoder that
// keeps one must copy it (strings.Clone, bytes.Clone).
type Cursor struct {
	data []byte
	i    int
	// buf holds the strings that needed unescaping. It is only appended
	// to between two Resets, so borrowed strings never see it change.
	buf []byte
}

// Reset makes the cursor read data, which must be one valid JSON value
// with optional space around it; it reports whether it is (json.Valid).
// Strings borrowed before are invalid after it.
func (c *Cursor) Reset(data []byte) bool {
	c.data, c.i = data, 0
	c.buf = c.buf[:0]
	return json.Valid(data)
}

// space skips white space and returns the next byte (0 at the end).
func (c *Cursor) space() byte {
	for c.i < len(c.data) {
		switch b := c.data[c.i]; b {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return b
		}
	}
	return 0
}

// Null consumes a null and reports whether the next value was one.
func (c *Cursor) Null() bool {
	if c.space() == 'n' {
		c.i += len("null")
		return true
	}
	return false
}

// Object consumes the '{' of an object and reports true; for any other
// value it skips the value and reports false.
func (c *Cursor) Object() bool {
	if c.space() == '{' {
		c.i++
		return true
	}
	c.Skip()
	return false
}

// Array consumes the '[' of an array and reports true; for any other value
// it skips the value and reports false.
func (c *Cursor) Array() bool {
	if c.space() == '[' {
		c.i++
		return true
	}
	c.Skip()
	return false
}

// More reports whether the array being read has another element (and
// consumes the ',' before it), or consumes its ']' and reports false.
func (c *Cursor) More() bool {
	switch c.space() {
	case ']':
		c.i++
		return false
	case ',':
		c.i++
	}
	return true
}

// Key reads the next key of the object being read, unescaped as
// encoding/json unescapes keys, and consumes the ':' after it; at the end
// of the object it consumes the '}' and reports false. The key is
// borrowed.
func (c *Cursor) Key() ([]byte, bool) {
	switch c.space() {
	case '}':
		c.i++
		return nil, false
	case ',':
		c.i++
		c.space()
	}
	start := c.i
	c.i = skipString(c.data, c.i)
	key := c.unquote(c.data[start:c.i])
	c.space()
	c.i++ // ':'
	return key, true
}

// Field returns the index in names of the field that key selects, as
// encoding/json selects a struct field: the name equal to key, else the
// first equal under Unicode simple case folding (bytes.EqualFold, which
// is encoding/json's foldName equivalence); -1 for none.
func Field(key []byte, names []string) int {
	for i, n := range names {
		if string(key) == n {
			return i
		}
	}
	k := borrow(key)
	for i, n := range names {
		if strings.EqualFold(k, n) {
			return i
		}
	}
	return -1
}

// String returns the next value, and true, when it is a JSON string; it
// skips any other value and reports false (a string field keeps its
// value). The string is borrowed: escapes are decoded, and invalid UTF-8
// and lone surrogates become U+FFFD, as encoding/json decodes them.
func (c *Cursor) String() (string, bool) {
	if c.space() != '"' {
		c.Skip()
		return "", false
	}
	start := c.i
	c.i = skipString(c.data, c.i)
	return borrow(c.unquote(c.data[start:c.i])), true
}

// Int returns the next value, and true, when it is a JSON number that
// strconv.ParseInt reads as an int64 (no fraction, no exponent, in
// range), as encoding/json decodes an int64 field; it skips any other
// value and reports false (the field keeps its value).
func (c *Cursor) Int() (int64, bool) {
	b := c.space()
	if b != '-' && (b < '0' || b > '9') {
		c.Skip()
		return 0, false
	}
	start := c.i
	c.Skip()
	return parseInt(c.data[start:c.i])
}

// parseInt reads the JSON number v as strconv.ParseInt(v, 10, 64) does.
func parseInt(v []byte) (int64, bool) {
	neg := len(v) > 0 && v[0] == '-'
	if neg {
		v = v[1:]
	}
	if len(v) == 0 {
		return 0, false
	}
	var n uint64
	for _, d := range v {
		if d < '0' || d > '9' {
			return 0, false // a fraction or an exponent
		}
		if n > (1<<63)/10 {
			return 0, false
		}
		n = n*10 + uint64(d-'0')
	}
	switch {
	case neg && n <= 1<<63:
		return -int64(n), true // -(1<<63) wraps to itself
	case !neg && n < 1<<63:
		return int64(n), true
	}
	return 0, false
}

// Raw returns the next value as it stands in the text, without the space
// around it (what a json.RawMessage field receives, "null" included). It
// is borrowed.
func (c *Cursor) Raw() []byte {
	c.space()
	start := c.i
	c.Skip()
	return c.data[start:c.i:c.i]
}

// Skip skips the next value.
func (c *Cursor) Skip() {
	c.space()
	c.i = skipValue(c.data, c.i)
}

// End reports whether only space is left.
func (c *Cursor) End() bool { return c.space() == 0 && c.i >= len(c.data) }

// unquote returns the contents of the JSON string token s (quotes
// included): s itself when it has no escape and is valid UTF-8, else its
// decoding, appended to c.buf, following encoding/json's unquoteBytes.
func (c *Cursor) unquote(s []byte) []byte {
	s = s[1 : len(s)-1]
	plain := true
	for _, b := range s {
		if b == '\\' || b >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain || (!hasByte(s, '\\') && utf8.Valid(s)) {
		return s
	}
	start := len(c.buf)
	for r := 0; r < len(s); {
		switch b := s[r]; {
		case b == '\\':
			switch s[r+1] {
			case 'b':
				c.buf = append(c.buf, '\b')
			case 'f':
				c.buf = append(c.buf, '\f')
			case 'n':
				c.buf = append(c.buf, '\n')
			case 'r':
				c.buf = append(c.buf, '\r')
			case 't':
				c.buf = append(c.buf, '\t')
			case 'u':
				rr := hex4(s[r+2:])
				r += 6
				if utf16.IsSurrogate(rr) {
					if r+6 <= len(s) && s[r] == '\\' && s[r+1] == 'u' {
						if dec := utf16.DecodeRune(rr, hex4(s[r+2:])); dec != utf8.RuneError {
							c.buf = utf8.AppendRune(c.buf, dec)
							r += 6
							continue
						}
					}
					rr = utf8.RuneError
				}
				c.buf = utf8.AppendRune(c.buf, rr)
				continue
			default: // '"', '\\', '/'
				c.buf = append(c.buf, s[r+1])
			}
			r += 2
		case b < utf8.RuneSelf:
			c.buf = append(c.buf, b)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			c.buf = utf8.AppendRune(c.buf, rr)
			r += size
		}
	}
	return c.buf[start:len(c.buf):len(c.buf)]
}

func hasByte(s []byte, b byte) bool {
	for _, c := range s {
		if c == b {
			return true
		}
	}
	return false
}

// hex4 reads the four hex digits of a \u escape (valid JSON has them).
func hex4(s []byte) rune {
	var r rune
	for _, c := range s[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r*16 + rune(c)
	}
	return r
}

// borrow returns b as a string without copying it: b must not change while
// the string is in use (the rule of the Cursor's borrowed values).
func borrow(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// Intern returns s as a String: one of the fixed words of [String] (the
// word's own, static, string) or s itself.
func Intern(s string) String {
	if w, ok := words[s]; ok {
		return w
	}
	return String(s)
}

// Keep returns s as a string of its own: the fixed word's static string,
// or a copy of s (which may be borrowed from a [Cursor]).
func Keep(s String) string {
	if w, ok := words[string(s)]; ok {
		return string(w)
	}
	return strings.Clone(string(s))
}
