package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// schemaTool is a tool whose input schema can be replaced between runs.
type schemaTool struct {
	mu     sync.Mutex
	schema *jsonschema.Schema
}

func (s *schemaTool) Spec() tool.Spec {
	s.mu.Lock()
	defer s.mu.Unlock()
	return tool.Spec{Name: "t", InputSchema: s.schema}
}

func (s *schemaTool) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	return tool.Text("ok"), nil
}

// The agent keeps the JSON of each tool's schema across runs, and a tool
// whose schema changes is sent with the new one.
func TestToolSchemaFollowsChanges(t *testing.T) {
	var seen []string
	m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
		seen = append(seen, string(req.Tools[0].InputSchema))
		return model.Reply{Content: "done"}, nil
	})
	st := &schemaTool{schema: &jsonschema.Schema{Type: "object", Description: "first"}}
	a := newAgent(t, agent.Options{Model: m, Tools: agent.ToolList{st}})
	ctx := context.Background()
	for range 2 {
		if _, err := a.Run(ctx, "x"); err != nil {
			t.Fatal(err)
		}
	}
	st.mu.Lock()
	st.schema = &jsonschema.Schema{Type: "object", Description: "second"}
	st.mu.Unlock()
	if _, err := a.Run(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 3 || !strings.Contains(seen[0], "first") || seen[1] != seen[0] || !strings.Contains(seen[2], "second") {
		t.Errorf("schemas sent: %q", seen)
	}
}
