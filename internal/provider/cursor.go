package provider

import (
	"bytes"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
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
// The text must be valid JSON: [Cursor.Reset] checks it first, accepting
// and rejecting exactly what json.Valid does (its nesting limit of 10000
// included; FuzzCursorValue compares the two), so that the decoding itself
// never meets a syntax error. A decoder that needs encoding/json's error
// for rejected text gets it from json.Unmarshal.
//
// Strings are the decoder's own copies. Keys and raw values are borrowed:
// they share memory with the text, or with the cursor's own buffer of
// unescaped strings, and are valid only until the text or the cursor
// changes (the next Reset). A decoder that keeps one must copy it
// (bytes.Clone).
type Cursor struct {
	data []byte
	i    int
	// buf holds the strings that needed unescaping. It is only appended
	// to between two Resets, so borrowed strings never see it change.
	buf []byte
}

// Reset makes the cursor read data, which must be one valid JSON value
// with optional space around it; it reports whether it is (as json.Valid
// does). Strings borrowed before are invalid after it.
func (c *Cursor) Reset(data []byte) bool {
	c.data, c.i = data, 0
	c.buf = c.buf[:0]
	return valid(data)
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
	for i, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return i
		}
	}
	return -1
}

// String returns the next value, and true, when it is a JSON string; it
// skips any other value and reports false (a string field keeps its
// value). The string is a copy: escapes are decoded, and invalid UTF-8
// and lone surrogates become U+FFFD, as encoding/json decodes them.
func (c *Cursor) String() (string, bool) {
	if c.space() != '"' {
		c.Skip()
		return "", false
	}
	start := c.i
	c.i = skipString(c.data, c.i)
	return string(c.unquote(c.data[start:c.i])), true
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

// maxDepth is encoding/json's limit on nesting: at most this many objects
// and arrays open at once.
const maxDepth = 10000

// valid reports whether b is one JSON value with optional space around it
// (RFC 8259), accepting and rejecting exactly what json.Valid does: no
// more than maxDepth objects and arrays open at once, and string contents
// not checked for UTF-8 (FuzzCursorValue compares the two). It is
// iterative, with one bit per open container.
func valid(b []byte) bool {
	var objects [maxDepth/64 + 1]uint64 // bit d: the container at depth d is an object
	depth := 0
	i := skipSpace(b, 0)
	for {
		// A value starts at i.
		if i >= len(b) {
			return false
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			if depth == maxDepth {
				return false
			}
			w, bit := depth/64, uint64(1)<<(depth%64)
			if c == '{' {
				objects[w] |= bit
			} else {
				objects[w] &^= bit
			}
			depth++
			i = skipSpace(b, i+1)
			if i < len(b) && (c == '{' && b[i] == '}' || c == '[' && b[i] == ']') {
				depth--
				i++
				break // an empty container: a whole value
			}
			if c == '{' {
				if i = member(b, i); i < 0 {
					return false
				}
			}
			continue // the first value inside
		case c == '"':
			if i = validString(b, i); i < 0 {
				return false
			}
		case c == '-' || c >= '0' && c <= '9':
			if i = validNumber(b, i); i < 0 {
				return false
			}
		case c == 't':
			if i = literal(b, i, "true"); i < 0 {
				return false
			}
		case c == 'f':
			if i = literal(b, i, "false"); i < 0 {
				return false
			}
		case c == 'n':
			if i = literal(b, i, "null"); i < 0 {
				return false
			}
		default:
			return false
		}
		// A value ended at i: close containers until one goes on.
		for {
			i = skipSpace(b, i)
			if depth == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			d := depth - 1
			object := objects[d/64]>>(d%64)&1 == 1
			c := b[i]
			if c == ',' {
				i = skipSpace(b, i+1)
				if object {
					if i = member(b, i); i < 0 {
						return false
					}
				}
				break // the next value
			}
			if object && c == '}' || !object && c == ']' {
				depth--
				i++
				continue
			}
			return false
		}
	}
}

// member checks the key of an object member at b[i] and the ':' after
// it, and returns the index of its value (after space), or -1.
func member(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = validString(b, i); i < 0 {
		return -1
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	return skipSpace(b, i+1)
}

// validString returns the index just past the JSON string at b[i] (a '"'),
// or -1: no control character, only JSON's escapes.
func validString(b []byte, i int) int {
	for i++; i < len(b); {
		c := b[i]
		switch {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		case c == '\\':
			if i+1 >= len(b) {
				return -1
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return -1
				}
				for _, h := range b[i+2 : i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return -1
					}
				}
				i += 6
			default:
				return -1
			}
		default:
			i++
		}
	}
	return -1
}

// validNumber returns the index just past the JSON number at b[i], or -1:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		if i+1 >= len(b) || b[i+1] < '0' || b[i+1] > '9' {
			return -1
		}
		i = digits(b, i+1)
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return -1
		}
		i = digits(b, i)
	}
	return i
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// literal returns the index just past word at b[i], or -1.
func literal(b []byte, i int, word string) int {
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return -1
	}
	return i + len(word)
}
