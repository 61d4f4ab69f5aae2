package main

import (
	"strings"
	"testing"
)

// A mistyped command or flag is answered with what was meant, and a value
// that does not parse with the kind of value wanted, not the parser's words.
func TestUsageErrorsSuggestAndSpeakPlainly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"runn"}, `unknown command "runn" for "tollgate"; did you mean run or runs?`},
		{[]string{"policy", "chek", "f"}, `unknown command "chek" for "tollgate policy"; did you mean check?`},
		{[]string{"approvals", "aprove", "req_1"}, `did you mean approve?`},
		{[]string{"run", "--modle", "script:x", "x"}, "run: unknown flag: --modle; did you mean --model?"},
		{[]string{"run", "--state", "x", "x"}, "did you mean --state-dir or --store?"},
		{[]string{"run", "--model", "script:x", "--max-turns", "ten", "x"}, `run: --max-turns "ten": want a whole number, such as 10`},
		{[]string{"run", "--model", "script:x", "--timeout", "5", "x"}, `run: --timeout "5": want a duration, such as 90s, 5m or 1h30m`},
		{[]string{"runs", "show"}, "runs show: want RUN_ID; got no argument"},
		{[]string{"approvals", "answer"}, "approvals answer: want ID [ANSWER]...; got no argument"},
		{[]string{"runs", "cancel", "run_a", "run_b"}, "runs cancel: want RUN_ID; got 2: run_a run_b"},
	} {
		code, _, errOut := tgMain(t, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("tollgate %s: exit %d, stderr:\n%s\nwant exit %d and %q", strings.Join(tc.args, " "), code, errOut, exitUsage, tc.want)
		}
		if strings.Contains(errOut, "strconv.") || strings.Contains(errOut, "time: invalid") || strings.Contains(errOut, "arg(s)") {
			t.Errorf("tollgate %s: the parser's error reached the user:\n%s", strings.Join(tc.args, " "), errOut)
		}
	}
	// Nothing close: no suggestion.
	if _, _, errOut := tgMain(t, "frobnicate"); strings.Contains(errOut, "did you mean") {
		t.Errorf("tollgate frobnicate suggested something:\n%s", errOut)
	}
}
