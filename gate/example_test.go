package gate_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/tool"
)

// An agent tollgate does not run (a Claude Code session, say) asks whether
// it may run a shell command, waits for a person when the policy asks, runs
// the command itself and reports the result, which is recorded.
func Example() {
	ctx := context.Background()
	policy, err := policy.NewPolicy(policy.PolicySpec{Name: "team", Rules: []policy.Rule{
		{ID: "no-rm", Tools: []string{"bash"}, Command: &policy.CommandCondition{Programs: []string{"rm"}}, Decision: approval.Deny, Reason: "no deletions"},
		{ID: "ask-push", Tools: []string{"bash"}, Command: &policy.CommandCondition{Patterns: []string{"git push *"}}, Decision: approval.Ask},
	}})
	if err != nil {
		panic(err)
	}
	g := gate.New(&gate.Options{
		Authorizers: []approval.Authorizer{policy},
		OnRecord: func(_ context.Context, rec gate.Record) {
			fmt.Printf("record: %s %s by %s, ran %v\n", rec.Name, rec.Decision.Outcome, rec.Decision.By, rec.Ran)
		},
	})
	// The caller's tool: only its name, schema and hints matter to the gate.
	type in struct {
		Command string `json:"command"`
	}
	bash := tool.Must("bash", "runs a command", func(context.Context, in) (string, error) { return "", nil }, nil)
	env := &gate.Env{Tools: tools{bash}}

	rm := gate.Call{ID: "toolu_1", Name: "bash", Args: json.RawMessage(`{"command":"sudo rm -rf /srv"}`), Source: gate.SourceClaudeCode}
	ru := g.Decide(ctx, env, rm, nil, nil)
	fmt.Println("rm:", ru.Record.Output)

	push := gate.Call{ID: "toolu_2", Name: "bash", Args: json.RawMessage(`{"command":"git push origin main"}`), Source: gate.SourceClaudeCode}
	ru = g.Decide(ctx, env, push, nil, nil)
	fmt.Println("push:", ru.Pending.Request.Kind, "asked")
	// A person approves; the call is decided again with the answer.
	ans := tool.Answer{ID: ru.Pending.Request.ID, OK: true, By: "alice"}
	ru = g.Decide(ctx, env, push, ru.Pending, &ans)
	// The caller runs the command itself and reports what it printed.
	ru = g.Complete(ctx, env, ru.Allowed, gate.Reported(tool.Text("pushed"), 0))
	fmt.Println("push:", ru.Record.Output)
	// Output:
	// record: bash denied by rule:no-rm, ran false
	// rm: denied by rule:no-rm: no deletions
	// push: approval asked
	// record: bash approved by person:alice, ran true
	// push: pushed
}
