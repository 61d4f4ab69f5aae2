package policy_test

import (
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/policy"
)

// Elicitation rules: a deny that holds wins; the trusted condition and the
// server glob select; no rule allows.
func TestElicitationRules(t *testing.T) {
	src := `elicitation:
  - id: untrusted-never-ask
    trusted: false
    decision: deny
    reason: only trusted servers may ask for input
  - id: no-tracker
    server: "tracker*"
    decision: deny
  - id: docs
    server: docs
    decision: allow
`
	p, problems, err := policy.ParsePolicy("p.yaml", strings.NewReader(src))
	if err != nil || len(problems) != 0 {
		t.Fatalf("parse: %v %v", err, problems)
	}
	for _, c := range []struct {
		server  string
		trusted bool
		ok      bool
		by      string
	}{
		{"docs", false, false, "rule:untrusted-never-ask"},
		{"docs", true, true, ""},
		{"tracker-eu", true, false, "rule:no-tracker"},
		{"fs", true, true, ""},
	} {
		ok, by, reason := p.Elicitation(c.server, c.trusted)
		if ok != c.ok || by != c.by || (!ok && reason == "") {
			t.Errorf("Elicitation(%s, %v) = %v %q %q, want %v %q", c.server, c.trusted, ok, by, reason, c.ok, c.by)
		}
	}
}

func TestElicitationRuleProblems(t *testing.T) {
	for src, want := range map[string]string{
		"elicitation:\n  - id: a\n    decision: ask\n":                      `p.yaml:3:15: error: elicitation decision "ask": want allow or deny`,
		"elicitation:\n  - id: a\n    trusted: maybe\n    decision: deny\n": `trusted must be true or false`,
		"elicitation:\n  - id: a\n    servr: x\n    decision: deny\n":       `unknown key "servr" in an elicitation rule`,
		"elicitation:\n  - decision: deny\n":                                `needs id and decision`,
	} {
		_, problems, err := policy.ParsePolicy("p.yaml", strings.NewReader(src))
		var all []string
		for _, p := range problems {
			all = append(all, p.Error())
		}
		if err == nil || !strings.Contains(strings.Join(all, "\n"), want) {
			t.Errorf("%q: %v %v, want %q", src, err, all, want)
		}
	}
}
