package policy_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tollgate-dev/tollgate/policy"
)

// The programs a policy denies outright are those of deny rules with no
// other condition than the tool and the programs (or patterns that cover
// a whole program); a rule on some uses of a program denies none.
func TestDeniedPrograms(t *testing.T) {
	const src = `
rules:
  - {id: a, tool: bash, command: {program: [rm, "python*"]}, decision: deny, reason: r}
  - {id: b, command: "curl:*", decision: deny, reason: r}
  - {id: c, tool: bash, command: {pattern: ["wget *", "/usr/bin/nc *", "shred*"]}, decision: deny, reason: r}
  - {id: d, tool: bash, command: {pattern: "git push *"}, decision: deny, reason: r}
  - {id: e, tool: bash, command: {program: dd, flags: [-f]}, decision: deny, reason: r}
  - {id: f, tool: bash, command: {program: mkfs}, decision: ask}
  - {id: g, tool: edit, command: {program: vi}, decision: deny, reason: r}
  - {id: h, tool: bash, args: {command: {prefix: x}}, command: {program: tee}, decision: deny, reason: r}
  - {id: i, tool: bash, command: {pattern: ["rm", "r*m *"]}, decision: deny, reason: r}
  - {id: j, tool: bash, command: {program: sudo, pattern: "sudo *"}, decision: deny, reason: r}
  - {id: k, tool: bash, command: {program: rm}, decision: deny, reason: r}
permissions:
  deny: ["Bash(chmod:*)", "Bash(npm test)"]
`
	pol, _, err := policy.ParsePolicy("p.yaml", strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"rm", "python*", "curl", "wget", "nc", "shred*", "chmod"}
	if diff := cmp.Diff(want, policy.DeniedPrograms("bash", pol)); diff != "" {
		t.Errorf("DeniedPrograms (-want +got):\n%s", diff)
	}
	if got := pol.DeniedPrograms("edit"); !cmp.Equal(got, []string{"curl", "vi"}) {
		t.Errorf("for edit: %q", got)
	}
}
