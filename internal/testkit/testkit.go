// Package testkit holds the test doubles that the module's tests share: a tool
// that counts its runs ([Counter]) and a stateless scripted model ([Script]).
// It is for tests only; no library package or command may import it. It
// imports only packages tool and model (and the standard library), so every
// test package above them can use it without breaking the import direction.
package testkit

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// Counter is a test tool that counts its executions and keeps their arguments.
// Set its fields before first use; it is safe for concurrent calls.
type Counter struct {
	// Name is the tool's name.
	Name string
	// Hints are the tool's hints; nil means unknown (treated as mutating).
	Hints *tool.Hints
	// Schema is the JSON Schema of the arguments as JSON text; empty means
	// none (any JSON object). A schema that does not parse panics in Spec.
	Schema string
	// Output makes the result of a call from its arguments; nil means the
	// text "ran <Name>".
	Output func(args json.RawMessage) tool.Result

	n      atomic.Int64
	mu     sync.Mutex
	args   []string
	once   sync.Once
	parsed tool.Spec
}

var _ tool.Tool = (*Counter)(nil)

// Spec implements [tool.Tool]: Name, Hints and Schema, with Source "test".
func (c *Counter) Spec() tool.Spec {
	c.once.Do(func() {
		if c.Schema == "" {
			return
		}
		if err := json.Unmarshal([]byte(c.Schema), &c.parsed.InputSchema); err != nil {
			panic(fmt.Sprintf("testkit: schema of %s: %v", c.Name, err))
		}
	})
	return tool.Spec{Name: c.Name, Hints: c.Hints, InputSchema: c.parsed.InputSchema, Source: "test"}
}

// Call implements [tool.Tool]: it counts the call, keeps args and returns
// Output(args), or the text "ran <Name>".
func (c *Counter) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	c.n.Add(1)
	c.mu.Lock()
	c.args = append(c.args, string(args))
	c.mu.Unlock()
	if c.Output != nil {
		return c.Output(args), nil
	}
	return tool.Text("ran " + c.Name), nil
}

// Count returns how many times the tool ran.
func (c *Counter) Count() int64 { return c.n.Load() }

// Args returns the arguments of every run so far, in the order the runs
// started.
func (c *Counter) Args() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.args)
}

// Script returns a model that answers turn n (the number of assistant
// messages in the request) with the tool calls turns[n], and with the text
// "done" after the last. Like model/scripted it is stateless, so a resumed run,
// in this or another agent, continues where it stopped.
func Script(turns ...[]model.FuncCall) model.Func {
	return func(ctx context.Context, req *model.Request) (model.Reply, error) {
		n := Turn(req)
		if n >= len(turns) {
			return model.Reply{Content: "done"}, nil
		}
		return model.Reply{ToolCalls: turns[n]}, nil
	}
}

// Turn returns the number of assistant messages in req: the index of the
// turn the model is asked for.
func Turn(req *model.Request) int {
	n := 0
	for _, m := range req.Messages {
		if m.Role == model.RoleAssistant {
			n++
		}
	}
	return n
}

// Call returns the tool call id of name with args (any JSON-encodable value,
// or nil for none).
func Call(id, name string, args any) model.FuncCall {
	return model.FuncCall{ID: id, Name: name, Arguments: args}
}
