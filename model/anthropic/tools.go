package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/tollgate-dev/tollgate/internal/jsonenc"
	"github.com/tollgate-dev/tollgate/internal/provider"
	"github.com/tollgate-dev/tollgate/model"
)

// toolCache is the tools of a request as sent, with copies of the
// definitions they were made from: a request whose definitions are equal
// (an agent sends the same tools every turn) reuses them as they are. Both
// are read-only once stored.
type toolCache struct {
	defs []model.ToolDef // with their own InputSchema bytes
	wire []wireTool
}

// matches reports whether defs equal the definitions of c, byte for byte.
func (c *toolCache) matches(defs []model.ToolDef) bool {
	if c == nil || len(c.defs) != len(defs) {
		return false
	}
	for i, d := range defs {
		o := &c.defs[i]
		if d.Name != o.Name || d.Description != o.Description ||
			(d.InputSchema == nil) != (o.InputSchema == nil) || !bytes.Equal(d.InputSchema, o.InputSchema) {
			return false
		}
	}
	return true
}

// wireTools translates tool definitions (rule 8: unique valid names, object
// schemas) and keeps them, with copies of defs, for the next request
// (toolCache).
func (m *Model) wireTools(defs []model.ToolDef) ([]wireTool, error) {
	tools := make([]wireTool, 0, len(defs))
	seen := make(map[string]bool, len(defs))
	for i, t := range defs {
		if !validToolName(t.Name) {
			return nil, fmt.Errorf("anthropic: tool %d: name %q must be 1 to 128 letters, digits, '_' or '-'", i, t.Name)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("anthropic: tool %d: name %q is used by an earlier tool; names must be unique", i, t.Name)
		}
		seen[t.Name] = true
		schema, err := inputSchema(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("anthropic: tool %q: %w", t.Name, err)
		}
		tools = append(tools, wireTool{Name: t.Name, Description: t.Description, InputSchema: bytes.Clone(schema)})
	}
	c := &toolCache{defs: slices.Clone(defs), wire: tools}
	for i := range c.defs {
		c.defs[i].InputSchema = bytes.Clone(c.defs[i].InputSchema)
	}
	m.tools.Store(c)
	return tools, nil
}

// validToolName reports whether name fits the API's pattern for tool names
// (rule 8).
func validToolName(name string) bool {
	if len(name) == 0 || len(name) > 128 {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !idByte(name[i]) {
			return false
		}
	}
	return true
}

// inputSchema returns the input_schema of a tool (rule 8): schema when it is a
// JSON object of type "object"; {"type":"object"} with schema's other keys
// when it has no type; an empty object schema when schema is empty. Any
// other schema is an error.
func inputSchema(schema json.RawMessage) (json.RawMessage, error) {
	t := bytes.TrimSpace(schema)
	if len(t) == 0 {
		return json.RawMessage(`{"type":"object","properties":{}}`), nil
	}
	if t[0] != '{' || !json.Valid(t) {
		return nil, errors.New("input schema is not a JSON object")
	}
	// The schema's own type, read without decoding it (its last "type"
	// key wins, as in encoding/json).
	var typ json.RawMessage
	for k, v := range provider.Members(t) {
		if string(k) == "type" {
			typ = v
		}
	}
	if typ == nil {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(t, &obj); err != nil {
			return nil, errors.New("input schema is not a JSON object")
		}
		obj["type"] = json.RawMessage(`"object"`)
		return jsonenc.Marshal(obj)
	}
	if string(typ) != `"object"` {
		var s string
		if json.Unmarshal(typ, &s) != nil || s != "object" {
			return nil, fmt.Errorf("input schema has type %s; the Messages API needs \"object\"", typ)
		}
	}
	return schema, nil
}
