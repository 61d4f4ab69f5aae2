package provider

import (
	"unicode/utf16"
	"unicode/utf8"
)

// Text is a string field of a wire struct that a server may cut between
// two chunks of a stream (the arguments of an OpenAI tool call, the
// partial_json of an Anthropic input_json_delta), decoded without losing a
// character cut in two: a JSON string is unquoted as
// encoding/json unquotes it, except that bytes that are not UTF-8 (a server
// that cut the text between the bytes of a character) are kept as they are,
// and so is an escaped UTF-16 surrogate without its other half (a server
// that cut "\ud83d\ude00" between its halves), as its three bytes of
// WTF-8. Once the pieces are joined, [ValidText] puts the halves together
// and makes the text UTF-8. A JSON object or array is its own text (the
// arguments of a tool call as llama.cpp's server and Text Generation
// Inference have sent them, an object where the API has its JSON text),
// without its insignificant whitespace;
// any other value that is not a string leaves the field as it is, as the
// providers' lenient decoding leaves a string field that gets another type.
type Text string

// UnmarshalJSON implements [json.Unmarshaler]. b is a valid JSON value (the
// decoder checked the whole input before).
func (a *Text) UnmarshalJSON(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	switch b[0] {
	case '"':
		in := b[1 : len(b)-1]
		if !hasByte(in, '\\') {
			*a = Text(in) // its bytes as they are
			return nil
		}
		*a = Text(appendText(make([]byte, 0, len(in)), in))
	case '{', '[':
		*a = Text(appendCompact(make([]byte, 0, len(b)), b))
	}
	return nil
}

// Text is [Cursor.String] for a [Text] field: the next value, and true,
// when it is a JSON string (unquoted keeping what [Text] keeps), an object
// or an array (as its text, without insignificant white space), as
// [Text.UnmarshalJSON] decodes it; any other value is skipped and false
// returned (the field keeps its value). The string is a copy.
func (c *Cursor) Text() (string, bool) {
	switch c.space() {
	case '"':
		start := c.i
		c.i = skipString(c.data, c.i)
		in := c.data[start+1 : c.i-1]
		if !hasByte(in, '\\') {
			return string(in), true
		}
		n := len(c.buf)
		c.buf = appendText(c.buf, in)
		return string(c.buf[n:]), true
	case '{', '[':
		start := c.i
		c.Skip()
		n := len(c.buf)
		c.buf = appendCompact(c.buf, c.data[start:c.i])
		return string(c.buf[n:]), true
	}
	c.Skip()
	return "", false
}

// TextDelta returns the piece of s, the text of a stream as its pieces
// arrived (decoded as [Text] decodes them), that follows the sent bytes
// already handed on: up to the end of its last whole character, as UTF-8
// ([ValidText]), and the length of s it reaches (the next call's sent).
// An incomplete UTF-8 sequence at the end of s, or the first half of a
// surrogate pair, is held back for the next piece to complete, unless
// flush is set (the stream has ended: what is held back is U+FFFD).
// Handing on the deltas of successive calls, the last with flush, gives
// ValidText(s) in all; a delta that is valid UTF-8 is a slice of s,
// without an allocation.
func TextDelta(s string, sent int, flush bool) (delta string, end int) {
	end = len(s)
	if !flush {
		end = max(sent, end-heldBack(s))
	}
	return ValidText(s[sent:end]), end
}

// heldBack returns the number of bytes at the end of s that a next piece
// may complete into a character: the start of a UTF-8 sequence with fewer
// continuation bytes than its first byte announces, the WTF-8 of a high
// surrogate (see [Text]), or a high surrogate followed by the start of a
// sequence (of its low surrogate's WTF-8).
func heldBack(s string) int {
	n := incomplete(s)
	if m := len(s) - n; m >= 3 && s[m-3] == 0xed && s[m-2] >= 0xa0 && s[m-2] <= 0xaf && s[m-1]&0xc0 == 0x80 && n > 0 && n < 3 {
		n += 3
	}
	return n
}

// incomplete is heldBack without the surrogate followed by the start of
// another: the start of a sequence, or a high surrogate, at the end of s.
func incomplete(s string) int {
	n := len(s)
	for i := n - 1; i >= 0 && i >= n-3; i-- {
		c := s[i]
		if c&0xc0 == 0x80 {
			continue // a continuation byte
		}
		k := n - i - 1 // continuation bytes after c
		need := 0
		switch {
		case c >= 0xc2 && c <= 0xdf:
			need = 1
		case c >= 0xe0 && c <= 0xef:
			need = 2
		case c >= 0xf0 && c <= 0xf4:
			need = 3
		}
		if k < need || (c == 0xed && k == 2 && s[i+1] >= 0xa0 && s[i+1] <= 0xaf) {
			return n - i
		}
		return 0
	}
	return 0
}

// AppendText appends to dst the text that a [Text] field takes from the
// JSON value v (valid JSON): a string's, unquoted keeping what [Text]
// keeps, or an object's or an array's own, without insignificant white
// space; ok is false, and dst unchanged, for any other value.
func AppendText(dst, v []byte) (out []byte, ok bool) {
	if len(v) == 0 {
		return dst, false
	}
	switch v[0] {
	case '"':
		return appendText(dst, v[1:len(v)-1]), true
	case '{', '[':
		return appendCompact(dst, v), true
	}
	return dst, false
}

// appendText appends to dst the text of the JSON string whose quotes were
// removed to give in (valid JSON), keeping invalid UTF-8 and lone
// surrogates (see [Text]).
func appendText(dst, in []byte) []byte {
	for i := 0; i < len(in); {
		c := in[i]
		if c != '\\' {
			dst = append(dst, c)
			i++
			continue
		}
		switch e := in[i+1]; e {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := hex4(in[i+2:])
			i += 6
			if utf16.IsSurrogate(r) {
				if r < 0xdc00 && i+6 <= len(in) && in[i] == '\\' && in[i+1] == 'u' {
					if r2 := hex4(in[i+2:]); r2 >= 0xdc00 && r2 < 0xe000 {
						dst = utf8.AppendRune(dst, utf16.DecodeRune(r, r2))
						i += 6
						continue
					}
				}
				// The WTF-8 of the surrogate.
				dst = append(dst, byte(0xe0|r>>12), byte(0x80|(r>>6)&0x3f), byte(0x80|r&0x3f))
				continue
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default: // '"', '\\', '/'
			dst = append(dst, e)
		}
		i += 2
	}
	return dst
}

// appendCompact appends to dst the JSON value v (valid JSON) without the
// white space outside its strings, as json.Compact writes it.
func appendCompact(dst, v []byte) []byte {
	in, esc := false, false
	for _, c := range v {
		switch {
		case esc:
			esc = false
		case in && c == '\\':
			esc = true
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			continue
		}
		dst = append(dst, c)
	}
	return dst
}

// surrogate returns the surrogate whose WTF-8 starts s, if one does.
func surrogate(s string) (rune, bool) {
	if len(s) < 3 || s[0] != 0xed || s[1] < 0xa0 || s[1] > 0xbf || s[2]&0xc0 != 0x80 {
		return 0, false
	}
	return 0xd000 | rune(s[1]&0x3f)<<6 | rune(s[2]&0x3f), true
}

// ValidText returns the joined pieces of a [Text] as UTF-8:
// a high surrogate followed by a low one (each from its own piece) becomes
// their character; what remains invalid becomes U+FFFD as encoding/json
// decodes it (one per lone surrogate, one per invalid byte). Text that is
// valid UTF-8 already is returned as it is.
func ValidText(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	out := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		if r, ok := surrogate(s[i:]); ok {
			if r < 0xdc00 {
				if r2, ok := surrogate(s[i+3:]); ok && r2 >= 0xdc00 {
					out = utf8.AppendRune(out, utf16.DecodeRune(r, r2))
					i += 6
					continue
				}
			}
			out = utf8.AppendRune(out, utf8.RuneError)
			i += 3
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, s[i:i+n]...)
		}
		i += n
	}
	return string(out)
}

// ValidBytes is [ValidText] for bytes: b itself when it is valid UTF-8.
func ValidBytes(b []byte) []byte {
	if utf8.Valid(b) {
		return b
	}
	return []byte(ValidText(string(b)))
}
