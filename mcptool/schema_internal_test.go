package mcptool

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tool whose input schema cannot be resolved, or whose name cannot be shown,
// is refused with a reason (its server then skips it alone).
func TestNewToolRejectsUnusableSchema(t *testing.T) {
	sc := &ServerConfig{}
	bad := &mcp.Tool{Name: "broken", InputSchema: map[string]any{"type": "object", "$ref": "#/definitions/missing"}}
	if _, err := newTool("srv", sc, bad, nil); err == nil || !strings.Contains(err.Error(), `/definitions/missing`) {
		t.Fatalf("err = %v, want an error naming the missing ref", err)
	}
	if _, err := newTool("srv", sc, &mcp.Tool{Name: "s", InputSchema: map[string]any{"type": "string"}}, nil); err == nil || !strings.Contains(err.Error(), `type "string"`) {
		t.Errorf("a string schema: %v", err)
	}
	if _, err := newTool("srv", sc, &mcp.Tool{Name: "", InputSchema: map[string]any{"type": "object"}}, nil); err == nil {
		t.Error("an empty tool name was accepted")
	}
	for _, name := range []string{"red\x1b[31m", "a\nb", "bad\xff", strings.Repeat("x", maxRemoteNameLen+1)} {
		if _, err := newTool("srv", sc, &mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, nil); err == nil {
			t.Errorf("name %q was accepted", name)
		}
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
