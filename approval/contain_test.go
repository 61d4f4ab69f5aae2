package approval

import "testing"

// containPolicy denies rm at full autonomy: every spelling below must not be
// allowed.
const containPolicy = `
autonomy: full_auto
rules:
  - id: no-rm
    tool: bash
    command: {program: rm}
    decision: deny
    reason: no rm
`

// env -S runs the command its string names: a rule on rm holds for every
// spelling of it (the joined ones dropped the word after them).
func TestEnvSplitStringIsTheCommandItRuns(t *testing.T) {
	p := mustParse(t, containPolicy)
	for _, cmd := range []string{
		"env -Snice rm -v victim",
		"env -Srm victim",
		"env -S rm victim",
		"env -S'rm -f' victim",
		"env --split-string=nice rm victim",
		"env --split-string 'rm victim'",
		"env --sp=rm victim",
		"env -iS rm victim",
		"env -S'-i rm' victim",
		"env --block-signal rm victim",
	} {
		ev := p.Evaluate(bashCall(cmd))
		if ev.Verdict.Decision != Deny || ev.Verdict.By.String() != "rule:no-rm" {
			t.Errorf("%q: %s by %s (%s), want deny by rule:no-rm", cmd, ev.Verdict.Decision, ev.Verdict.By, ev.Verdict.Reason)
		}
	}
}
