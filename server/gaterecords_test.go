package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// gateAskFor is gateAsk for the call callID.
func gateAskFor(id, callID, args string) serverapi.GateAskRequest {
	a := gateAsk(id, args, time.Hour)
	a.Call.ID = callID
	raw := json.RawMessage(args)
	a.Pending.Request.Data, _ = json.Marshal(approval.RequestData{Tool: "mcp__fs__write", CallID: callID, Args: raw, Digest: approval.Digest(raw)})
	return a
}

// gateRecordOf is the record an external gateway sends of the call callID
// of mcp__fs__write with args, decided as d.
func gateRecordOf(callID, args string, d gate.Decision) gate.Record {
	raw := json.RawMessage(args)
	return gate.Record{ID: callID, Name: "mcp__fs__write", Source: gate.SourceMCP, RequestedArgs: raw, Args: raw,
		RequestedDigest: approval.Digest(raw), ArgsDigest: approval.Digest(raw), Ran: d.Outcome == gate.OutcomeApproved || d.Outcome == gate.OutcomeAllowed, Decision: d}
}

// An external gateway's record names a person as deciding only for a
// decision that person made in the store: for the session's call, its
// tool, its arguments and its outcome. Any other such record is refused,
// and the session's run shows none of them; records decided by the
// gateway's own policy are its word and kept.
func TestGateRecordsClaimOnlySealedDecisions(t *testing.T) {
	f := gateFixture(t)
	alice := tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}
	approved := gate.Decision{Outcome: gate.OutcomeApproved, By: alice,
		Votes: []tool.Vote{{Source: alice, Decision: tool.VoteAllow}}}
	declined := gate.Decision{Outcome: gate.OutcomeDeclined, By: alice}

	// mcp_1 approved by alice, mcp_2 denied by her, mcp_3 still pending.
	var v serverapi.GateAskView
	for _, a := range []serverapi.GateAskRequest{gateAskFor("req_1", "mcp_1", `{"path":"a.txt"}`), gateAskFor("req_2", "mcp_2", `{"path":"b.txt"}`), gateAskFor("req_3", "mcp_3", `{"path":"c.txt"}`)} {
		if code := f.do("POST", "/v1/gate/asks", agentToken, a, &v); code != http.StatusCreated {
			t.Fatalf("ask %s: %d", a.Pending.Request.ID, code)
		}
	}
	if code := f.do("POST", "/v1/approvals/req_1/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: approval.Digest(json.RawMessage(`{"path":"a.txt"}`))}, nil); code != http.StatusOK {
		t.Fatalf("alice approving: %d", code)
	}
	if code := f.do("POST", "/v1/approvals/req_2/decision", aliceToken, serverapi.DecisionRequest{Decision: "deny", Reason: "no"}, nil); code != http.StatusOK {
		t.Fatalf("alice denying: %d", code)
	}
	var got serverapi.GateAskView
	if code := f.do("GET", "/v1/gate/asks/"+v.RunID+"/req_1", agentToken, nil, &got); code != http.StatusOK || got.Status != store.StatusApproved {
		t.Fatalf("the approval: %d %+v", code, got)
	}

	session := gateAsk("x", `{}`, time.Hour).Session
	bob := tool.Principal{Kind: tool.PrincipalPerson, Name: "bob"}
	ciBot := tool.Principal{Kind: tool.PrincipalPerson, Name: "ci-bot"}
	forged := map[string]gate.Record{
		"a call no one was asked about":        gateRecordOf("mcp_9", `{"path":"a.txt"}`, approved),
		"other arguments than alice approved":  gateRecordOf("mcp_1", `{"path":"/etc/passwd"}`, approved),
		"another person than the one who did":  gateRecordOf("mcp_1", `{"path":"a.txt"}`, gate.Decision{Outcome: gate.OutcomeApproved, By: bob}),
		"the token's own name as a person":     gateRecordOf("mcp_9", `{"path":"a.txt"}`, gate.Decision{Outcome: gate.OutcomeApproved, By: ciBot}),
		"approved where alice denied":          gateRecordOf("mcp_2", `{"path":"b.txt"}`, approved),
		"denied where alice approved":          gateRecordOf("mcp_1", `{"path":"a.txt"}`, declined),
		"a call still waiting":                 gateRecordOf("mcp_3", `{"path":"c.txt"}`, approved),
		"a person's vote under a rule's name":  gateRecordOf("mcp_9", `{}`, gate.Decision{Outcome: gate.OutcomeAllowed, By: tool.Principal{Kind: tool.PrincipalRule, Name: "ok"}, Votes: []tool.Vote{{Source: alice, Decision: tool.VoteAllow}}}),
		"an administrator acting for alice":    gateRecordOf("mcp_1", `{"path":"a.txt"}`, gate.Decision{Outcome: gate.OutcomeApproved, By: alice, Actor: bob}),
		"alice's allow where she denied":       gateRecordOf("mcp_2", `{"path":"b.txt"}`, gate.Decision{Outcome: gate.OutcomeApproved, By: tool.Principal{Kind: tool.PrincipalRule, Name: "ok"}, Votes: []tool.Vote{{Source: alice, Decision: tool.VoteAllow}}}),
		"alice acting where she denied":        gateRecordOf("mcp_2", `{"path":"b.txt"}`, gate.Decision{Outcome: gate.OutcomeAllowed, By: tool.Principal{Kind: tool.PrincipalRule, Name: "ok"}, Actor: alice}),
		"alice's deny vote where she approved": gateRecordOf("mcp_1", `{"path":"a.txt"}`, gate.Decision{Outcome: gate.OutcomeApproved, By: alice, Votes: []tool.Vote{{Source: alice, Decision: tool.VoteDeny}}}),
		"alice in a shadow vote, never asked":  gateRecordOf("mcp_9", `{}`, gate.Decision{Outcome: gate.OutcomeAllowed, By: tool.Principal{Kind: tool.PrincipalRule, Name: "ok"}, Shadow: []tool.Vote{{Source: alice, Decision: tool.VoteAllow}}}),
		"a tool name of 1,000 bytes": func() gate.Record {
			r := gateRecordOf("mcp_9", `{}`, gate.Decision{Outcome: gate.OutcomeAllowed, By: tool.Principal{Kind: tool.PrincipalRule, Name: "ok"}})
			r.Name = strings.Repeat("x", 1000)
			return r
		}(),
		"a digest that is not the arguments'": func() gate.Record {
			r := gateRecordOf("mcp_1", `{"path":"/etc/passwd"}`, approved)
			r.ArgsDigest = approval.Digest(json.RawMessage(`{"path":"a.txt"}`))
			return r
		}(),
		"another tool than the one alice saw": func() gate.Record {
			r := gateRecordOf("mcp_1", `{"path":"a.txt"}`, approved)
			r.Name = "mcp__fs__delete"
			return r
		}(),
	}
	for what, rec := range forged {
		if code := f.do("POST", "/v1/gate/records", agentToken, serverapi.GateRecordRequest{Session: session, Record: rec}, nil); code != http.StatusUnprocessableEntity {
			t.Errorf("a record claiming %s: %d, want 422", what, code)
		}
	}
	// Another tenant's agent naming the same session and call reaches
	// nothing of acme's.
	if code := f.do("POST", "/v1/gate/records", globexAgentToken, serverapi.GateRecordRequest{Session: session, Record: gateRecordOf("mcp_1", `{"path":"a.txt"}`, approved)}, nil); code != http.StatusUnprocessableEntity {
		t.Errorf("globex's agent claiming acme's approval: %d, want 422", code)
	}

	kept := []gate.Record{
		gateRecordOf("mcp_1", `{"path":"a.txt"}`, approved),
		gateRecordOf("mcp_2", `{"path":"b.txt"}`, declined),
		gateRecordOf("mcp_4", `{"path":"d.txt"}`, gate.Decision{Outcome: gate.OutcomeAllowed, By: tool.Principal{Kind: tool.PrincipalRule, Name: "reads"}}),
	}
	for _, rec := range kept {
		if code := f.do("POST", "/v1/gate/records", agentToken, serverapi.GateRecordRequest{Session: session, Record: rec}, nil); code != http.StatusNoContent {
			t.Errorf("the record of %s decided by %s: %d, want 204", rec.ID, rec.Decision.By, code)
		}
	}
	var run struct{ ToolCalls []gate.Record }
	f.do("GET", "/v1/runs/"+v.RunID, aliceToken, nil, &run)
	var ids []string
	for _, r := range run.ToolCalls {
		ids = append(ids, r.ID+" "+r.Decision.By.String())
	}
	if len(ids) != 3 || ids[0] != "mcp_1 person:alice" || ids[1] != "mcp_2 person:alice" || ids[2] != "mcp_4 rule:reads" {
		t.Errorf("the run's calls: %q, want mcp_1 and mcp_2 by alice, mcp_4 by its rule", ids)
	}
}

// askApproved asks, as the agent's gateway, for mcp_1 on a.txt (request
// req_1), has alice approve it, and returns the ask once it reads back
// approved.
func askApproved(t *testing.T, f *fixture) serverapi.GateAskView {
	t.Helper()
	var v serverapi.GateAskView
	if code := f.do("POST", "/v1/gate/asks", agentToken, gateAskFor("req_1", "mcp_1", `{"path":"a.txt"}`), &v); code != http.StatusCreated {
		t.Fatalf("ask: %d", code)
	}
	if code := f.do("POST", "/v1/approvals/req_1/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: approval.Digest(json.RawMessage(`{"path":"a.txt"}`))}, nil); code != http.StatusOK {
		t.Fatalf("alice approving: %d", code)
	}
	var got serverapi.GateAskView
	if code := f.do("GET", "/v1/gate/asks/"+v.RunID+"/req_1", agentToken, nil, &got); code != http.StatusOK || got.Status != store.StatusApproved {
		t.Fatalf("the approval: %d %+v", code, got)
	}
	return v
}

// A record an external gateway sends is bound to what the server knows:
// its asker is the token's principal whatever it says, a person's
// decision backs one record of its call, and the arguments the record
// says were requested are those the person was asked about. Each forgery
// below was kept before.
func TestGateRecordsBoundToTheirApproval(t *testing.T) {
	f := gateFixture(t)
	alice := tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}
	approved := gate.Decision{Outcome: gate.OutcomeApproved, By: alice, Votes: []tool.Vote{{Source: alice, Decision: tool.VoteAllow}}}
	v := askApproved(t, f)
	session := gateAsk("x", `{}`, time.Hour).Session
	post := func(rec gate.Record) int {
		return f.do("POST", "/v1/gate/records", agentToken, serverapi.GateRecordRequest{Session: session, Record: rec}, nil)
	}

	otherRequest := gateRecordOf("mcp_1", `{"path":"a.txt"}`, approved)
	otherRequest.RequestedArgs = json.RawMessage(`{"path":"/etc/shadow"}`)
	otherRequest.RequestedDigest = approval.Digest(otherRequest.RequestedArgs)
	if code := post(otherRequest); code != http.StatusUnprocessableEntity {
		t.Errorf("a record saying other arguments were requested than alice was asked about: %d, want 422", code)
	}
	badDigest := gateRecordOf("mcp_1", `{"path":"a.txt"}`, approved)
	badDigest.RequestedArgs = json.RawMessage(`{"path":"/etc/shadow"}`)
	if code := post(badDigest); code != http.StatusUnprocessableEntity {
		t.Errorf("a requestedDigest that is not the requested arguments': %d, want 422", code)
	}
	first := gateRecordOf("mcp_1", `{"path":"a.txt"}`, approved)
	first.Principal = alice // the asker, as the gateway claims it
	if code := post(first); code != http.StatusNoContent {
		t.Fatalf("the record of alice's approval: %d, want 204", code)
	}
	if code := post(gateRecordOf("mcp_1", `{"path":"a.txt"}`, approved)); code != http.StatusUnprocessableEntity {
		t.Errorf("a second record backed by the same approval: %d, want 422", code)
	}
	byRule := gateRecordOf("mcp_2", `{"path":"b.txt"}`, gate.Decision{Outcome: gate.OutcomeAllowed, By: tool.Principal{Kind: tool.PrincipalRule, Name: "reads"}})
	byRule.Principal = alice
	if code := post(byRule); code != http.StatusNoContent {
		t.Fatalf("a record decided by a rule: %d, want 204", code)
	}
	var run struct{ ToolCalls []gate.Record }
	f.do("GET", "/v1/runs/"+v.RunID, aliceToken, nil, &run)
	var calls []string
	for _, r := range run.ToolCalls {
		calls = append(calls, r.ID+" asked by "+r.Principal.String())
	}
	if want := []string{"mcp_1 asked by person:ci-bot", "mcp_2 asked by person:ci-bot"}; !slices.Equal(calls, want) {
		t.Errorf("the run's calls: %q, want %q (one record of alice's approval; the token's principal asks)", calls, want)
	}
}

// A record whose principals' names grow past their bound when stored
// (JSON escapes "<" as six bytes) is refused: once stored, the index of
// the records naming a person could not read it, and the same approval
// backed any number of records; the run's readers could not read it
// either.
func TestGateRecordsOfEscapedNamesAreRefused(t *testing.T) {
	f := gateFixture(t)
	alice := tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}
	rule := tool.Principal{Kind: tool.PrincipalRule, Name: strings.Repeat("<", 1000)}
	approved := gate.Decision{Outcome: gate.OutcomeApproved, By: alice,
		Votes: []tool.Vote{{Source: rule, Decision: tool.VoteAsk}, {Source: alice, Decision: tool.VoteAllow}}}
	v := askApproved(t, f)
	session := gateAsk("x", `{}`, time.Hour).Session
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false) // as a gateway may send it: each "<" one byte
	if err := enc.Encode(serverapi.GateRecordRequest{Session: session, Record: gateRecordOf("mcp_1", `{"path":"a.txt"}`, approved)}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if code := f.do("POST", "/v1/gate/records", agentToken, body.Bytes(), nil); code != http.StatusUnprocessableEntity {
			t.Errorf("record %d backed by alice's approval, with a name over its bound once stored: %d, want 422", i+1, code)
		}
	}
	var run struct{ ToolCalls []gate.Record }
	f.do("GET", "/v1/runs/"+v.RunID, aliceToken, nil, &run)
	if len(run.ToolCalls) != 0 {
		t.Errorf("the run's calls: %d, want none", len(run.ToolCalls))
	}
}
