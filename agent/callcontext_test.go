package agent

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/toolcall"
	"github.com/tollgate-dev/tollgate/internal/toolctx"
	"github.com/tollgate-dev/tollgate/tool"
)

type parentKey struct{}

// A tool's context answers every value the agent hands the call from one
// value, passes other keys on to the run's context, and lets a value a tool
// sets in a derived context take precedence.
func TestCallContextValues(t *testing.T) {
	var got []Event
	gov := &governance{depth: 3}
	rs := tool.NewRunState(nil)
	args := json.RawMessage(`{"a":1}`)
	parent := context.WithValue(context.Background(), parentKey{}, "run")
	cc := &callContext{Context: parent, gov: gov, rep: reporter{emit: func(ev Event) { got = append(got, ev) }, callID: "c1"}}
	cc.inv = tool.Invocation{CallID: "c1", State: rs, Reporter: &cc.rep}
	if v := cc.Value(toolctx.ValidatedKey{}); v != nil {
		t.Fatalf("validated without validation: %v", v)
	}
	cc.validated, cc.isValidated = toolctx.Validated{Args: args}, true
	ctx, cancel := context.WithCancel(cc)
	defer cancel()
	if inherited(ctx) != gov {
		t.Error("governance not handed down")
	}
	if s := tool.InvocationFrom(ctx).State; s != rs {
		t.Error("run state not handed down")
	}
	if v, _ := ctx.Value(toolctx.ValidatedKey{}).(*toolctx.Validated); v == nil || &v.Args[0] != &args[0] {
		t.Errorf("validated = %v", v)
	}
	if ctx.Value(parentKey{}) != "run" {
		t.Error("the run's context values are lost")
	}
	tool.InvocationFrom(ctx).Progress(tool.Progress{Progress: 1})
	if len(got) != 1 || got[0].Kind != EventProgress || got[0].CallID != "c1" {
		t.Errorf("progress events %+v", got)
	}
	other := tool.NewRunState(nil)
	if s := tool.InvocationFrom(toolcall.WithState(ctx, other)).State; s != other {
		t.Error("a run state set by the tool does not take precedence")
	}
	cancel()
	if cc.Err() != nil || ctx.Err() == nil {
		t.Error("cancellation does not flow from the call's context down only")
	}
}
