package policy_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/configfile"
	"github.com/tollgate-dev/tollgate/policy"
)

// A PolicyError's problems unwrap as errors, one each, whose texts are the
// lines of its Error: a caller can print them one a line with its own
// context in front, and errors.As finds a Problem.
func TestPolicyErrorUnwrapsProblems(t *testing.T) {
	_, _, err := policy.ParsePolicy("p.yaml", strings.NewReader("autonomy: yolo\nrules:\n  - id: x\n    tool: bash\n    decision: maybe\n"))
	var pe *configfile.Error
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a *approval.PolicyError", err)
	}
	list := pe.Unwrap()
	if len(list) != 2 || len(list) != len(pe.Problems) {
		t.Fatalf("Unwrap = %q, want the 2 problems %v", list, pe.Problems)
	}
	var texts []string
	for _, e := range list {
		texts = append(texts, e.Error())
	}
	if got := strings.Join(texts, "\n"); got != err.Error() {
		t.Errorf("the unwrapped problems read\n%s\nbut Error is\n%s", got, err.Error())
	}
	var p configfile.Problem
	if !errors.As(err, &p) || p.Line != 1 || p.Col != 11 || p.Severity != configfile.SeverityError {
		t.Errorf("errors.As Problem = %+v", p)
	}
}
