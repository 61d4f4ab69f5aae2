package approval

import "unicode/utf8"

// canonical reports whether b is exactly the canonical form [Digest] hashes:
// one JSON value with no space outside strings, object keys unique and in
// increasing byte order, strings without escapes and without the characters
// encoding/json escapes (control characters, '<', '>', '&', U+2028, U+2029,
// invalid UTF-8), and numbers as JSON writes them. For such input, decoding
// with UseNumber and encoding again gives b back, so Digest can hash it as
// it is. It answers false for anything else, which Digest then canonicalises
// the long way; false is always safe.
func canonical(b []byte) bool {
	c := canonChecker{b: b}
	return c.value(0) && c.i == len(b)
}

type canonChecker struct {
	b []byte
	i int
}

// maxCanonDepth bounds the nesting the checker follows; deeper input takes
// the long way.
const maxCanonDepth = 64

func (c *canonChecker) value(depth int) bool {
	if c.i >= len(c.b) || depth > maxCanonDepth {
		return false
	}
	switch ch := c.b[c.i]; {
	case ch == '{':
		c.i++
		if c.peek('}') {
			c.i++
			return true
		}
		var prev []byte
		for first := true; ; first = false {
			start := c.i + 1
			if !c.str() {
				return false
			}
			key := c.b[start : c.i-1]
			if !first && string(key) <= string(prev) {
				return false
			}
			prev = key
			if !c.peek(':') {
				return false
			}
			c.i++
			if !c.value(depth + 1) {
				return false
			}
			if c.peek(',') {
				c.i++
				continue
			}
			if c.peek('}') {
				c.i++
				return true
			}
			return false
		}
	case ch == '[':
		c.i++
		if c.peek(']') {
			c.i++
			return true
		}
		for {
			if !c.value(depth + 1) {
				return false
			}
			if c.peek(',') {
				c.i++
				continue
			}
			if c.peek(']') {
				c.i++
				return true
			}
			return false
		}
	case ch == '"':
		return c.str()
	case ch == '-' || ch >= '0' && ch <= '9':
		return c.number()
	}
	for _, lit := range []string{"true", "false", "null"} {
		if len(c.b)-c.i >= len(lit) && string(c.b[c.i:c.i+len(lit)]) == lit {
			c.i += len(lit)
			return true
		}
	}
	return false
}

func (c *canonChecker) peek(ch byte) bool { return c.i < len(c.b) && c.b[c.i] == ch }

// str accepts a string with no escape and nothing encoding/json would
// write otherwise.
func (c *canonChecker) str() bool {
	if !c.peek('"') {
		return false
	}
	c.i++
	for c.i < len(c.b) {
		ch := c.b[c.i]
		switch {
		case ch == '"':
			c.i++
			return true
		case ch == '\\' || ch < 0x20 || ch == '<' || ch == '>' || ch == '&':
			return false
		case ch < utf8.RuneSelf:
			c.i++
		default:
			r, n := utf8.DecodeRune(c.b[c.i:])
			if r == utf8.RuneError || r == '\u2028' || r == '\u2029' {
				return false
			}
			c.i += n
		}
	}
	return false
}

// number accepts JSON's number grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (c *canonChecker) number() bool {
	if c.peek('-') {
		c.i++
	}
	digits := func() int {
		n := 0
		for c.i < len(c.b) && c.b[c.i] >= '0' && c.b[c.i] <= '9' {
			c.i++
			n++
		}
		return n
	}
	if c.peek('0') {
		c.i++
	} else if digits() == 0 {
		return false
	}
	if c.peek('.') {
		c.i++
		if digits() == 0 {
			return false
		}
	}
	if c.peek('e') || c.peek('E') {
		c.i++
		if c.peek('+') || c.peek('-') {
			c.i++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}
