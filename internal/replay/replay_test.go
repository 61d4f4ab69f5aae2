package replay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/replay"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/tool"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// rec is a decision record of tool with args, the outcome and the votes.
func rec(id, name, args string, outcome gate.Outcome, votes ...tool.Vote) gate.Record {
	return gate.Record{ID: id, Name: name, Args: json.RawMessage(args), Started: t0,
		Decision: gate.Decision{Outcome: outcome, Votes: votes}}
}

func vote(kind tool.PrincipalKind, name, decision string) tool.Vote {
	return tool.Vote{Source: tool.Principal{Kind: kind, Name: name}, Decision: tool.VoteDecision(decision)}
}

var (
	askBash   = vote(tool.PrincipalRule, "ask-bash", "ask")
	alice     = vote(tool.PrincipalPerson, "alice", "allow")
	aliceNo   = vote(tool.PrincipalPerson, "alice", "deny")
	autoAllow = vote(tool.PrincipalAutonomy, "supervised", "allow")
)

// addRun stores a finished run of tenant whose result records recs.
func addRun(t testing.TB, s store.Store, id, tenant string, recs ...gate.Record) {
	t.Helper()
	res, err := json.Marshal(map[string]any{"toolCalls": recs})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateRun(context.Background(), store.CreateRunRequest{Run: store.Run{ID: id, Tenant: tenant, Status: store.RunDone, Result: res}}); err != nil {
		t.Fatal(err)
	}
}

// fixtureStore is a store with two runs of acme and one of globex.
func fixtureStore(t testing.TB) store.Store {
	s := memory.New(nil)
	addRun(t, s, "run_a", "acme",
		rec("c1", "bash", `{"command":"go test ./..."}`, gate.OutcomeApproved, askBash, alice),
		rec("c2", "bash", `{"command":"rm -rf build"}`, gate.OutcomeDeclined, askBash, aliceNo),
		rec("c3", "read", `{"path":"README.md"}`, gate.OutcomeAllowed),
		rec("c4", "write", `{"path":"notes.txt"}`, gate.OutcomeAllowed, autoAllow),
	)
	addRun(t, s, "run_b", "acme",
		rec("c1", "bash", `{"command":"go test ./server"}`, gate.OutcomeApproved, askBash, alice),
		rec("c2", "webfetch", `{"url":"https://example.com"}`, gate.OutcomeAllowed),
		rec("c3", "nosuch", `{}`, gate.OutcomeUnknownTool),
		rec("c4", "bash", `{"command":"go vet ./..."}`, gate.OutcomeDeclined, askBash, aliceNo),
	)
	addRun(t, s, "run_g", "globex",
		rec("c1", "bash", `{"command":"go test"}`, gate.OutcomeApproved, askBash, alice),
	)
	return s
}

// candidateFile is the sample candidate policy of the docs
// (docs/approvals.md shows its replay of the fixture store).
const candidateFile = "../../examples/replay/candidate.yaml"

func candidatePolicy(t testing.TB) *policy.Policy {
	t.Helper()
	f, err := os.Open(candidateFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, _, err := policy.ParsePolicy("candidate.yaml", f)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A candidate policy replayed on a fixture store gives the exact expected
// diff: bash asked every time before, now only for rm (three approvals
// saved, one of which a person had declined), write now denied, webfetch
// now asked about; read and the rm unchanged; the unknown tool skipped;
// another tenant's run not read.
func TestReplayFixture(t *testing.T) {
	s := fixtureStore(t)
	calls, err := replay.Calls(context.Background(), s, replay.Options{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	got := replay.Replay(candidatePolicy(t), replay.Seq(calls))
	ex := func(run, call, tool, args, outcome, was, by string) replay.Example {
		return replay.Example{RunID: run, CallID: call, Tool: tool, Args: args, Outcome: outcome, WasBy: was, By: by}
	}
	want := replay.Report{Policy: "candidate.yaml", Calls: 7, Runs: 2, Unchanged: 2, Shadow: []replay.ShadowCount{},
		ApprovalsSaved: 3, SavedDeclined: 1, ApprovalsAdded: 1,
		Changes: []replay.Change{
			{From: approval.Allow, To: approval.Ask, Count: 1, Examples: []replay.Example{
				ex("run_b", "c2", "webfetch", `{"url":"https://example.com"}`, "allowed", "", "rule:ask-fetch")}},
			{From: approval.Allow, To: approval.Deny, Count: 1, Examples: []replay.Example{
				ex("run_a", "c4", "write", `{"path":"notes.txt"}`, "allowed", "autonomy:supervised", "rule:no-write")}},
			{From: approval.Ask, To: approval.Allow, Count: 3, Examples: []replay.Example{
				ex("run_a", "c1", "bash", `{"command":"go test ./..."}`, "approved", "rule:ask-bash", "runtime:default"),
				ex("run_b", "c1", "bash", `{"command":"go test ./server"}`, "approved", "rule:ask-bash", "runtime:default"),
				ex("run_b", "c4", "bash", `{"command":"go vet ./..."}`, "declined", "rule:ask-bash", "runtime:default")}},
		}}
	if !reflect.DeepEqual(got, want) {
		gb, _ := json.MarshalIndent(got, "", "  ")
		t.Fatalf("replay:\n%s", gb)
	}
	again := replay.Replay(candidatePolicy(t), replay.Seq(calls))
	if !reflect.DeepEqual(got, again) {
		t.Fatal("a second replay differs")
	}
	all, err := replay.Calls(context.Background(), s, replay.Options{AllTenants: true})
	if err != nil || len(all) != 8 {
		t.Fatalf("every tenant: %d calls, %v; want 8", len(all), err)
	}
}

// Since skips calls decided before it; hints come from the store's
// approval requests first, then from Options.Hints.
func TestReplaySinceAndHints(t *testing.T) {
	s := memory.New(nil)
	old := rec("c1", "read", `{}`, gate.OutcomeAllowed)
	old.Started = t0.Add(-time.Hour)
	addRun(t, s, "run_a", "", old, rec("c2", "read", `{}`, gate.OutcomeAllowed))
	calls, err := replay.Calls(context.Background(), s, replay.Options{Since: t0.Add(-time.Minute),
		Hints: func(name string) *tool.Hints { return &tool.Hints{ReadOnly: name == "read"} }})
	if err != nil || len(calls) != 1 || calls[0].CallID != "c2" || calls[0].Hints == nil || !calls[0].Hints.ReadOnly {
		t.Fatalf("calls since: %+v %v", calls, err)
	}
	// Under a cautious autonomy a read-only call is allowed: unchanged.
	p, _, err := policy.ParsePolicy("p.yaml", strings.NewReader("autonomy: cautious\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r := replay.Replay(p, replay.Seq(calls)); r.Unchanged != 1 {
		t.Fatalf("a read-only call under cautious: %+v", r)
	}
}

// An MCP tool's call is judged again with the hints it was decided with,
// which its record keeps: no approval request and no hints of the caller's
// know them (a read-only tool of a gateway's server, allowed by a rule on
// hints, read as a change to ask before).
func TestReplayUsesTheRecordsHints(t *testing.T) {
	s := memory.New(nil)
	r := rec("c1", "mcp__fs__list_allowed_directories", `{}`, gate.OutcomeAllowed, vote(tool.PrincipalRule, "reads", "allow"))
	r.Hints = &tool.Hints{ReadOnly: true}
	addRun(t, s, "run_a", "", r)
	calls, err := replay.Calls(context.Background(), s, replay.Options{})
	if err != nil || len(calls) != 1 || calls[0].Hints == nil || !calls[0].Hints.ReadOnly {
		t.Fatalf("calls: %+v %v", calls, err)
	}
	p, _, err := policy.ParsePolicy("p.yaml", strings.NewReader(`rules:
  - id: reads
    hints: {readOnly: true}
    decision: allow
  - id: writes-reviewed
    hints: {readOnly: false}
    decision: ask
`))
	if err != nil {
		t.Fatal(err)
	}
	if rep := replay.Replay(p, replay.Seq(calls)); rep.Unchanged != 1 {
		t.Fatalf("the policy that allowed it, replayed: %+v", rep)
	}
}

// BenchmarkReplay replays 100,000 recorded calls (bash, read, write and
// webfetch in turn) against the candidate policy.
func BenchmarkReplay(b *testing.B) {
	p := candidatePolicy(b)
	calls := make([]replay.Call, 100_000)
	tools := []string{"bash", "read", "write", "webfetch"}
	for i := range calls {
		name := tools[i%len(tools)]
		args := fmt.Sprintf(`{"path":"f%d.txt"}`, i)
		if name == "bash" {
			args = fmt.Sprintf(`{"command":"go test ./pkg%d && rm -f out%d"}`, i, i)
		}
		calls[i] = replay.Call{RunID: fmt.Sprintf("run_%d", i/100), CallID: fmt.Sprint(i), Tool: name, Args: json.RawMessage(args), Was: approval.Ask, Outcome: "approved"}
	}
	b.ResetTimer()
	for b.Loop() {
		r := replay.Replay(p, replay.Seq(calls))
		if r.Calls != len(calls) {
			b.Fatal(r.Calls)
		}
	}
}

// The text form of the fixture's replay, line for line.
func TestReplayText(t *testing.T) {
	calls, err := replay.Calls(context.Background(), fixtureStore(t), replay.Options{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := replay.WriteText(&b, replay.Replay(candidatePolicy(t), replay.Seq(calls))); err != nil {
		t.Fatal(err)
	}
	want := `replayed 7 call(s) of 2 run(s) against candidate.yaml: 2 unchanged, 5 changed
approvals saved: 3 (of which a person had declined 1); approvals added: 1

allow -> ask: 1
  run_b "c2" "webfetch" "{\"url\":\"https://example.com\"}": was runtime:default (allowed), now rule:ask-fetch

allow -> deny: 1
  run_a "c4" "write" "{\"path\":\"notes.txt\"}": was autonomy:supervised (allowed), now rule:no-write

ask -> allow: 3
  run_a "c1" "bash" "{\"command\":\"go test ./...\"}": was rule:ask-bash (approved), now runtime:default
  run_b "c1" "bash" "{\"command\":\"go test ./server\"}": was rule:ask-bash (approved), now runtime:default
  run_b "c4" "bash" "{\"command\":\"go vet ./...\"}": was rule:ask-bash (declined), now runtime:default
`
	if b.String() != want {
		t.Fatalf("text:\n%s\nwant:\n%s", b.String(), want)
	}
}

// A shadow rule of the candidate changes no decision; the report counts
// how often it would have voted.
func TestReplayShadowCounts(t *testing.T) {
	calls, err := replay.Calls(context.Background(), fixtureStore(t), replay.Options{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := policy.ParsePolicy("p.yaml", strings.NewReader(`rules:
  - id: ask-bash
    tool: bash
    decision: ask
  - id: deny-go
    mode: shadow
    tool: bash
    args: {command: {prefix: "go "}}
    decision: deny
    reason: no go today
  - id: ask-read
    mode: shadow
    tool: read
    decision: ask
`))
	if err != nil {
		t.Fatal(err)
	}
	r := replay.Replay(p, replay.Seq(calls))
	want := []replay.ShadowCount{{Rule: "rule:ask-read", Decision: approval.Ask, Count: 1}, {Rule: "rule:deny-go", Decision: approval.Deny, Count: 3}}
	if !reflect.DeepEqual(r.Shadow, want) {
		t.Fatalf("shadow counts: %+v", r.Shadow)
	}
	// bash was asked about and still is: the shadow deny changes nothing.
	for _, c := range r.Changes {
		if c.To == approval.Deny {
			t.Fatalf("a shadow rule changed a decision: %+v", c)
		}
	}
	var b strings.Builder
	_ = replay.WriteText(&b, r)
	if !strings.Contains(b.String(), "  rule:deny-go deny: 3\n") {
		t.Fatalf("text:\n%s", b.String())
	}
}

// The shadow votes recorded beside decisions are counted by rule and vote.
func TestRecordedShadow(t *testing.T) {
	s := memory.New(nil)
	r1 := rec("c1", "bash", `{"command":"rm x"}`, gate.OutcomeAllowed)
	r1.Decision.Shadow = []tool.Vote{vote(tool.PrincipalRule, "no-rm", "deny")}
	r2 := rec("c2", "bash", `{"command":"rm y"}`, gate.OutcomeApproved, askBash, alice)
	r2.Decision.Shadow = []tool.Vote{vote(tool.PrincipalRule, "no-rm", "deny"), vote(tool.PrincipalRule, "ask-all", "ask")}
	addRun(t, s, "run_a", "acme", r1, r2)
	addRun(t, s, "run_g", "globex", r1)
	calls, err := replay.Calls(context.Background(), s, replay.Options{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	got := replay.RecordedShadow(replay.Seq(calls))
	want := []replay.ShadowCount{{Rule: "rule:ask-all", Decision: approval.Ask, Count: 1}, {Rule: "rule:no-rm", Decision: approval.Deny, Count: 2}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("recorded shadow: %+v", got)
	}
}

// A running run's calls are its state's, with those of the turn in
// progress that finished: a turn's results join "toolCalls" with the run's
// next write, and until then its finished calls are in its batch.
func TestCallsOfARunningRunIncludeItsTurnInProgress(t *testing.T) {
	s := memory.New(nil)
	st, err := json.Marshal(map[string]any{
		"toolCalls": []gate.Record{rec("c1", "read", `{}`, gate.OutcomeAllowed)},
		"batch": []map[string]any{
			{"call": map[string]string{"id": "c2", "name": "bash"}, "record": rec("c2", "bash", `{"command":"ls"}`, gate.OutcomeAllowed)},
			{"call": map[string]string{"id": "c3", "name": "bash"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateRun(context.Background(), store.CreateRunRequest{Run: store.Run{ID: "run_r", Status: store.RunRunning, State: st}}); err != nil {
		t.Fatal(err)
	}
	calls, err := replay.Calls(context.Background(), s, replay.Options{})
	if err != nil || len(calls) != 2 || calls[0].CallID != "c1" || calls[1].CallID != "c2" {
		t.Fatalf("calls of the running run: %+v %v; want c1, then c2 of its batch (c3 has not finished)", calls, err)
	}
}
