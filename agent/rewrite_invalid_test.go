package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// Arguments a hook rewrote into ones the schema refuses were blamed on the
// runtime. The decision and the model's message now name the last hook that
// rewrote them.
func TestInvalidRewriteNamesTheHook(t *testing.T) {
	echo := &testkit.Counter{Name: "echo", Schema: `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`}
	rewrite := func(args string) hooks.BeforeToolFunc {
		return func(context.Context, *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
			return &hooks.ToolOverride{Args: json.RawMessage(args)}, nil
		}
	}
	h := (&hooks.Hooks{}).
		BeforeTool("good", rewrite(`{"n":2}`)).
		BeforeTool("bad", rewrite(`{"n":"two"}`)).
		BeforeTool("watcher", func(context.Context, *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) { return nil, nil })
	a := newAgent(t, agent.Options{Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "echo", map[string]int{"n": 1})}), Tools: agent.ToolList{echo}, Hooks: h})
	res, err := a.Run(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	rec := res.ToolCalls[0]
	bad := tool.Principal{Kind: tool.PrincipalHook, Name: "bad"}
	if d := rec.Decision; d.Outcome != gate.OutcomeInvalid || d.By != bad || !strings.HasPrefix(d.Reason, "hook:bad rewrote the arguments") {
		t.Errorf("decided %s by %s (%q), want invalid by %s", d.Outcome, d.By, d.Reason, bad)
	}
	if !rec.IsError || !strings.HasPrefix(rec.Output, "echo: hook:bad rewrote the arguments into invalid ones: ") {
		t.Errorf("result %q does not name the hook", rec.Output)
	}
	if echo.Count() != 0 {
		t.Errorf("the tool ran with invalid arguments")
	}
}
