package mcptool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Bounds of the messages a stdio server may send.
const (
	// defaultMaxMessageBytes is the default of [Options].MaxMessageBytes
	// (4 MiB), well under the SDK's own limit for one line (16 MiB), whose
	// breach closes the connection.
	defaultMaxMessageBytes = 4 << 20
	// cutResultBytes is how much text of an oversized tool result is kept
	// (256 KiB, the agent's default result cap: the model would see no more).
	cutResultBytes = 256 << 10
	// maxIDBytes bounds the JSON-RPC ID an oversized message may carry.
	maxIDBytes = 256
	// maxKeyBytes bounds the object keys the scanner compares.
	maxKeyBytes = 16
	// maxFrames bounds the nesting the scanner keeps frames for: what it
	// looks for is at most 4 levels deep, and deeper levels are only
	// counted, so that "[[[[…" costs no memory.
	maxFrames = 5
	// maxTexts bounds the text values of a result the scanner keeps (empty
	// ones too).
	maxTexts = 1024
)

// metaCut is the metadata key [Tool.Call] sets, on a result that was cut
// because the server's message exceeded [Options].MaxMessageBytes, to the
// size of that message in bytes (an int64).
const metaCut = "mcpCutFrom"

// cutMeta is the _meta key of a result the transport cut.
const cutMeta = "tollgate/cutFrom"

// oversize reads one JSON-RPC message too large to hand to the SDK, as it
// streams, in bounded memory, and keeps what is needed to answer in its
// place: the message's ID, whether it is a request or notification (it has
// a method), a response with a result or an error, and for a tool result
// (result.content[].text, result.isError) the first cutResultBytes of its
// text. Keys may come in any order (Node.js servers write the ID last).
type oversize struct {
	stack []frame // the outermost maxFrames levels
	depth int     // the nesting level now; frames exist for depth <= maxFrames
	n     int64   // bytes seen

	inStr   bool
	esc     bool
	uLeft   int // hex digits of a \u escape still to come
	strKind valueKind
	key     []byte

	scalar     bool
	scalarKind valueKind

	id       []byte
	idTooBig bool

	texts     [][]byte // raw (escaped) text values, in order
	textBytes int
	textFull  bool
	isError   []byte

	method, result, errorResp bool
}

type frame struct {
	obj       bool
	expectKey bool
	key       string
}

type valueKind int

const (
	kindNone valueKind = iota
	kindKey
	kindID
	kindText
	kindIsError
)

// write feeds the next bytes of the message (without its newline).
func (s *oversize) write(p []byte) {
	for i := 0; i < len(p); i++ {
		if s.inStr && !s.esc && s.uLeft == 0 && (s.strKind == kindNone || s.strKind == kindText && s.textFull) {
			// Inside a string nothing is kept of: skip to its next quote
			// or backslash at once (most of an oversized message).
			j := bytes.IndexByte(p[i:], '"')
			if k := bytes.IndexByte(p[i:], '\\'); k >= 0 && (j < 0 || k < j) {
				j = k
			}
			if j < 0 {
				s.n += int64(len(p) - i)
				return
			}
			s.n += int64(j)
			i += j
		}
		c := p[i]
		s.n++
		if s.inStr {
			s.strByte(c)
			continue
		}
		if s.scalar {
			switch c {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				s.scalar = false
			default:
				if s.scalarKind == kindID {
					s.addID(c)
				} else if s.scalarKind == kindIsError && len(s.isError) < 8 {
					s.isError = append(s.isError, c)
				}
				continue
			}
		}
		switch c {
		case '{', '[':
			s.depth++
			if len(s.stack) < maxFrames {
				s.stack = append(s.stack, frame{obj: c == '{', expectKey: c == '{'})
			}
		case '}', ']':
			if s.depth > 0 {
				if s.depth == len(s.stack) {
					s.stack = s.stack[:len(s.stack)-1]
				}
				s.depth--
			}
		case ',':
			if top := s.top(); top != nil && top.obj {
				top.expectKey, top.key = true, ""
			}
		case '"':
			s.inStr, s.esc, s.uLeft = true, false, 0
			if top := s.top(); top != nil && top.obj && top.expectKey {
				s.strKind, s.key = kindKey, s.key[:0]
				continue
			}
			s.strKind = s.kind()
			switch s.strKind {
			case kindID:
				s.addID('"')
			case kindText:
				if s.textFull || len(s.texts) >= maxTexts {
					s.strKind = kindNone
				} else {
					s.texts = append(s.texts, nil)
				}
			}
		case ':', ' ', '\t', '\r', '\n':
		default:
			s.scalar, s.scalarKind = true, s.kind()
			if s.scalarKind == kindID {
				s.addID(c)
			} else if s.scalarKind == kindIsError {
				s.isError = append(s.isError[:0], c)
			}
		}
	}
}

func (s *oversize) top() *frame {
	if len(s.stack) == 0 || s.depth != len(s.stack) {
		return nil // nothing, or a level too deep to keep
	}
	return &s.stack[len(s.stack)-1]
}

// kind says what the value starting now is.
func (s *oversize) kind() valueKind {
	st := s.stack
	if s.depth != len(st) {
		return kindNone
	}
	switch {
	case len(st) == 1 && st[0].key == "id":
		return kindID
	case len(st) == 2 && st[0].key == "result" && st[1].obj && st[1].key == "isError":
		return kindIsError
	case len(st) == 4 && st[0].key == "result" && st[1].obj && st[1].key == "content" &&
		!st[2].obj && st[3].obj && st[3].key == "text":
		return kindText
	}
	return kindNone
}

func (s *oversize) addID(c byte) {
	if len(s.id) >= maxIDBytes {
		s.idTooBig = true
		return
	}
	s.id = append(s.id, c)
}

// strByte handles one byte inside a string.
func (s *oversize) strByte(c byte) {
	end := false
	switch {
	case s.uLeft > 0:
		s.uLeft--
	case s.esc:
		s.esc = false
		if c == 'u' {
			s.uLeft = 4
		}
	case c == '\\':
		s.esc = true
	case c == '"':
		end = true
	}
	midEscape := s.esc || s.uLeft > 0
	switch s.strKind {
	case kindKey:
		if end {
			top := s.top()
			top.key, top.expectKey = string(s.key), false
			if len(s.stack) == 1 {
				switch top.key {
				case "method":
					s.method = true
				case "result":
					s.result = true
				case "error":
					s.errorResp = true
				}
			}
		} else if len(s.key) < maxKeyBytes {
			s.key = append(s.key, c)
		} else {
			s.key = append(s.key[:0], '#') // a long key is none of ours
		}
	case kindID:
		s.addID(c)
	case kindText:
		// Kept while under the bound; an escape begun under it is finished,
		// so that what is kept always decodes.
		if end || s.textFull {
			break
		}
		i := len(s.texts) - 1
		s.texts[i] = append(s.texts[i], c)
		s.textBytes++
		if s.textBytes >= cutResultBytes && !midEscape {
			s.textFull = true
		}
	}
	if end {
		s.inStr = false
	}
}

// replacement returns the message to hand on in place of the oversized one,
// or nil (with the reason) when it is to be dropped: a request or
// notification, or a message without a usable ID. limit is the bound it
// broke.
func (s *oversize) replacement(limit int) ([]byte, string) {
	switch {
	case s.method:
		return nil, "a request or notification"
	case s.idTooBig || len(s.id) == 0 || !json.Valid(s.id):
		return nil, "no usable ID"
	}
	note := fmt.Sprintf("[cut: the MCP server's message was %d bytes, over the limit of %d; only the start of its text is kept]", s.n, limit)
	if s.result && len(s.texts) > 0 {
		parts := make([]string, 0, len(s.texts))
		for _, raw := range s.texts {
			var t string
			if json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &t) != nil {
				t = strings.ToValidUTF8(string(raw), "\uFFFD")
			}
			parts = append(parts, t)
		}
		text := strings.Join(parts, "\n")
		b, err := json.Marshal(map[string]any{
			"jsonrpc": "2.0", "id": json.RawMessage(s.id),
			"result": map[string]any{
				"content": []any{map[string]any{"type": "text", "text": text + "\n" + note}},
				"isError": string(s.isError) == "true",
				"_meta":   map[string]any{cutMeta: s.n},
			},
		})
		if err == nil {
			return b, ""
		}
	}
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": json.RawMessage(s.id),
		"error": map[string]any{"code": -32603, "message": fmt.Sprintf("the MCP server's answer was %d bytes, over the limit of %d bytes for one message; it was dropped", s.n, limit)},
	})
	return b, ""
}
