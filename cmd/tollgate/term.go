package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// termWriter is the last guard between text the command did not write (a
// model's, a tool's, a server's, a file's) and the terminal: it passes
// newlines and tabs, and shows every other control character (C0, DEL, C1,
// including ESC and CSI), every invalid UTF-8 byte, the Unicode
// bidirectional and line-separator controls and the invisible zero width
// characters (U+200B-U+200F, U+2060, U+FEFF) as \xNN or \u{NNNN}, so that no
// output can move the cursor, clear the screen or reorder a line. Every
// byte tollgate prints to stdout or stderr passes through one.
type termWriter struct {
	w       io.Writer
	partial []byte // the start of a UTF-8 sequence split between writes
}

func (t *termWriter) Write(p []byte) (int, error) {
	n := len(p)
	if len(t.partial) > 0 {
		p = append(t.partial, p...)
		t.partial = nil
	}
	// Hold back an incomplete character at the end for the next write.
	if i := lastRuneStart(p); i >= 0 && !utf8.FullRune(p[i:]) && len(p)-i < utf8.UTFMax {
		t.partial = append([]byte(nil), p[i:]...)
		p = p[:i]
	}
	if _, err := t.w.Write(escapeTerminal(p, false)); err != nil {
		return 0, err
	}
	return n, nil
}

// lastRuneStart returns the index of the last byte of p that starts a
// multi-byte UTF-8 sequence within its last three bytes, or -1.
func lastRuneStart(p []byte) int {
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax+1; i-- {
		if p[i] >= 0xc0 {
			return i
		}
		if p[i] < 0x80 {
			return -1
		}
	}
	return -1
}

// escapeTerminal returns p with what termWriter escapes escaped; with
// oneLine, newlines and tabs are escaped too (for names and IDs, which must
// stay on their line).
func escapeTerminal(p []byte, oneLine bool) []byte {
	clean := true
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRune(p[i:])
		if unsafeRune(r, size, oneLine) {
			clean = false
			break
		}
		i += size
	}
	if clean {
		return p
	}
	var b bytes.Buffer
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRune(p[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, "\\x%02x", p[i])
		case unsafeRune(r, size, oneLine) && r < 0x100:
			fmt.Fprintf(&b, "\\x%02x", r)
		case unsafeRune(r, size, oneLine):
			fmt.Fprintf(&b, "\\u{%04x}", r)
		default:
			b.Write(p[i : i+size])
		}
		i += size
	}
	return b.Bytes()
}

// unsafeRune reports whether r (decoded from size bytes) must not reach a
// terminal as it is.
func unsafeRune(r rune, size int, oneLine bool) bool {
	switch {
	case r == utf8.RuneError && size == 1:
		return true
	case r == '\n' || r == '\t':
		return oneLine
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
		return true
	case r == 0x2028 || r == 0x2029, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true // line separators and bidirectional controls
	case r >= 0x200b && r <= 0x200f, r == 0x2060, r == 0xfeff:
		// Zero width space, non-joiner and joiner, left-to-right and
		// right-to-left marks, word joiner, zero width no-break space:
		// invisible, so shown, lest a line that starts with one pass
		// for tollgate's own.
		return true
	}
	return false
}

// field makes a name, an ID or a principal from outside the command safe to
// print inside a line: every control character, newlines and tabs included,
// is escaped, so that it cannot start a line of its own ("approved by ...").
func field(s string) string { return string(escapeTerminal([]byte(s), true)) }

// jsonSafe escapes in a JSON text the characters encoding/json leaves as
// they are but a terminal would act on (DEL, C1 controls, bidirectional
// controls), as \u00NN escapes that keep the JSON valid and equal.
func jsonSafe(b []byte) []byte {
	var out bytes.Buffer
	changed := false
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r != '\n' && r != '\t' && unsafeRune(r, size, false) && !(r == utf8.RuneError && size == 1) {
			fmt.Fprintf(&out, "\\u%04x", r)
			changed = true
		} else {
			out.Write(b[i : i+size])
		}
		i += size
	}
	if !changed {
		return b
	}
	return out.Bytes()
}

// errorLines renders err for stderr, one line per error: the errors of an
// errors.Join each get their own line, and every newline, carriage return
// and tab inside one (a provider's error body, a server's name or stderr)
// is escaped as \n, \r or \t, so that no text from a model, server or tool
// can start a line of its own that looks like tollgate's.
//
// A list of errors wrapped in context ("run: --policy: " around a
// *configfile.Error, whose problems unwrap as a list) gives a line per
// listed error, each with that context in front, so that every line names
// the flag and the file:line:col it is about.
func errorLines(err error) []string {
	msg := err.Error()
	for e := err; e != nil; e = errors.Unwrap(e) {
		j, ok := e.(interface{ Unwrap() []error })
		if !ok {
			continue
		}
		var msgs []string
		for _, inner := range j.Unwrap() {
			if inner != nil {
				msgs = append(msgs, inner.Error())
			}
		}
		if e.Error() != strings.Join(msgs, "\n") {
			break // not a list one error a line (fmt.Errorf("%w: %w")): keep the message whole
		}
		prefix, found := strings.CutSuffix(msg, e.Error())
		if !found {
			break // the context is not simply in front: keep the message whole
		}
		var out []string
		for _, inner := range j.Unwrap() {
			if inner != nil {
				for _, l := range errorLines(inner) {
					out = append(out, oneLineSafe(prefix)+l)
				}
			}
		}
		if len(out) > 0 {
			return out
		}
		break
	}
	return []string{oneLineSafe(msg)}
}

// printError writes err to w as "tollgate: " lines (see errorLines).
func printError(w io.Writer, err error) {
	for _, l := range errorLines(err) {
		fmt.Fprintln(w, "tollgate:", l)
	}
}
