package mcptool

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tool whose input schema cannot be resolved fails its server, with the
// tool named, instead of failing every agent that would offer it.
func TestNewToolRejectsUnusableSchema(t *testing.T) {
	sc := &ServerConfig{}
	bad := &mcp.Tool{Name: "broken", InputSchema: map[string]any{"type": "object", "$ref": "#/definitions/missing"}}
	if _, err := newTool("srv", sc, bad, nil); err == nil || !strings.Contains(err.Error(), `tool "broken"`) {
		t.Fatalf("err = %v, want an error naming the tool", err)
	}
	if _, err := newTool("srv", sc, &mcp.Tool{Name: "s", InputSchema: map[string]any{"type": "string"}}, nil); err == nil || !strings.Contains(err.Error(), `type "string"`) {
		t.Errorf("a string schema: %v", err)
	}
	if _, err := newTool("srv", sc, &mcp.Tool{Name: "", InputSchema: map[string]any{"type": "object"}}, nil); err == nil {
		t.Error("an empty tool name was accepted")
	}
	for _, schema := range []any{
		map[string]any{"type": "object"},
		map[string]any{"type": "object", "additionalProperties": true},
		map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "string"}}},
	} {
		if _, err := newTool("srv", sc, &mcp.Tool{Name: "ok", InputSchema: schema}, nil); err != nil {
			t.Errorf("schema %v: %v", schema, err)
		}
	}
}
