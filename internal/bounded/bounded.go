// Package bounded reads the documents tollgate takes from files and stores
// (YAML hooks, policies and scripts; JSON MCP configurations and stored
// state) within limits that are checked before the document is parsed: its
// size, its nesting depth and, for YAML, its aliases. A parser never sees a
// document that could make it take unbounded memory or time (a deeply
// nested document, a "billion laughs" of nested aliases).
//
// It also cuts text that goes on to a log, a hook or a model at a byte
// limit, with a marker saying how much was cut ([Cut]).
package bounded

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/token"

	"github.com/tollgate-dev/tollgate/configfile"
)

// Defaults of [Limits].
const (
	// DefaultMaxBytes is the largest document read (4 MiB).
	DefaultMaxBytes = 4 << 20
	// DefaultMaxDepth is the deepest nesting of lists and mappings accepted.
	DefaultMaxDepth = 64
)

// Limits bounds one document. Zero fields take the defaults.
type Limits struct {
	// MaxBytes is the largest document, in bytes (default [DefaultMaxBytes]).
	MaxBytes int64
	// MaxDepth is the deepest nesting of lists and mappings (flow or block
	// style in YAML, arrays and objects in JSON), the top level counting 1
	// (default [DefaultMaxDepth]).
	MaxDepth int
	// AllowAliases lets YAML aliases (*name) through this check; a caller
	// that sets it must refuse or bound them itself, without expanding them
	// (an alias of an alias of ... grows exponentially when expanded).
	AllowAliases bool
}

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	return l
}

// Error is a document refused by a limit: FILE:LINE:COL: message, where
// Line and Col (from 1) are 0 when the problem has no position (size). It
// is the one problem type of every configuration file.
type Error = configfile.Problem

// Read reads all of r, or fails with an *Error when r holds more than
// l.MaxBytes bytes (reading at most one byte more). file names the document
// in errors.
func Read(r io.Reader, file string, l Limits) ([]byte, error) {
	l = l.withDefaults()
	b, err := io.ReadAll(io.LimitReader(r, l.MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if int64(len(b)) > l.MaxBytes {
		return nil, &Error{File: file, Message: fmt.Sprintf("the document is larger than %d bytes", l.MaxBytes)}
	}
	return b, nil
}

// ReadFile reads the regular file at path within l.MaxBytes. A named pipe,
// a device or a directory is refused without blocking (the file is opened
// with O_NONBLOCK). Errors from the file system wrap the os error
// (fs.ErrNotExist, ...).
func ReadFile(path string, l Limits) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &Error{File: path, Message: fmt.Sprintf("not a regular file (%s)", fi.Mode().Type())}
	}
	return Read(f, path, l)
}

// UnmarshalYAML decodes src, a YAML document that [CheckYAML] passed, into
// v with goccy/go-yaml's UnmarshalWithOptions and opts. The decoder's
// errors are returned as they are (a yaml.Error with the position); a panic
// of the decoder is an error (not an [*Error]: no limit was passed; the
// caller names the file as for the decoder's errors) instead of a crash of
// the host: the decoder dereferences nil on a tag over a scalar
// where a list is expected ("keys: !x 0", goccy/go-yaml issue 735, open in
// v1.19.2).
func UnmarshalYAML(src []byte, v any, opts ...yaml.DecodeOption) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the YAML decoder failed on this document (%v); a tag (!...) on a value where a list or mapping is expected does this", p)
		}
	}()
	return yaml.UnmarshalWithOptions(src, v, opts...)
}

// CheckYAML checks src, a YAML document named file, against l without
// parsing it: it tokenizes it (in time and memory linear in its size) and
// measures the nesting of flow collections ([ {) and of block collections
// (by indentation), and finds aliases. It returns nil or an *Error with the
// position of the first token past a limit. Syntax errors are left to the
// parser.
func CheckYAML(file string, src []byte, l Limits) (err error) {
	l = l.withDefaults()
	if int64(len(src)) > l.MaxBytes {
		return &Error{File: file, Message: fmt.Sprintf("the document is larger than %d bytes", l.MaxBytes)}
	}
	defer func() {
		if p := recover(); p != nil {
			err = &Error{File: file, Message: fmt.Sprintf("the YAML tokenizer failed on this document (%v)", p)}
		}
	}()
	toks := lexer.Tokenize(string(src))
	flow := 0
	var block []int // columns of the open block collections, innermost last
	for i, tk := range toks {
		line, col := 0, 0
		if tk.Position != nil {
			line, col = tk.Position.Line, tk.Position.Column
		}
		switch tk.Type {
		case token.AliasType:
			if !l.AllowAliases {
				return &Error{File: file, Line: line, Col: col, Message: "YAML aliases (*name) are not supported"}
			}
			continue
		case token.SequenceStartType, token.MappingStartType:
			flow++
		case token.SequenceEndType, token.MappingEndType:
			if flow > 0 {
				flow--
			}
			continue
		case token.DocumentHeaderType, token.DocumentEndType:
			block = block[:0]
			continue
		default:
			// A block collection opens at a "-" entry or at a mapping key
			// (a token followed by ":"), at its column.
			isKey := i+1 < len(toks) && toks[i+1].Type == token.MappingValueType
			if flow > 0 || (tk.Type != token.SequenceEntryType && !isKey) {
				continue
			}
			for len(block) > 0 && block[len(block)-1] >= col {
				block = block[:len(block)-1]
			}
			block = append(block, col)
		}
		if d := flow + len(block); d > l.MaxDepth {
			return &Error{File: file, Line: line, Col: col, Message: fmt.Sprintf("nested deeper than %d levels", l.MaxDepth)}
		}
	}
	return nil
}

// CheckJSON checks src, a JSON document named file, against l without
// parsing it: its size, and the nesting of arrays and objects (strings are
// skipped). Syntax errors are left to the parser. A document of at most
// l.MaxDepth bytes is not scanned: each level opens with a byte of its own,
// so it cannot nest deeper (most documents a store reads back, an event's
// say, are that small, and each stream and follower reads them).
func CheckJSON(file string, src []byte, l Limits) error {
	l = l.withDefaults()
	if int64(len(src)) > l.MaxBytes {
		return &Error{File: file, Message: fmt.Sprintf("the document is larger than %d bytes", l.MaxBytes)}
	}
	if len(src) <= l.MaxDepth {
		return nil
	}
	depth, line, col := 0, 1, 0
	inStr, esc := false, false
	for _, c := range src {
		col++
		switch {
		case c == '\n':
			line, col = line+1, 0
			esc = false
		case inStr:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '[' || c == '{':
			if depth++; depth > l.MaxDepth {
				return &Error{File: file, Line: line, Col: col, Message: fmt.Sprintf("nested deeper than %d levels", l.MaxDepth)}
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return nil
}

// IsLimit reports whether err is a refusal by a limit of this package.
func IsLimit(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// Cut returns s when it has at most max bytes (or max <= 0), and otherwise
// its first max bytes or fewer (never half a UTF-8 character) followed by a
// marker "…[N of M bytes cut]".
func Cut(s string, max int) string {
	if max <= 0 || len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("…[%d of %d bytes cut]", len(s)-cut, len(s))
}

// UniqueKeys reports the first object in the JSON text src that holds a key
// twice (RFC 8259 §4 leaves such objects' meaning to the reader: Go's decoder
// keeps the last value, another reader may keep the first). Whoever relies
// on a body meaning one thing, an approval's decision say, refuses such
// text. Object keys are compared after unescaping. src should already have
// passed [CheckJSON], which bounds its depth; a syntax error is returned as
// it is.
func UniqueKeys(file string, src []byte) error {
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber() // numbers are not its concern: one too large for a float64 is not an error here
	type frame struct {
		object bool
		seen   map[string]bool
		key    bool // the next string token is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if top != nil && top.object {
					top.key = true // the container was the value of a key
				}
				stack = append(stack, &frame{object: t == '{', seen: map[string]bool{}, key: t == '{'})
			default:
				stack = stack[:len(stack)-1]
			}
			continue
		case string:
			if top != nil && top.object && top.key {
				if top.seen[t] {
					return &Error{File: file, Message: fmt.Sprintf("key %q appears twice in one object", Cut(t, 64))}
				}
				top.seen[t] = true
				top.key = false
				continue
			}
		}
		if top != nil && top.object {
			top.key = true // a value ended; a key comes next
		}
	}
}
