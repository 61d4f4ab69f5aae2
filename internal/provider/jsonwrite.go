package provider

import (
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// The writing half of the providers' wire codecs: requests are encoded by
// hand, field by field, with these helpers, into the very bytes
// encoding/json's Marshal would produce for the same wire structs (the
// providers' tests compare the two on every request they build and under
// fuzzing), without its reflection and allocations.

const hexDigits = "0123456789abcdef"

// AppendString appends s to dst as a JSON string, escaped as encoding/json's
// Marshal escapes it: '"', '\\' and control characters (\b, \f, \n, \r, \t
// in their short forms, the others as \u00XX), '<', '>' and '&' as \u003c,
// \u003e, \u0026, U+2028 and U+2029 as \u2028 and \u2029, and each byte of
// invalid UTF-8 as \ufffd.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// ErrInvalidJSON is the error of [AppendRaw] for a value that is not JSON.
var ErrInvalidJSON = errors.New("not a valid JSON value")

// AppendRaw appends the JSON value raw to dst as encoding/json's Marshal
// appends a json.RawMessage: compacted (whitespace outside strings left
// out), with '<', '>', '&', U+2028 and U+2029 escaped as in [AppendString];
// nil or empty raw is null. raw that is not valid JSON is [ErrInvalidJSON].
func AppendRaw(dst, raw []byte) ([]byte, error) {
	if len(raw) == 0 {
		return append(dst, "null"...), nil
	}
	if !json.Valid(raw) {
		return dst, ErrInvalidJSON
	}
	return AppendValidRaw(dst, raw), nil
}

// AppendValidRaw is [AppendRaw] for raw that the caller has checked is
// valid JSON (json.Valid), without checking it again: a request's tool
// schemas and arguments, checked when the request is translated, are not
// scanned twice. Invalid raw gives invalid output.
func AppendValidRaw(dst, raw []byte) []byte {
	if len(raw) == 0 {
		return append(dst, "null"...)
	}
	inString, escaped := false, false
	start := 0
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '<' || c == '>' || c == '&':
			dst = append(dst, raw[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			start = i + 1
		case c == 0xE2 && i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xA8:
			dst = append(dst, raw[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[raw[i+2]&0xF])
			i += 2
			start = i + 1
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			dst = append(dst, raw[start:i]...)
			start = i + 1
		}
	}
	return append(dst, raw[start:]...)
}
