package provider

import (
	"bytes"
	"encoding/json"
	"iter"
	"strconv"
	"unicode/utf8"
)

// String is a string field of a wire struct that encoding/json decodes with
// fewer allocations than a string: a value equal to the field's current one
// (a chunk's id, model or fingerprint, repeated by every chunk of a stream
// decoded into one reused struct) or one of the wire formats' fixed words
// (roles, finish and stop reasons, event, block and delta types) costs
// none. Its values are those of a string field: JSON strings decode as
// encoding/json decodes them (escapes, invalid UTF-8 replaced by U+FFFD);
// null, and a value of another type, leave the field as it is, as the
// providers' lenient decoding leaves a string field that gets another type.
type String string

// UnmarshalJSON implements [json.Unmarshaler]. b is a valid JSON value (the
// decoder checked the whole input before).
func (s *String) UnmarshalJSON(b []byte) error {
	if len(b) < 2 || b[0] != '"' {
		return nil
	}
	in := b[1 : len(b)-1]
	for _, c := range in {
		if c == '\\' || c >= 0x80 {
			// Escapes and non-ASCII text: encoding/json's own rules.
			var v string
			if json.Unmarshal(b, &v) == nil {
				*s = String(v)
			}
			return nil
		}
	}
	switch {
	case string(in) == string(*s):
	case len(in) == 0:
		*s = ""
	default:
		if w, ok := words[string(in)]; ok {
			*s = w
		} else {
			*s = String(in)
		}
	}
	return nil
}

// words are the fixed words of the Chat Completions and Messages wire
// formats that [String] decodes without allocating.
var words = func() map[string]String {
	m := map[string]String{}
	for _, w := range []string{
		// Both.
		"assistant", "user", "system", "tool", "function", "error", "text", "object",
		// Chat Completions.
		"chat.completion", "chat.completion.chunk", "stop", "tool_calls", "function_call",
		"length", "content_filter", "default", "auto",
		// Messages API.
		"message", "tool_use", "thinking", "redacted_thinking", "server_tool_use",
		"message_start", "message_delta", "message_stop", "content_block_start",
		"content_block_delta", "content_block_stop", "ping", "text_delta",
		"input_json_delta", "thinking_delta", "signature_delta", "end_turn",
		"stop_sequence", "max_tokens", "pause_turn", "refusal", "standard",
		"overloaded_error", "api_error", "rate_limit_error",
	} {
		m[w] = String(w)
	}
	return m
}()

// Word returns b as a String, without allocating when b is one of the
// fixed words of [String] (an SSE event: line's type).
func Word(b []byte) String {
	if w, ok := words[string(b)]; ok {
		return w
	}
	return String(b)
}

// Members yields the members of the JSON object obj, in order: each key
// unquoted and each value as its raw JSON. A key with escapes or invalid
// UTF-8 is decoded as encoding/json decodes it (the one case that allocates); a key that occurs twice is yielded twice
// (encoding/json keeps the last). obj must be valid JSON (json.Valid); when
// it is not an object, Members yields nothing.
func Members(obj []byte) iter.Seq2[[]byte, []byte] {
	return func(yield func(key, value []byte) bool) {
		i := skipSpace(obj, 0)
		if i >= len(obj) || obj[i] != '{' {
			return
		}
		i++
		for {
			i = skipSpace(obj, i)
			if i >= len(obj) || obj[i] != '"' {
				return // '}'
			}
			end := skipString(obj, i)
			key := obj[i+1 : max(i+1, end-1)]
			if bytes.IndexByte(key, '\\') >= 0 || !utf8.Valid(key) {
				var k string
				if json.Unmarshal(obj[i:end], &k) != nil {
					return
				}
				key = []byte(k)
			}
			i = skipSpace(obj, end)
			if i >= len(obj) || obj[i] != ':' {
				return
			}
			i = skipSpace(obj, i+1)
			end = skipValue(obj, i)
			if !yield(key, obj[i:end]) {
				return
			}
			i = skipSpace(obj, end)
			if i >= len(obj) || obj[i] != ',' {
				return
			}
			i++
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the JSON string that starts at
// b[i] (a '"').
func skipString(b []byte, i int) int {
	for i++; i < len(b); {
		switch b[i] {
		case '\\':
			i += 2
		case '"':
			return i + 1
		default:
			i++
		}
	}
	return len(b)
}

// skipValue returns the index just past the JSON value that starts at b[i].
func skipValue(b []byte, i int) int {
	switch {
	case i >= len(b):
		return len(b)
	case b[i] == '"':
		return skipString(b, i)
	case b[i] == '{' || b[i] == '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return len(b)
	}
	for i < len(b) && literalByte(b[i]) {
		i++
	}
	return i
}

// literalByte reports whether c can be part of a number, true, false or null.
func literalByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c == '-' || c == '+' || c == '.' || c == 'E'
}

// Int returns the JSON number v as an int64, or 0 when v is not an integer
// that fits (a fraction, an exponent, a string, null), as the providers'
// lenient decoding leaves an integer field that gets such a value.
func Int(v []byte) int64 {
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return 0
	}
	return n
}
