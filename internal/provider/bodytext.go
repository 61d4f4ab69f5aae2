package provider

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxBodyText is the length, in bytes, of the text [BodyText] keeps.
const maxBodyText = 300

// BodyText returns the text of an answer body that is not the API's JSON
// error object, for an error message: the title of an HTML page (a proxy's
// or load balancer's "502 Bad Gateway" page, where the title says it all and
// the rest is markup), else the body itself (a plain-text "upstream connect
// error", a JSON object of another shape). Every run of whitespace and
// control characters becomes one space, so that a server's bytes never put a
// carriage return or an escape sequence into a log line or a terminal, and
// the text is cut to 300 bytes on a character boundary, with "..." when it
// was cut. Invalid UTF-8 becomes U+FFFD. An empty body gives "".
func BodyText(b []byte) string {
	if t, ok := htmlTitle(b); ok {
		return "the server answered with an HTML page: " + oneLine(t)
	}
	return oneLine(b)
}

// asciiLower returns a copy of b with the ASCII letters A-Z in lower case
// and every other byte as it is, so that it has b's length and offsets.
func asciiLower(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

// htmlTitle returns the text of the <title> element of b when b is an HTML
// page (its first non-blank byte is '<' and it has a title); only the first
// 64 KiB are searched.
func htmlTitle(b []byte) ([]byte, bool) {
	b = bytes.TrimLeftFunc(b[:min(len(b), 64<<10)], unicode.IsSpace)
	if len(b) == 0 || b[0] != '<' {
		return nil, false
	}
	// Only ASCII letters are folded, byte for byte: bytes.ToLower changes
	// the length of some characters (Ⱥ is 2 bytes, its lower case 3), and
	// indices into it would not be indices into b.
	lower := asciiLower(b)
	i := bytes.Index(lower, []byte("<title"))
	if i < 0 {
		return nil, false
	}
	j := bytes.IndexByte(lower[i:], '>')
	if j < 0 {
		return nil, false
	}
	start := i + j + 1
	end := bytes.Index(lower[start:], []byte("</title"))
	if end < 0 {
		return nil, false
	}
	t := b[start : start+end]
	if len(bytes.TrimSpace(t)) == 0 {
		return nil, false
	}
	return t, true
}

// oneLine returns b as one line of at most maxBodyText bytes (see
// [BodyText]).
func oneLine(b []byte) string {
	var s strings.Builder
	space := false
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		b = b[n:]
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == 0x2028 || r == 0x2029 {
			space = s.Len() > 0
			continue
		}
		if space {
			s.WriteByte(' ')
			space = false
		}
		if s.Len()+utf8.RuneLen(r) > maxBodyText {
			s.WriteString("...")
			break
		}
		s.WriteRune(r)
	}
	return s.String()
}
