package configread

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Member is one "key": value pair of a JSON object, with the byte offsets
// of its key and of its value in the whole document.
type Member struct {
	Key      string
	KeyOff   int
	Value    json.RawMessage
	ValueOff int
}

// OffsetError is a problem of a JSON document at byte offset Off.
type OffsetError struct {
	Off int
	Err error
}

// Error is Err's message; the offset is for the caller to place.
func (e *OffsetError) Error() string { return e.Err.Error() }

// Object splits raw, a JSON object that starts at byte offset base of its
// document, into its members, in order. A duplicate key, a value that is
// not an object and invalid JSON are *OffsetErrors at their offset
// (RFC 8259 §4 leaves duplicate keys' meaning to the reader: one reader
// keeps the first, Go the last; a configuration says one thing).
func Object(raw []byte, base int) ([]Member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, syntaxAt(err, base, len(raw))
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, &OffsetError{base + skipSpace(raw, 0, 0), fmt.Errorf("want a JSON object, got %s", KindJSON(raw))}
	}
	var out []Member
	seen := map[string]bool{}
	for dec.More() {
		keyOff := skipSpace(raw, int(dec.InputOffset()), ',')
		tok, err := dec.Token()
		if err != nil {
			return nil, syntaxAt(err, base, len(raw))
		}
		key, _ := tok.(string)
		valOff := skipSpace(raw, int(dec.InputOffset()), ':')
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, syntaxAt(err, base, len(raw))
		}
		if seen[key] {
			return nil, &OffsetError{base + keyOff, fmt.Errorf("duplicate key %q", key)}
		}
		seen[key] = true
		out = append(out, Member{Key: key, KeyOff: base + keyOff, Value: val, ValueOff: base + valOff})
	}
	if _, err := dec.Token(); err != nil {
		return nil, syntaxAt(err, base, len(raw))
	}
	return out, nil
}

// syntaxAt returns a decoder's error as an *OffsetError in the document:
// base is where the decoded text starts, n its length.
func syntaxAt(err error, base, n int) error {
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return &OffsetError{base + int(se.Offset), fmt.Errorf("invalid JSON: %v", se)}
	}
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		return &OffsetError{base + int(te.Offset), err}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &OffsetError{base + n, errors.New("invalid JSON: unexpected end of input")}
	}
	return &OffsetError{base, fmt.Errorf("invalid JSON: %v", err)}
}

// Document checks that data holds one JSON value and nothing after it, and
// returns that value and the offset where it starts.
func Document(data []byte) (json.RawMessage, int, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var top json.RawMessage
	if err := dec.Decode(&top); err != nil {
		return nil, 0, syntaxAt(err, 0, len(data))
	}
	if dec.More() {
		return nil, 0, &OffsetError{int(dec.InputOffset()), errors.New("invalid JSON: data after the top-level value")}
	}
	return top, skipSpace(data, 0, 0), nil
}

func skipSpace(data []byte, i int, also byte) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\r', '\n', also:
			i++
		default:
			return i
		}
	}
	return i
}

// LineCol returns the position of byte offset off in data (Col in bytes);
// the zero Pos for an offset outside it.
func LineCol(data []byte, off int) Pos {
	if off < 0 || off > len(data) {
		return Pos{}
	}
	before := data[:off]
	return Pos{bytes.Count(before, []byte("\n")) + 1, off - (bytes.LastIndexByte(before, '\n') + 1) + 1}
}

// KindJSON names the type of a JSON value for messages.
func KindJSON(raw []byte) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "nothing"
	}
	switch t[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}
