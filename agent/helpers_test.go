package agent_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// script returns a model that answers turn n (the count of assistant messages
// in the request) with the tool calls turns[n], and with the text "done" after
// the last. Like model/scripted it is stateless, so a resumed run continues.
func script(turns ...[]model.FuncCall) model.Func {
	return func(ctx context.Context, req *model.Request) (model.Reply, error) {
		n := 0
		for _, m := range req.Messages {
			if m.Role == model.RoleAssistant {
				n++
			}
		}
		if n >= len(turns) {
			return model.Reply{Content: "done"}, nil
		}
		return model.Reply{ToolCalls: turns[n]}, nil
	}
}

func call(id, name string, args any) model.FuncCall {
	return model.FuncCall{ID: id, Name: name, Arguments: args}
}

// counter is a test tool that counts its executions and records the arguments.
type counter struct {
	name   string
	hints  *tool.Hints
	schema string
	n      atomic.Int64
	mu     sync.Mutex
	seen   []string
	output func(args json.RawMessage) tool.Result
}

func (c *counter) Spec() tool.Spec {
	s := tool.Spec{Name: c.name, Hints: c.hints, Source: "test"}
	if c.schema != "" {
		s.InputSchema = mustSchema(c.schema)
	}
	return s
}

func (c *counter) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	c.n.Add(1)
	c.mu.Lock()
	c.seen = append(c.seen, string(args))
	c.mu.Unlock()
	if c.output != nil {
		return c.output(args), nil
	}
	return tool.Text("ran " + c.name), nil
}

func (c *counter) count() int64 { return c.n.Load() }

func (c *counter) args() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.seen...)
}

func newAgent(t *testing.T, opts agent.Options) *agent.Agent {
	t.Helper()
	a, err := agent.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func toolMsgs(res *agent.Result) []model.Message {
	var out []model.Message
	for _, m := range res.Transcript {
		if m.Role == model.RoleTool {
			out = append(out, m)
		}
	}
	return out
}
