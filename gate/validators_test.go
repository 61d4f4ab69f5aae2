package gate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/tool"
)

// specTool is a tool of a given spec that is never run here.
type specTool struct{ spec tool.Spec }

func (t specTool) Spec() tool.Spec { return t.spec }
func (specTool) Call(context.Context, json.RawMessage) (tool.Result, error) {
	return tool.Result{}, nil
}

// Gates given one Validators resolve a tool's input schema once between
// them: a host makes a gate for each run of one agent, and resolving every
// schema again each run was a tenth of a served run's CPU. A schema that
// does not resolve is logged each time it is resolved, which counts them.
func TestGatesShareValidators(t *testing.T) {
	bad := specTool{tool.Spec{Name: "bad", InputSchema: &jsonschema.Schema{Type: "object", Ref: "#/$defs/missing"}}}
	resolutions := func(shared *gate.Validators) int {
		var logs bytes.Buffer
		lg := slog.New(slog.NewTextHandler(&logs, nil))
		for i := range 3 {
			g := gate.New(&gate.Options{Logger: lg, Validators: shared})
			c := gate.Call{ID: "c", Name: "bad", Args: json.RawMessage(`{}`), RunID: "run_" + string(rune('a'+i))}
			if ru := g.Decide(context.Background(), &gate.Env{Tools: tools{bad}}, c, nil, nil); ru.Err != nil {
				t.Fatal(ru.Err)
			}
		}
		return strings.Count(logs.String(), "tool has an invalid input schema")
	}
	if n := resolutions(nil); n != 3 {
		t.Fatalf("three gates of their own resolved the schema %d times, want 3", n)
	}
	if n := resolutions(&gate.Validators{}); n != 1 {
		t.Fatalf("three gates sharing Validators resolved the schema %d times, want 1", n)
	}
}
