package tool_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tollgate-dev/tollgate/tool"
)

// Answers and votes written before principals were typed hold text; they
// read as principals, and are written back as objects.
func TestAnswerAndVoteJSON(t *testing.T) {
	alice := tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}
	for _, tc := range []struct {
		in   string
		want tool.Answer
	}{
		{`{"id":"r1","ok":true,"by":"alice"}`, tool.Answer{ID: "r1", OK: true, By: alice}},
		{`{"id":"r1","ok":true,"by":"hook:gate"}`, tool.Answer{ID: "r1", OK: true, By: tool.Principal{Kind: tool.PrincipalHook, Name: "gate"}}},
		{`{"id":"r1","ok":true}`, tool.Answer{ID: "r1", OK: true}},
		{`{"id":"r1","ok":true,"by":""}`, tool.Answer{ID: "r1", OK: true}},
		{`{"id":"r1","by":{"kind":"person","name":"alice"},"actor":{"kind":"person","name":"root"}}`,
			tool.Answer{ID: "r1", By: alice, Actor: tool.Principal{Kind: tool.PrincipalPerson, Name: "root"}}},
	} {
		var got tool.Answer
		if err := json.Unmarshal([]byte(tc.in), &got); err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.in, d)
		}
	}
	b, _ := json.Marshal(tool.Answer{ID: "r1", OK: true, By: alice})
	if want := `{"id":"r1","ok":true,"by":{"kind":"person","name":"alice"}}`; string(b) != want {
		t.Errorf("answer written as %s, want %s (no actor when nobody acted for alice)", b, want)
	}

	var v tool.Vote
	if err := json.Unmarshal([]byte(`{"source":"hook:audit","decision":"rewrite","reason":"r"}`), &v); err != nil {
		t.Fatal(err)
	}
	if want := (tool.Vote{Source: tool.Principal{Kind: tool.PrincipalHook, Name: "audit"}, Decision: tool.VoteRewrite, Reason: "r"}); v != want {
		t.Errorf("old vote read as %+v, want %+v", v, want)
	}
	b, _ = json.Marshal(v)
	if want := `{"source":{"kind":"hook","name":"audit"},"decision":"rewrite","reason":"r"}`; string(b) != want {
		t.Errorf("vote written as %s, want %s", b, want)
	}
}

func TestVoteDecisionValid(t *testing.T) {
	for _, d := range []tool.VoteDecision{tool.VoteAllow, tool.VoteAsk, tool.VoteDeny, tool.VoteRewrite, tool.VoteResult} {
		if !d.Valid() {
			t.Errorf("%q is not valid", d)
		}
	}
	for _, d := range []tool.VoteDecision{"", "approve", "ALLOW"} {
		if d.Valid() {
			t.Errorf("%q is valid", d)
		}
	}
}
