package policy_test

import (
	"testing"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/tool"
)

// The reasons a policy gives are made once, and follow WithAutonomy: the
// copy speaks of its own level, the original of its own.
func TestPolicyReasonsFollowAutonomy(t *testing.T) {
	p, err := policy.NewPolicy(policy.PolicySpec{Name: "p", Autonomy: approval.Supervised,
		Rules: []policy.Rule{{ID: "r1", Tools: []string{"t"}, Decision: approval.Allow}}})
	if err != nil {
		t.Fatal(err)
	}
	c := approval.Call{Tool: "t", Hints: &tool.Hints{ReadOnly: true}}
	m, err := p.WithAutonomy(approval.Manual)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		p    *policy.Policy
		want []string
	}{
		{p, []string{"policy rule r1 says allow", "read_only risk at autonomy supervised: allow"}},
		{m, []string{"policy rule r1 says allow", "read_only risk at autonomy manual: ask"}},
	} {
		ev := tc.p.Evaluate(c)
		if len(ev.Verdicts) != len(tc.want) {
			t.Fatalf("verdicts %+v, want reasons %q", ev.Verdicts, tc.want)
		}
		for i, v := range ev.Verdicts {
			if v.Reason != tc.want[i] {
				t.Errorf("verdict %d reason %q, want %q", i, v.Reason, tc.want[i])
			}
		}
	}
}
