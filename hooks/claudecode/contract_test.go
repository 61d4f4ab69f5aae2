package claudecode_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/hooks/claudecode"
	"github.com/tollgate-dev/tollgate/internal/claudenames"
	"github.com/tollgate-dev/tollgate/tool"
)

// pre returns a settings document with one PreToolUse group on Bash.
func pre(handlers ...string) string {
	return `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [` + strings.Join(handlers, ",") + `]}]}}`
}

func cmd(c string) string { return fmt.Sprintf(`{"type": "command", "command": %q}`, c) }

func jsonOut(j string) string { return cmd("printf '%s' '" + j + "'") }

// TestPreToolUseContract: every row of the exit-code / stdout contract, with
// the call's fate (ran or not, outcome, who decided, the reason).
func TestPreToolUseContract(t *testing.T) {
	for _, tc := range []struct {
		name     string
		doc      string
		mode     claudecode.FailMode // "" = the default (closed)
		ran      bool
		outcome  gate.Outcome
		reason   string // in the decision's reason
		rewrote  bool   // ran "touch rewritten" instead
		status   agent.Status
		failLogs bool // the log says "hook failed"
	}{
		{name: "exit 0, no output", doc: pre(cmd("exit 0")), ran: true, outcome: gate.OutcomeAllowed},
		{name: "exit 0, plain text is not a decision", doc: pre(cmd("echo deny")), ran: true, outcome: gate.OutcomeAllowed},
		{name: "exit 2 blocks with stderr", doc: pre(cmd("echo 'no touching' >&2; exit 2")), outcome: gate.OutcomeDenied, reason: "no touching"},
		{name: "exit 2 with a JSON reason", doc: pre(cmd(`printf '{"decision":"block","reason":"json reason"}'; echo stderr >&2; exit 2`)), outcome: gate.OutcomeDenied, reason: "json reason"},
		{name: "JSON deny", doc: pre(jsonOut(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"not today"}}`)), outcome: gate.OutcomeDenied, reason: "not today"},
		{name: "JSON ask is a pending approval", doc: pre(jsonOut(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"check with ops"}}`)), status: agent.StatusPending},
		{name: "JSON defer is a pending approval", doc: pre(jsonOut(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"defer"}}`)), status: agent.StatusPending},
		{name: "JSON allow is a vote", doc: pre(jsonOut(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"safe"}}`)), ran: true, outcome: gate.OutcomeAllowed, reason: "safe"},
		{name: "old top-level block", doc: pre(jsonOut(`{"decision":"block","reason":"old style"}`)), outcome: gate.OutcomeDenied, reason: "old style"},
		{name: "updatedInput rewrites", doc: pre(jsonOut(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"command":"touch rewritten"}}}`)), rewrote: true, outcome: gate.OutcomeAllowed},
		{name: "updatedInput is validated again", doc: pre(jsonOut(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"command":7}}}`)), outcome: gate.OutcomeInvalid},
		{name: "exit 3 with JSON: the JSON decides", doc: pre(cmd(`printf '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"json at exit 3"}}'; exit 3`)), outcome: gate.OutcomeDenied, reason: "json at exit 3"},
		{name: "exit 1 without JSON fails closed", doc: pre(cmd("echo Traceback >&2; exit 1")), outcome: gate.OutcomeDenied, reason: "hook failed", failLogs: true},
		{name: "exit 1 without JSON, fail open", doc: pre(cmd("exit 1")), mode: claudenames.FailOpen, ran: true, outcome: gate.OutcomeAllowed, failLogs: true},
		{name: "missing script (exit 127) fails closed", doc: pre(cmd("$CLAUDE_PROJECT_DIR/.claude/hooks/missing.sh")), outcome: gate.OutcomeDenied, reason: "exit 127", failLogs: true},
		{name: "exec form that cannot start fails closed", doc: pre(`{"type":"command","command":"/nonexistent/hook","args":[]}`), outcome: gate.OutcomeDenied, reason: "could not be started", failLogs: true},
		{name: "killed by a signal fails closed", doc: pre(`{"type":"command","command":"$BOT","args":["signal"]}`), outcome: gate.OutcomeDenied, reason: "signal SIGKILL", failLogs: true},
		{name: "timeout fails closed", doc: pre(`{"type":"command","command":"sleep 30 & sleep 30","timeout":0.3}`), outcome: gate.OutcomeDenied, reason: "timed out", failLogs: true},
		{name: "JSON that fails the schema fails closed", doc: pre(jsonOut(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"maybe"}}`)), outcome: gate.OutcomeDenied, reason: "fails the schema", failLogs: true},
		{name: "JSON for another event fails closed", doc: pre(jsonOut(`{"hookSpecificOutput":{"hookEventName":"PostToolUse"}}`)), outcome: gate.OutcomeDenied, reason: "hookEventName", failLogs: true},
		{name: "JSON that does not parse fails closed", doc: pre(cmd(`echo '{"decision": '`)), outcome: gate.OutcomeDenied, reason: "does not parse", failLogs: true},
		{name: "continue false stops the run", doc: pre(jsonOut(`{"continue":false,"stopReason":"freeze"}`)), status: agent.StatusError},
		{name: "a matcher for other tools", doc: `{"hooks":{"PreToolUse":[{"matcher":"Edit|Write","hooks":[` + cmd("exit 2") + `]}]}}`, ran: true, outcome: gate.OutcomeAllowed},
		{name: "a regex matcher", doc: `{"hooks":{"PreToolUse":[{"matcher":"^Ba.*","hooks":[` + cmd("exit 2") + `]}]}}`, outcome: gate.OutcomeDenied},
		{name: "if Bash(touch *) holds", doc: pre(`{"type":"command","command":"exit 2","if":"Bash(touch *)"}`), outcome: gate.OutcomeDenied},
		{name: "if Bash(git *) does not hold", doc: pre(`{"type":"command","command":"exit 2","if":"Bash(git *)"}`), ran: true, outcome: gate.OutcomeAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.doc)
			if tc.mode != "" {
				h.opts.FailModes = map[claudecode.Event]claudecode.FailMode{claudenames.PreToolUse: tc.mode}
			}
			res, err := h.run(t, "go", bash("touch ran"))
			want := tc.status
			if want == "" {
				want = agent.StatusDone
			}
			if res.Status != want {
				t.Fatalf("status %s (err %v), want %s", res.Status, err, want)
			}
			if want == agent.StatusError {
				var se *claudecode.StoppedError
				if !errors.As(err, &se) || se.Reason != "freeze" {
					t.Fatalf("err = %v, want a *StoppedError with reason freeze", err)
				}
			}
			if h.exists("ran") != tc.ran || h.exists("rewritten") != tc.rewrote {
				t.Fatalf("ran=%v rewritten=%v, want %v %v", h.exists("ran"), h.exists("rewritten"), tc.ran, tc.rewrote)
			}
			if got := strings.Contains(h.logs.String(), "hook failed"); got != tc.failLogs {
				t.Fatalf("log says hook failed: %v, want %v; log:\n%s", got, tc.failLogs, h.logs.String())
			}
			if strings.Contains(h.logs.String(), "hook denied") {
				t.Fatalf("the log says hook denied:\n%s", h.logs.String())
			}
			if tc.outcome == "" {
				return
			}
			d := res.ToolCalls[0].Decision
			if d.Outcome != tc.outcome || !strings.Contains(d.Reason, tc.reason) {
				t.Fatalf("decision %s by %s: %q; want %s with %q", d.Outcome, d.By, d.Reason, tc.outcome, tc.reason)
			}
			if tc.outcome == gate.OutcomeDenied && d.By.String() != "hook:claude:PreToolUse" {
				t.Fatalf("denied by %s, want hook:claude:PreToolUse", d.By)
			}
		})
	}
}

// An allow from a hook never beats a policy's deny.
func TestAllowNeverBeatsPolicyDeny(t *testing.T) {
	h := newHarness(t, pre(jsonOut(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}`)))
	h.policy = approval.AuthorizerFunc(func(ctx context.Context, c approval.Call) (approval.Verdict, error) {
		return approval.Verdict{Decision: approval.Deny, Reason: "policy says no", By: tool.Principal{Kind: "rule", Name: "no"}}, nil
	})
	res, err := h.run(t, "go", bash("touch ran"))
	if err != nil {
		t.Fatal(err)
	}
	if d := res.ToolCalls[0].Decision; d.Outcome != gate.OutcomeDenied || d.By.String() != "rule:no" || h.exists("ran") {
		t.Fatalf("decision %+v, ran %v; want denied by rule:no", d, h.exists("ran"))
	}
}

// Matching hooks run in parallel and combine deny > defer > ask > allow,
// whatever their order.
func TestDecisionsCombine(t *testing.T) {
	allow := jsonOut(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}`)
	ask := jsonOut(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask"}}`)
	deny := cmd("echo no >&2; exit 2")
	for _, tc := range []struct {
		doc    string
		status agent.Status
		ran    bool
	}{
		{pre(allow, deny), agent.StatusDone, false},
		{pre(deny, allow), agent.StatusDone, false},
		{pre(allow, ask), agent.StatusPending, false},
		{pre(ask, deny), agent.StatusDone, false},
		{pre(allow, allow), agent.StatusDone, true},
	} {
		h := newHarness(t, tc.doc)
		res, err := h.run(t, "go", bash("touch ran"))
		if err != nil || res.Status != tc.status || h.exists("ran") != tc.ran {
			t.Fatalf("%s: status %s (err %v) ran %v; want %s ran %v", tc.doc, res.Status, err, h.exists("ran"), tc.status, tc.ran)
		}
	}
}

// updatedInputs apply in configuration order, each hook seeing the input as
// rewritten by the ones before it (where Claude Code lets the last one win).
func TestRewritesCompose(t *testing.T) {
	h := newHarness(t, pre(
		`{"type":"command","command":"$BOT","args":["append"," a"]}`,
		`{"type":"command","command":"$BOT","args":["append"," b"]}`,
	))
	res, err := h.run(t, "go", bash("touch x"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"x", "a", "b"} {
		if !h.exists(f) {
			t.Fatalf("%s missing: the rewrites did not compose; ran %s", f, res.ToolCalls[0].Args)
		}
	}
}
