package approval_test

import (
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/policy"
)

// A rule in mode shadow is evaluated but votes only in Evaluation.Shadow:
// the decision is the enforced rules' alone. An unknown mode is an error
// at its line.
func TestShadowRule(t *testing.T) {
	p, _, err := policy.ParsePolicy("p.yaml", strings.NewReader(`rules:
  - id: ask-write
    tool: write
    mode: enforce
    decision: ask
  - id: deny-etc
    mode: shadow
    tool: write
    args: {path: {pathPrefix: /etc}}
    decision: deny
    reason: /etc is off limits
  - id: ask-push
    mode: shadow
    tool: bash
    command: {pattern: "git push *"}
    decision: ask
`))
	if err != nil {
		t.Fatal(err)
	}
	ev := p.Evaluate(approval.Call{Tool: "write", Args: []byte(`{"path":"/etc/passwd"}`)})
	if ev.Verdict.Decision != approval.Ask || ev.Verdict.By.Name != "ask-write" || len(ev.Verdicts) != 1 ||
		len(ev.Shadow) != 1 || ev.Shadow[0].By.Name != "deny-etc" || ev.Shadow[0].Decision != approval.Deny {
		t.Fatalf("write /etc/passwd: %+v", ev)
	}
	ev = p.Evaluate(approval.Call{Tool: "bash", Args: []byte(`{"command":"make && git push origin main"}`)})
	if ev.Verdict.Decision != approval.Allow || len(ev.Shadow) != 1 || ev.Shadow[0].By.Name != "ask-push" || ev.Shadow[0].Decision != approval.Ask {
		t.Fatalf("bash git push: %+v", ev)
	}
	if ev = p.Evaluate(approval.Call{Tool: "bash", Args: []byte(`{"command":"ls"}`)}); len(ev.Shadow) != 0 {
		t.Fatalf("bash ls: shadow %+v", ev.Shadow)
	}
	_, _, err = policy.ParsePolicy("p.yaml", strings.NewReader("rules:\n  - id: x\n    tool: bash\n    mode: dry\n    decision: deny\n"))
	if err == nil || !strings.Contains(err.Error(), `p.yaml:4:11: error: unknown mode "dry" (want enforce or shadow)`) {
		t.Fatalf("unknown mode: %v", err)
	}
}
