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

// Agents made from the same options, one per run as a server makes them,
// share the JSON of a tool's schema: the second agent sends the very bytes
// the first one marshalled, not a new copy.
func TestToolSchemaJSONSharedByAgents(t *testing.T) {
	var seen []json.RawMessage
	m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
		seen = append(seen, req.Tools[0].InputSchema)
		return model.Reply{Content: "done"}, nil
	})
	opts := agent.Options{Model: m, Tools: agent.ToolList{&schemaTool{schema: &jsonschema.Schema{Type: "object", Description: "shared"}}}}
	for range 2 {
		if _, err := newAgent(t, opts).Run(context.Background(), "x"); err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) != 2 || len(seen[0]) == 0 || &seen[0][0] != &seen[1][0] {
		t.Errorf("the second agent marshalled the schema again: %q", seen)
	}
}
