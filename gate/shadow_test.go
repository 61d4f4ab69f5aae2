package gate_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/tool"
)

// A shadow rule decides nothing: a call it would deny runs, allowed by
// the enforced rules, and its would-be vote is recorded beside the
// decision, not among the votes; a call no shadow rule matches records
// none.
func TestShadowRuleRecordedBesideTheDecision(t *testing.T) {
	p, _, err := policy.ParsePolicy("p.yaml", strings.NewReader(`rules:
  - id: allow-bash
    tool: bash
    decision: allow
  - id: would-deny-rm
    mode: shadow
    tool: bash
    command: {program: rm}
    decision: deny
    reason: no deletions
`))
	if err != nil {
		t.Fatal(err)
	}
	var recs []gate.Record
	g := gate.New(&gate.Options{Authorizers: []approval.Authorizer{p}, OnRecord: func(_ context.Context, r gate.Record) { recs = append(recs, r) }})
	type in struct {
		Command string `json:"command"`
	}
	ran := 0
	bash := tool.Must("bash", "runs a command", func(context.Context, in) (string, error) { ran++; return "", nil }, nil)
	env := &gate.Env{Tools: tools{bash}}
	for i, cmd := range []string{"rm -rf build", "ls"} {
		args, _ := json.Marshal(in{Command: cmd})
		ru := g.Decide(context.Background(), env, gate.Call{ID: "c" + string(rune('1'+i)), Name: "bash", Args: args}, nil, nil)
		if ru.Allowed == nil {
			t.Fatalf("%s: not allowed: %+v", cmd, ru)
		}
		g.Complete(context.Background(), env, ru.Allowed, gate.Reported(tool.Text("ok"), 0))
	}
	if ran != 0 || len(recs) != 2 {
		t.Fatalf("records: %d", len(recs))
	}
	d := recs[0].Decision
	if d.Outcome != gate.OutcomeAllowed || d.By.String() != "rule:allow-bash" || len(d.Votes) != 1 ||
		len(d.Shadow) != 1 || d.Shadow[0].Source.String() != "rule:would-deny-rm" || d.Shadow[0].Decision != tool.VoteDeny {
		t.Fatalf("rm's decision: %+v", d)
	}
	if s := recs[1].Decision.Shadow; len(s) != 0 {
		t.Fatalf("ls's shadow votes: %+v", s)
	}
}
