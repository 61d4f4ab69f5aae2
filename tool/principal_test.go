package tool_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tollgate-dev/tollgate/tool"
)

// Answers are read in every form written so far: "by" a person's name (now),
// "by" a principal object (when By was typed), "by" the text form of a
// principal (before that), with or without "principal".
func TestAnswerAndVoteJSON(t *testing.T) {
	alice := tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}
	root := tool.Principal{Kind: tool.PrincipalPerson, Name: "root"}
	for _, tc := range []struct {
		in   string
		want tool.Answer
		who  tool.Principal
	}{
		// A string is a person's name.
		{`{"id":"r1","ok":true,"by":"alice"}`, tool.Answer{ID: "r1", OK: true, By: "alice"}, alice},
		{`{"id":"r1","ok":true,"by":"flagpole:x"}`, tool.Answer{ID: "r1", OK: true, By: "flagpole:x"}, tool.Principal{Kind: tool.PrincipalPerson, Name: "flagpole:x"}},
		{`{"id":"r1","ok":true,"by":"default"}`, tool.Answer{ID: "r1", OK: true, By: "default"}, tool.Principal{Kind: tool.PrincipalPerson, Name: "default"}},
		// The legacy text form: a known kind prefix and no "principal".
		{`{"id":"r1","ok":true,"by":"hook:gate"}`, tool.Answer{ID: "r1", OK: true, Principal: tool.Principal{Kind: tool.PrincipalHook, Name: "gate"}}, tool.Principal{Kind: tool.PrincipalHook, Name: "gate"}},
		{`{"id":"r1","by":"runtime"}`, tool.Answer{ID: "r1", Principal: tool.Principal{Kind: tool.PrincipalRuntime}}, tool.Principal{Kind: tool.PrincipalRuntime}},
		{`{"id":"r1","by":"flag:--approve=yes"}`, tool.Answer{ID: "r1", Principal: tool.Principal{Kind: tool.PrincipalFlag, Name: "--approve=yes"}}, tool.Principal{Kind: tool.PrincipalFlag, Name: "--approve=yes"}},
		{`{"id":"r1","by":"rule:no-rm"}`, tool.Answer{ID: "r1", Principal: tool.Principal{Kind: tool.PrincipalRule, Name: "no-rm"}}, tool.Principal{Kind: tool.PrincipalRule, Name: "no-rm"}},
		{`{"id":"r1","by":"autonomy:low"}`, tool.Answer{ID: "r1", Principal: tool.Principal{Kind: tool.PrincipalAutonomy, Name: "low"}}, tool.Principal{Kind: tool.PrincipalAutonomy, Name: "low"}},
		{`{"id":"r1","by":"person:alice"}`, tool.Answer{ID: "r1", Principal: alice}, alice},
		// With "principal" present, a string "by" is a name, whatever it holds.
		{`{"id":"r1","by":"flag:x","principal":{"kind":"person","name":"flag:x"}}`,
			tool.Answer{ID: "r1", By: "flag:x", Principal: tool.Principal{Kind: tool.PrincipalPerson, Name: "flag:x"}}, tool.Principal{Kind: tool.PrincipalPerson, Name: "flag:x"}},
		{`{"id":"r1","principal":{"kind":"flag","name":"deny"}}`, tool.Answer{ID: "r1", Principal: tool.Principal{Kind: tool.PrincipalFlag, Name: "deny"}}, tool.Principal{Kind: tool.PrincipalFlag, Name: "deny"}},
		// No one named.
		{`{"id":"r1","ok":true}`, tool.Answer{ID: "r1", OK: true}, tool.Principal{}},
		{`{"id":"r1","ok":true,"by":""}`, tool.Answer{ID: "r1", OK: true}, tool.Principal{}},
		{`{"id":"r1","ok":true,"by":null}`, tool.Answer{ID: "r1", OK: true}, tool.Principal{}},
		// An object in "by" (the typed form written before) reads into Principal.
		{`{"id":"r1","by":{"kind":"person","name":"alice"},"actor":{"kind":"person","name":"root"}}`,
			tool.Answer{ID: "r1", Principal: alice, Actor: root}, alice},
		{`{"id":"r1","by":{"kind":"hook","name":"gate"}}`, tool.Answer{ID: "r1", Principal: tool.Principal{Kind: tool.PrincipalHook, Name: "gate"}}, tool.Principal{Kind: tool.PrincipalHook, Name: "gate"}},
	} {
		var got tool.Answer
		if err := json.Unmarshal([]byte(tc.in), &got); err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.in, d)
		}
		if who := got.Who(); who != tc.who {
			t.Errorf("%s: Who() = %+v, want %+v", tc.in, who, tc.who)
		}
		if err := got.Check(); err != nil {
			t.Errorf("%s: Check: %v", tc.in, err)
		}
	}
	for _, in := range []string{
		`{"id":"r1","by":7}`,
		`{"id":"r1","by":["alice"]}`,
		`{"id":"r1","by":{"kind":"king","name":"x"}}`,
		`{"id":"r1","principal":{"kind":"king"}}`,
		`{"id":"r1","by":{"kind":"person","name":"bob"},"principal":{"kind":"person","name":"alice"}}`,
		`{"id":"r1","by":"` + strings.Repeat("a", 9<<20) + `"}`,
	} {
		var got tool.Answer
		if err := json.Unmarshal([]byte(in), &got); err == nil {
			t.Errorf("%.80s: read as %+v, want an error", in, got)
		}
	}

	for _, tc := range []struct {
		ans  tool.Answer
		want string
	}{
		{tool.Answer{ID: "r1", OK: true, By: "alice"}, `{"id":"r1","ok":true,"by":"alice"}`},
		{tool.Answer{ID: "r1", OK: true, Principal: alice}, `{"id":"r1","ok":true,"principal":{"kind":"person","name":"alice"}}`},
		{tool.Answer{ID: "r1", Principal: tool.Principal{Kind: tool.PrincipalRuntime}}, `{"id":"r1","ok":false,"principal":{"kind":"runtime"}}`},
		{tool.Answer{ID: "r1", By: "alice", Actor: root}, `{"id":"r1","ok":false,"by":"alice","actor":{"kind":"person","name":"root"}}`},
		// A name the legacy reading would take for a principal is written
		// with its principal, so that it reads back as the same person.
		{tool.Answer{ID: "r1", By: "flag:x"}, `{"id":"r1","ok":false,"by":"flag:x","principal":{"kind":"person","name":"flag:x"}}`},
		{tool.Answer{ID: "r1", By: "runtime"}, `{"id":"r1","ok":false,"by":"runtime","principal":{"kind":"person","name":"runtime"}}`},
		{tool.Answer{ID: "r1"}, `{"id":"r1","ok":false}`},
	} {
		b, err := json.Marshal(tc.ans)
		if err != nil || string(b) != tc.want {
			t.Errorf("%+v written as %s (%v), want %s", tc.ans, b, err, tc.want)
		}
		var back tool.Answer
		if err := json.Unmarshal(b, &back); err != nil || back.Who() != tc.ans.Who() || back.By != tc.ans.By {
			t.Errorf("%s read back as %+v (%v), want who %+v by %q", b, back, err, tc.ans.Who(), tc.ans.By)
		}
	}

	var v tool.Vote
	if err := json.Unmarshal([]byte(`{"source":"hook:audit","decision":"rewrite","reason":"r"}`), &v); err != nil {
		t.Fatal(err)
	}
	if want := (tool.Vote{Source: tool.Principal{Kind: tool.PrincipalHook, Name: "audit"}, Decision: tool.VoteRewrite, Reason: "r"}); v != want {
		t.Errorf("old vote read as %+v, want %+v", v, want)
	}
	b, _ := json.Marshal(v)
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

// Who prefers Principal, then a person named By; Check refuses both given
// and different, and never parses By.
func TestAnswerWhoAndCheck(t *testing.T) {
	flag := tool.Principal{Kind: tool.PrincipalFlag, Name: "approve"}
	for _, tc := range []struct {
		ans     tool.Answer
		who     tool.Principal
		wantErr bool
	}{
		{tool.Answer{By: "bench"}, tool.Principal{Kind: tool.PrincipalPerson, Name: "bench"}, false},
		{tool.Answer{By: "flag:x"}, tool.Principal{Kind: tool.PrincipalPerson, Name: "flag:x"}, false},
		{tool.Answer{Principal: flag}, flag, false},
		{tool.Answer{By: "approve", Principal: flag}, flag, false},
		{tool.Answer{By: "alice", Principal: flag}, flag, true},
		{tool.Answer{}, tool.Principal{}, false},
	} {
		if got := tc.ans.Who(); got != tc.who {
			t.Errorf("%+v: Who() = %+v, want %+v", tc.ans, got, tc.who)
		}
		err := tc.ans.Check()
		if (err != nil) != tc.wantErr {
			t.Errorf("%+v: Check() = %v, want error %v", tc.ans, err, tc.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "differ") {
			t.Errorf("Check error %q does not say the two differ", err)
		}
	}
}

// FuzzAnswerJSON: any answer that reads writes back to JSON that reads as
// the same answer, naming the same answerer; nothing panics.
func FuzzAnswerJSON(f *testing.F) {
	for _, in := range []string{
		`{"id":"r1","ok":true,"by":"alice"}`,
		`{"id":"r1","by":"flag:x"}`,
		`{"id":"r1","by":"runtime"}`,
		`{"id":"r1","by":{"kind":"hook","name":"gate"}}`,
		`{"id":"r1","by":"x","principal":{"kind":"person","name":"x"}}`,
		`{"id":"r1","principal":{"kind":"flag"},"actor":{"kind":"person","name":"root"}}`,
		`{"by":7}`, `{"by":null}`, `null`, `[]`, ``,
	} {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var a tool.Answer
		if json.Unmarshal([]byte(in), &a) != nil {
			return
		}
		b, err := json.Marshal(a)
		if err != nil {
			t.Fatalf("%q read as %+v, which does not write: %v", in, a, err)
		}
		var back tool.Answer
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s (from %q) does not read back: %v", b, in, err)
		}
		if back.Who() != a.Who() || back.By != a.By || back.Actor != a.Actor {
			t.Fatalf("%q read as %+v, written as %s, read back as %+v", in, a, b, back)
		}
	})
}
