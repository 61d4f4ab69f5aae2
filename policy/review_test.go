package policy_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/policy"
)

func TestDigestKeepsEveryDigit(t *testing.T) {
	a := approval.Digest(json.RawMessage(`{"account":12345678901234567890}`))
	b := approval.Digest(json.RawMessage(`{"account":12345678901234567891}`))
	if a == b {
		t.Error("two different account numbers share a digest")
	}
	if approval.Digest(json.RawMessage(`{"b":1,"a":[1, 2]}`)) != approval.Digest(json.RawMessage(`{"a":[1,2],"b":1}`)) {
		t.Error("two encodings of the same arguments differ")
	}
}

// A policy shares nothing with its spec: changing the spec given to NewPolicy
// or the one Spec returns changes no decision.
func TestPolicyIsImmutable(t *testing.T) {
	yes := true
	spec := policy.PolicySpec{Rules: []policy.Rule{{ID: "no-delete", Tools: []string{"delete_*"}, Hints: policy.HintConditions{Destructive: &yes}, Decision: approval.Deny, Reason: "no"}}}
	p, err := policy.NewPolicy(spec)
	if err != nil {
		t.Fatal(err)
	}
	spec.Rules[0].Tools[0] = "nothing"
	yes = false
	got := p.Spec()
	got.Rules[0].Tools[0] = "nothing"
	*got.Rules[0].Hints.Destructive = false
	v, _ := p.Authorize(context.Background(), approval.Call{Tool: "delete_all", Args: json.RawMessage(`{}`)})
	if v.Decision != approval.Deny {
		t.Errorf("decision %s after the specs were changed, want deny", v.Decision)
	}
}
