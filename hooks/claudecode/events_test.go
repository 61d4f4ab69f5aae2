package claudecode_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/hooks/claudecode"
	"github.com/tollgate-dev/tollgate/internal/hookrun"
	"github.com/tollgate-dev/tollgate/model/scripted"
	"github.com/tollgate-dev/tollgate/tool"
)

var update = flag.Bool("update", false, "rewrite the golden stdin files in testdata/stdin")

func askPolicy() approval.Authorizer {
	return approval.AuthorizerFunc(func(ctx context.Context, c approval.Call) (approval.Verdict, error) {
		return approval.Verdict{Decision: approval.Ask, Reason: "a person decides", By: tool.Principal{Kind: "rule", Name: "ask"}}, nil
	})
}

// save is a handler that writes its stdin to $WS/NAME.json.
func save(name string) string {
	return `{"type":"command","command":"$BOT","args":["save","$WS/` + name + `.json"]}`
}

// TestGoldenStdin: every event gives its handlers the stdin Claude Code
// documents (one golden file per event, with the run ID, call IDs and paths
// normalized), and every matching handler gets the full stdin.
func TestGoldenStdin(t *testing.T) {
	doc := `{"hooks": {
	  "SessionStart": [{"hooks": [` + save("SessionStart") + `]}],
	  "UserPromptSubmit": [{"hooks": [` + save("UserPromptSubmit") + `]}],
	  "PreToolUse": [{"matcher": "Edit", "hooks": [` + save("PreToolUse") + `, ` + save("PreToolUse2") + `]}],
	  "PermissionRequest": [{"matcher": "Bash", "hooks": [` + save("PermissionRequest") + `]}],
	  "PostToolUse": [{"matcher": "Edit", "hooks": [` + save("PostToolUse") + `]}],
	  "PostToolUseFailure": [{"matcher": "Read", "hooks": [` + save("PostToolUseFailure") + `]}],
	  "Notification": [{"matcher": "permission_prompt", "hooks": [` + save("Notification") + `]}],
	  "Stop": [{"hooks": [` + save("Stop") + `]}],
	  "SessionEnd": [{"hooks": [` + save("SessionEnd") + `]}]
	}}`
	h := newHarness(t, doc)
	h.policy = approval.AuthorizerFunc(func(ctx context.Context, c approval.Call) (approval.Verdict, error) {
		if c.Tool == "bash" {
			return approval.Verdict{Decision: approval.Ask, Reason: "a person decides", By: tool.Principal{Kind: "rule", Name: "ask"}}, nil
		}
		return approval.Verdict{Decision: approval.Allow}, nil
	})
	res, err := h.run(t, "tidy the notes",
		[]scripted.ToolCall{call("edit", map[string]any{"path": "notes.txt", "oldString": "hello", "newString": "bye"})},
		[]scripted.ToolCall{call("read", map[string]any{"path": "missing.txt"})},
		bash("echo hi"),
	)
	if err != nil || res.Status != agent.StatusPending {
		t.Fatalf("status %s, err %v; want pending", res.Status, err)
	}
	norm := strings.NewReplacer(res.RunID, "RUN_ID", h.ws, "WS")
	ids := regexp.MustCompile(`call_\d+_\d+|req_[0-9a-f]{16}`)
	for _, ev := range []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse", "PostToolUseFailure", "Notification", "SessionEnd"} {
		got := h.read(t, ev+".json")
		var pretty any
		if err := json.Unmarshal([]byte(got), &pretty); err != nil {
			t.Fatalf("%s: stdin is not JSON: %v", ev, err)
		}
		b, _ := json.MarshalIndent(pretty, "", "  ")
		text := ids.ReplaceAllString(norm.Replace(string(b)), "ID") + "\n"
		golden := filepath.Join("testdata", "stdin", ev+".json")
		if *update {
			os.MkdirAll(filepath.Dir(golden), 0o755)
			os.WriteFile(golden, []byte(text), 0o644)
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run with -update to write it)", err)
		}
		if diff := cmp.Diff(string(want), text); diff != "" {
			t.Errorf("%s stdin (-want +got):\n%s", ev, diff)
		}
	}
	if a, b := h.read(t, "PreToolUse.json"), h.read(t, "PreToolUse2.json"); a != b {
		t.Fatalf("two matching hooks got different stdin:\n%s\n%s", a, b)
	}
	if h.exists("Stop.json") {
		t.Fatal("Stop fired on a pending run")
	}
}

// Stop: a block continues the run with the reason, stop_hook_active is set
// on the next stop, and the continuations are capped at 8.
func TestStopContinues(t *testing.T) {
	h := newHarness(t, `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"cat >> \"$CLAUDE_PROJECT_DIR/stops\"; echo >> \"$CLAUDE_PROJECT_DIR/stops\"; echo 'write the summary' >&2; exit 2"}]}]}}`)
	h.maxTurns, h.finals = 50, 20
	res, err := h.run(t, "go")
	if err != nil || res.Status != agent.StatusDone {
		t.Fatalf("status %s, err %v", res.Status, err)
	}
	lines := strings.Split(strings.TrimSpace(h.read(t, "stops")), "\n")
	if len(lines) != hookrun.MaxStopContinuations {
		t.Fatalf("%d stops, want %d", len(lines), hookrun.MaxStopContinuations)
	}
	for i, l := range lines {
		var in struct {
			Active bool   `json:"stop_hook_active"`
			Last   string `json:"last_assistant_message"`
		}
		json.Unmarshal([]byte(l), &in)
		if in.Active != (i > 0) || in.Last != "finished" {
			t.Fatalf("stop %d: stop_hook_active %v, last message %q", i, in.Active, in.Last)
		}
	}
	n := 0
	for _, m := range res.Transcript {
		if m.Content == "write the summary" {
			n++
		}
	}
	if n != hookrun.MaxStopContinuations {
		t.Fatalf("the reason reached the model %d times, want %d", n, hookrun.MaxStopContinuations)
	}
}

// UserPromptSubmit: a block ends the run before any model call; plain stdout
// and additionalContext are added to the prompt.
func TestUserPromptSubmit(t *testing.T) {
	h := newHarness(t, `{"hooks":{"UserPromptSubmit":[{"hooks":[{"type":"command","command":"grep -q password && { echo 'no secrets in prompts' >&2; exit 2; }; echo 'Today is Monday.'"}]}]}}`)
	res, err := h.run(t, "my password is hunter2")
	if !errors.Is(err, hooks.ErrBlocked) || res.Turns != 0 || !strings.Contains(err.Error(), "no secrets in prompts") {
		t.Fatalf("err %v after %d turns; want ErrBlocked with the reason, no model call", err, res.Turns)
	}
	res, err = h.run(t, "tidy up")
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Transcript[0].Content; got != "tidy up\n\nToday is Monday." {
		t.Fatalf("prompt %q", got)
	}
}

// PostToolUse: updatedToolOutput replaces the result; a block's reason and
// additionalContext are appended. PostToolUseFailure fires for an error.
func TestPostToolUse(t *testing.T) {
	h := newHarness(t, `{"hooks":{
	  "PostToolUse":[{"matcher":"Bash","hooks":[
	    `+jsonOut(`{"hookSpecificOutput":{"hookEventName":"PostToolUse","updatedToolOutput":"[redacted]"}}`)+`,
	    `+jsonOut(`{"decision":"block","reason":"lint failed"}`)+`]}],
	  "PostToolUseFailure":[{"matcher":"Read","hooks":[`+jsonOut(`{"hookSpecificOutput":{"hookEventName":"PostToolUseFailure","additionalContext":"try glob first"}}`)+`]}]}}`)
	res, err := h.run(t, "go", bash("echo secret"), []scripted.ToolCall{call("read", map[string]any{"path": "nope.txt"})})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.ToolCalls[0].Output; got != "[redacted]\n\nlint failed" {
		t.Fatalf("bash result %q", got)
	}
	if got := res.ToolCalls[1].Output; !strings.HasSuffix(got, "\n\ntry glob first") || !res.ToolCalls[1].IsError {
		t.Fatalf("read result %q", got)
	}
}

// PermissionRequest answers a policy's ask before a person is asked, and the
// record names the hook.
func TestPermissionRequest(t *testing.T) {
	for _, tc := range []struct {
		out     string
		outcome gate.Outcome
		ran     string
	}{
		{`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}`, gate.OutcomeApproved, "ran"},
		{`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow","updatedInput":{"command":"touch other"}}}}`, gate.OutcomeApproved, "other"},
		{`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"ops says no"}}}`, gate.OutcomeDeclined, ""},
	} {
		h := newHarness(t, `{"hooks":{"PermissionRequest":[{"matcher":"Bash","hooks":[`+jsonOut(tc.out)+`]}]}}`)
		h.policy = askPolicy()
		res, err := h.run(t, "go", bash("touch ran"))
		if err != nil || res.Status != agent.StatusDone {
			t.Fatalf("%s: status %s err %v", tc.out, res.Status, err)
		}
		d := res.ToolCalls[0].Decision
		if d.Outcome != tc.outcome || d.By.String() != "hook:claude:PermissionRequest" {
			t.Fatalf("%s: decision %+v", tc.out, d)
		}
		if tc.ran != "" && !h.exists(tc.ran) || tc.ran == "" && h.exists("ran") {
			t.Fatalf("%s: the call did not run as it should", tc.out)
		}
	}
	// PreToolUse handlers fire once per call, also when a PermissionRequest
	// handler answered (allowed as it is, or with an updatedInput).
	for _, out := range []string{
		`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}`,
		`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow","updatedInput":{"command":"touch other"}}}}`,
	} {
		h := newHarness(t, `{"hooks":{
		  "PreToolUse":[{"matcher":"Bash","hooks":[`+cmd(`echo pre >> "$CLAUDE_PROJECT_DIR/pre.log"`)+`]}],
		  "PermissionRequest":[{"matcher":"Bash","hooks":[`+jsonOut(out)+`]}]}}`)
		h.policy = askPolicy()
		if res, err := h.run(t, "go", bash("touch ran")); err != nil || res.Status != agent.StatusDone {
			t.Fatalf("%s: status %s err %v", out, res.Status, err)
		}
		if got := h.read(t, "pre.log"); got != "pre\n" {
			t.Fatalf("%s: PreToolUse fired %d times, want once", out, strings.Count(got, "pre"))
		}
	}
	// A PermissionRequest hook that fails denies (fail closed).
	h := newHarness(t, `{"hooks":{"PermissionRequest":[{"hooks":[`+cmd("exit 1")+`]}]}}`)
	h.policy = askPolicy()
	res, _ := h.run(t, "go", bash("touch ran"))
	if d := res.ToolCalls[0].Decision; d.Outcome != gate.OutcomeDeclined || !strings.Contains(d.Reason, "hook failed") || h.exists("ran") {
		t.Fatalf("failed hook: decision %+v", d)
	}
}

// PreToolUse additionalContext reaches the model with the call's result: after
// the output of a call that ran, and after the reason of one that was denied.
func TestPreToolUseAdditionalContext(t *testing.T) {
	for _, tc := range []struct {
		out, want string
		ran       bool
	}{
		{`{"hookSpecificOutput":{"hookEventName":"PreToolUse","additionalContext":"this repo uses pnpm"}}`, "hi\n\nthis repo uses pnpm", true},
		{`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no echo","additionalContext":"use printf"}}`, "no echo\n\nuse printf", false},
	} {
		h := newHarness(t, `{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[`+jsonOut(tc.out)+`]}]}}`)
		res, err := h.run(t, "go", bash("echo hi"))
		if err != nil || res.Status != agent.StatusDone {
			t.Fatalf("status %s err %v", res.Status, err)
		}
		rec := res.ToolCalls[0]
		if rec.Ran != tc.ran || !strings.HasSuffix(rec.Output, tc.want) {
			t.Fatalf("%s: ran %v, output %q; want ran %v and output ending %q", tc.out, rec.Ran, rec.Output, tc.ran, tc.want)
		}
		var seen bool
		for _, m := range res.Transcript {
			if m.Role == "tool" && strings.HasSuffix(m.Content, tc.want) {
				seen = true
			}
		}
		if !seen {
			t.Fatalf("%s: the model's transcript lacks the context", tc.out)
		}
	}
}

// SubagentStop fires on the final answer of a sub-agent that a tool of the
// agent started (agent.AsTool), with Claude Code's stdin (session_id is the
// calling run, agent_id the sub-agent's run, agent_type the sub-agent's ID,
// which the matcher tests); a block continues the sub-agent with the reason,
// at most hookrun.MaxStopContinuations times.
func TestSubagentStop(t *testing.T) {
	ws := workspace(t)
	s := settings(t, ws, `{"hooks":{"SubagentStop":[
	  {"matcher":"researcher","hooks":[{"type":"command","command":"cat >> \"$CLAUDE_PROJECT_DIR/substops\"; echo >> \"$CLAUDE_PROJECT_DIR/substops\"; echo 'cite your sources' >&2; exit 2"}]},
	  {"matcher":"writer","hooks":[{"type":"command","command":"touch \"$CLAUDE_PROJECT_DIR/wrong\""}]}]}}`)
	c, err := claudecode.New(s, &claudecode.Options{ProjectDir: ws})
	if err != nil {
		t.Fatal(err)
	}
	var subTurns []scripted.Turn
	for range 20 {
		subTurns = append(subTurns, scripted.Turn{Text: "the answer"})
	}
	sub, err := agent.New(&agent.Options{ID: "researcher", Model: scripted.New("sub", scripted.Script{Turns: subTurns}), MaxTurns: 50})
	if err != nil {
		t.Fatal(err)
	}
	st, err := sub.AsTool("research", "asks the researcher")
	if err != nil {
		t.Fatal(err)
	}
	parent, err := agent.New(&agent.Options{ID: "lead", Tools: agent.ToolList{st}, Hooks: c.Register(&hooks.Hooks{}),
		Model: scripted.New("parent", scripted.Script{Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{{ID: "call_1", Name: "research", Args: map[string]any{"prompt": "find it"}}}},
			{Text: "finished"},
		}})})
	if err != nil {
		t.Fatal(err)
	}
	res, err := parent.Run(context.Background(), "go")
	if err != nil || res.Status != agent.StatusDone {
		t.Fatalf("status %s, err %v", res.Status, err)
	}
	rec := res.ToolCalls[0]
	subRun, _ := rec.Metadata["subAgentRun"].(string)
	if rec.IsError || rec.Output != "the answer" || subRun == "" {
		t.Fatalf("sub-agent result %+v", rec)
	}
	if _, err := os.Stat(filepath.Join(ws, "wrong")); err == nil {
		t.Fatal("the handler for agent type writer fired for the researcher")
	}
	b, err := os.ReadFile(filepath.Join(ws, "substops"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != hookrun.MaxStopContinuations {
		t.Fatalf("SubagentStop fired %d times, want %d", len(lines), hookrun.MaxStopContinuations)
	}
	for i, l := range lines {
		var in struct {
			Session string `json:"session_id"`
			Event   string `json:"hook_event_name"`
			Active  bool   `json:"stop_hook_active"`
			AgentID string `json:"agent_id"`
			Type    string `json:"agent_type"`
			Last    string `json:"last_assistant_message"`
		}
		if err := json.Unmarshal([]byte(l), &in); err != nil {
			t.Fatal(err)
		}
		want := struct {
			Session string `json:"session_id"`
			Event   string `json:"hook_event_name"`
			Active  bool   `json:"stop_hook_active"`
			AgentID string `json:"agent_id"`
			Type    string `json:"agent_type"`
			Last    string `json:"last_assistant_message"`
		}{res.RunID, "SubagentStop", i > 0, subRun, "researcher", "the answer"}
		if diff := cmp.Diff(want, in); diff != "" {
			t.Fatalf("stdin of stop %d (-want +got):\n%s", i, diff)
		}
	}
	// The golden form of the first.
	var pretty any
	_ = json.Unmarshal([]byte(lines[0]), &pretty)
	pb, _ := json.MarshalIndent(pretty, "", "  ")
	text := strings.NewReplacer(subRun, "SUB_RUN_ID", res.RunID, "RUN_ID", ws, "WS").Replace(string(pb)) + "\n"
	golden := filepath.Join("testdata", "stdin", "SubagentStop.json")
	if *update {
		os.WriteFile(golden, []byte(text), 0o644)
	} else if want, err := os.ReadFile(golden); err != nil || string(want) != text {
		t.Fatalf("stdin differs from %s (%v):\n%s", golden, err, text)
	}
}
