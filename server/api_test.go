package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/bounded"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/internal/serveconfig"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/server"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/tool"
)

// A run started over the API halts on an approval; the approval shows what a
// person needs; alice approves it with the digest she was shown; the server
// resumes the run by itself and the tool runs once. The decision records
// alice, the authenticated principal.
func TestStartApproveResume(t *testing.T) {
	f := newFixture(t, nil, nil, nil)
	id := f.startRun()
	a := f.pending(id)
	if a.Tool != "transfer" || a.ArgsDigest == "" || a.AskedBy != "rule:ask-transfer" || a.Reason != "money moves" ||
		a.Risk == "" || a.RunOwner != "person:alice" || a.Agent != "payer" || a.InputSchema == nil ||
		!strings.Contains(a.ArgumentsPretty, "\"amount\": 5") {
		t.Fatalf("approval view lacks what a person needs: %+v", a)
	}
	var run serverapi.RunView
	if code := f.do("GET", "/v1/runs/"+id, vicToken, nil, &run); code != http.StatusOK || run.Status != store.RunPending || len(run.Pending) != 1 || run.Pending[0].ID != a.ID {
		t.Fatalf("GET run: %d %+v", code, run)
	}
	var got serverapi.ApprovalView
	if code := f.do("POST", "/v1/approvals/"+a.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest}, &got); code != http.StatusOK {
		t.Fatalf("decision: %d %+v", code, got)
	}
	if got.DecidedBy.String() != "person:alice" || got.Status != store.StatusApproved {
		t.Fatalf("decided: %+v", got)
	}
	f.waitRun(id, store.RunDone)
	if n := f.transfer.Count(); n != 1 {
		t.Fatalf("transfer ran %d times, want 1", n)
	}
	if code := f.do("GET", "/v1/runs/"+id, vicToken, nil, &run); code != http.StatusOK || run.Status != store.RunDone || run.Text != "done" {
		t.Fatalf("GET finished run: %d %+v", code, run)
	}
	var records []struct {
		Decision struct {
			Outcome string         `json:"outcome"`
			By      tool.Principal `json:"by"`
		} `json:"decision"`
	}
	if err := json.Unmarshal(run.ToolCalls, &records); err != nil || len(records) != 1 || records[0].Decision.By != (tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}) {
		t.Fatalf("tool call records %s: %v", run.ToolCalls, err)
	}
	// The same decision again is answered as the first (a retry); another is 409.
	if code := f.do("POST", "/v1/approvals/"+a.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest}, &got); code != http.StatusOK {
		t.Fatalf("repeated decision: %d", code)
	}
	var prob serverapi.Problem
	if code := f.do("POST", "/v1/approvals/"+a.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: "sha256:other"}, &prob); code != http.StatusPreconditionFailed {
		t.Fatalf("repeated decision with another digest: %d %+v", code, prob)
	}
	if code := f.do("POST", "/v1/approvals/"+a.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "deny", Reason: "no", ArgsDigest: a.ArgsDigest}, &prob); code != http.StatusConflict || prob.Type != serverapi.ProblemDecided {
		t.Fatalf("other decision after one: %d %+v", code, prob)
	}
	if n := f.transfer.Count(); n != 1 {
		t.Fatalf("transfer ran %d times after repeated decisions, want 1", n)
	}
}

// Every error of the decision endpoint is a problem document with its status.
func TestDecisionErrors(t *testing.T) {
	f := newFixture(t, nil, nil, nil)
	id := f.startRun()
	a := f.pending(id)
	path := "/v1/approvals/" + a.ID + "/decision"
	cases := []struct {
		name, token string
		body        any
		code        int
		typ         string
	}{
		{"no token", "", serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest}, 401, "about:blank"},
		{"unknown token", "tg_nobody", serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest}, 401, "about:blank"},
		{"viewer", vicToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest}, 403, serverapi.ProblemForbidden},
		{"operator without approver", olgaToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest}, 403, serverapi.ProblemForbidden},
		{"other tenant", bobToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest}, 404, "about:blank"},
		{"digest mismatch", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: "sha256:0000"}, 412, serverapi.ProblemDigestMismatch},
		{"no digest", aliceToken, serverapi.DecisionRequest{Decision: "approve"}, 400, "about:blank"},
		{"bad decision", aliceToken, serverapi.DecisionRequest{Decision: "maybe", ArgsDigest: a.ArgsDigest}, 400, "about:blank"},
		{"a principal in the body", aliceToken, []byte(`{"decision":"approve","argsDigest":"` + a.ArgsDigest + `","by":"person:root"}`), 400, "about:blank"},
		{"edit breaks the schema", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest, EditedArgs: json.RawMessage(`{"amount":1000}`)}, 422, serverapi.ProblemInvalidEdit},
		{"edit not an object", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest, EditedArgs: json.RawMessage(`[1]`)}, 422, serverapi.ProblemInvalidEdit},
		{"too deep", aliceToken, []byte(strings.Repeat("[", 100) + strings.Repeat("]", 100)), 400, "about:blank"},
		// A log reading the first key would say deny; the decoder keeps the last.
		{"a key twice", aliceToken, []byte(`{"decision":"deny","argsDigest":"` + a.ArgsDigest + `","decision":"approve"}`), 400, "about:blank"},
		{"an edited key twice", aliceToken, []byte(`{"decision":"approve","argsDigest":"` + a.ArgsDigest + `","editedArgs":{"amount":7,"amount":9}}`), 400, "about:blank"},
		// Go's decoder matches field names regardless of case and keeps the
		// last; a proxy or log matching "decision" exactly would say deny.
		{"a key twice in another case", aliceToken, []byte(`{"decision":"deny","argsDigest":"` + a.ArgsDigest + `","Decision":"approve"}`), 400, "about:blank"},
		{"a key in another case", aliceToken, []byte(`{"DECISION":"approve","argsDigest":"` + a.ArgsDigest + `"}`), 400, "about:blank"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var p serverapi.Problem
			code := f.do("POST", path, c.token, c.body, &p)
			if code != c.code || p.Status != c.code || p.Type != c.typ || p.Detail == "" {
				t.Fatalf("got %d %+v, want %d %s", code, p, c.code, c.typ)
			}
		})
	}
	if f.transfer.Count() != 0 {
		t.Fatal("a refused decision ran the tool")
	}
	// None of them decided: a valid edit is taken, and runs.
	var got serverapi.ApprovalView
	if code := f.do("POST", path, aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest, EditedArgs: json.RawMessage(`{"amount":7}`)}, &got); code != 200 {
		t.Fatalf("valid edit: %d %+v", code, got)
	}
	f.waitRun(id, store.RunDone)
	if args := f.transfer.Args(); len(args) != 1 || args[0] != `{"amount":7}` {
		t.Fatalf("transfer ran with %v, want the edited arguments once", args)
	}
	// A retry is the same decision only for the same arguments, digit for
	// digit (approval.Digest): 7.0 is not what ran.
	var prob serverapi.Problem
	if code := f.do("POST", path, aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest, EditedArgs: json.RawMessage(`{"amount":7.0}`)}, &prob); code != http.StatusConflict {
		t.Fatalf("a retry with other edited arguments: %d %+v, want 409", code, prob)
	}
	// The conflict says how it was decided, in words: "used" is the
	// store's name for an approval its call consumed.
	if want := "the approval is already approved (and used by its call) (by person:alice)"; prob.Detail != want {
		t.Fatalf("409 detail %q, want %q", prob.Detail, want)
	}
}

// An approval that expired is 410, and the run goes on without the call.
func TestDecisionExpired(t *testing.T) {
	// A clock-free expiry: the agent's TTL is 1ns, so the request has
	// expired when it is stored.
	cfg := payerConfig(t)
	cfg.ApprovalTTL = 1
	f2 := newFixture(t, nil, nil, &server.Options{Agents: map[string]runs.RunConfig{"payer": cfg}})
	id := f2.startRun()
	run := f2.waitRun(id, store.RunPending, store.RunDone)
	var page serverapi.ApprovalPage
	f2.do("GET", "/v1/approvals?run="+id, aliceToken, nil, &page)
	if len(page.Approvals) != 1 {
		t.Fatalf("approvals of %s (%s): %+v", id, run.Status, page)
	}
	a := page.Approvals[0]
	var p serverapi.Problem
	if code := f2.do("POST", "/v1/approvals/"+a.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest}, &p); code != http.StatusGone || p.Type != serverapi.ProblemExpired {
		t.Fatalf("decision on an expired approval: %d %+v", code, p)
	}
	f2.waitRun(id, store.RunDone)
	if f2.transfer.Count() != 0 {
		t.Fatal("an expired approval ran the tool")
	}
}

// A run whose agent does not build is refused with 422 naming the server
// configuration and the field, and no flag of the command line.
func TestStartRunAgentDoesNotBuild(t *testing.T) {
	srv, err := server.New(memory.New(nil), failingBuilder{"payer": &runs.FieldError{Field: "policy", Err: errors.New("open /srv/policy.yaml: no such file")}},
		&server.Options{Tokens: testTokens(t).Lookup, Agents: map[string]runs.RunConfig{"payer": payerConfig(t)}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	f := &fixture{t: t, ts: ts}
	var p serverapi.Problem
	if code := f.do("POST", "/v1/runs", aliceToken, serverapi.StartRunRequest{Agent: "payer", Prompt: "pay"}, &p); code != http.StatusUnprocessableEntity ||
		p.Detail != `the run could not start: agent "payer" in the server configuration: policy: open /srv/policy.yaml: no such file` {
		t.Fatalf("%d %+v", code, p)
	}
}

// A run whose agent does not build is refused naming the key of server.yaml
// the user wrote (policy:), not the configuration's field (policyFile), at
// its line when the server knows the file (Options.Config); an agent built
// without applying its policy is named the same way.
func TestStartRunNamesTheServerYAMLKey(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := writeFile(t, dir, "server.yaml", `agents:
  payer:
    model: script:s.yaml
    workdir: ws
    policy: policy.yaml
`)
	c, err := serveconfig.LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	notLoaded := &runs.FieldError{Field: runcore.FieldPolicyFile, Err: errors.New("policy.yaml:3:5: unknown key \"rulez\"")}
	unapplied := runs.BuilderFunc(func(context.Context, runs.RunConfig) (*runs.Built, error) { return &runs.Built{}, nil })
	for _, tc := range []struct {
		name   string
		b      runs.Builder
		config *serveconfig.Config
		want   string
	}{
		{"with the file", failingBuilder{"payer": notLoaded}, c, p + `:5:13: agents.payer.policy: policy.yaml:3:5: unknown key "rulez"`},
		{"without the file", failingBuilder{"payer": notLoaded}, nil, `policy: policy.yaml:3:5: unknown key "rulez"`},
		{"not applied", unapplied, c, p + ":5:13: agents.payer.policy: set to "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := &server.Options{Tokens: testTokens(t).Lookup, Agents: c.Agents}
			if tc.config != nil {
				opts.AgentProblem = tc.config.AgentProblem
			}
			srv, err := server.New(memory.New(nil), tc.b, opts)
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			f := &fixture{t: t, ts: ts}
			var pr serverapi.Problem
			code := f.do("POST", "/v1/runs", aliceToken, serverapi.StartRunRequest{Agent: "payer", Prompt: "pay"}, &pr)
			prefix := `the run could not start: agent "payer" in the server configuration: `
			if code != http.StatusUnprocessableEntity || !strings.HasPrefix(pr.Detail, prefix+tc.want) || strings.Contains(pr.Detail, "policyFile") {
				t.Fatalf("%d %q, want 422 %q...", code, pr.Detail, prefix+tc.want)
			}
		})
	}
}

// A method an endpoint does not answer is 405 with the methods it does in
// Allow (RFC 9110), as problem details; a path no endpoint has is 404.
func TestWrongMethod(t *testing.T) {
	f := newFixture(t, nil, nil, nil)
	for _, tc := range []struct {
		method, path string
		status       int
		allow        string
	}{
		{"GET", "/v1/approvals/req_1/decision", 405, "POST"},
		{"DELETE", "/v1/runs", 405, "GET, HEAD, POST"},
		{"PATCH", "/v1/autonomy", 405, "GET, HEAD, PUT"},
		{"GET", "/v1/runs/run_1/cancel", 405, "POST"},
		{"POST", "/v1/events", 405, "GET, HEAD"},
		{"POST", "/healthz", 405, "GET, HEAD"},
		{"GET", "/v1/nothing", 404, ""},
		{"POST", "/nothing", 404, ""},
	} {
		req, _ := http.NewRequest(tc.method, f.ts.URL+tc.path, nil)
		req.Header.Set("Authorization", "Bearer "+aliceToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var p serverapi.Problem
		err = json.NewDecoder(resp.Body).Decode(&p)
		resp.Body.Close()
		if resp.StatusCode != tc.status || resp.Header.Get("Allow") != tc.allow || err != nil || p.Status != tc.status ||
			resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s %s: %d Allow %q %s %+v (%v); want %d Allow %q as problem details",
				tc.method, tc.path, resp.StatusCode, resp.Header.Get("Allow"), resp.Header.Get("Content-Type"), p, err, tc.status, tc.allow)
		}
	}
}

// A client that sends a request's headers and then its body a byte at a
// time, or never, held the request's goroutine for as long as it kept the
// connection. Reading a body now has Options.BodyReadTimeout: the client
// gets 408 and the connection is closed.
func TestSlowBodyTimesOut(t *testing.T) {
	f := newFixture(t, nil, nil, &server.Options{BodyReadTimeout: 200 * time.Millisecond})
	c, err := net.Dial("tcp", f.ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := fmt.Fprintf(c, "POST /v1/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"agent\"", aliceToken); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a request whose body never came: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("status %d, want 408", resp.StatusCode)
	}
}

// A body that is not what the route takes is refused saying where and
// what, in the client's terms: the line and column of invalid JSON, the
// field whose value is of the wrong kind and the kind it takes, and the
// fields there are when a key is none of them.
func TestBodyErrorsSayWhereAndWhat(t *testing.T) {
	f := newFixture(t, nil, nil, nil)
	for _, tc := range []struct{ body, want string }{
		{`{bad`, "body: not valid JSON at line 1, column 2: "},
		{"{\n  \"agent\": \"payer\",\n}", "body: not valid JSON at line 3, column 1: "},
		{`{"agent":"payer","prompt":5}`, "body: prompt: want a string, got a JSON number"},
		{`{"agent":"payer","prompt":"x","wait":"30s"}`, `body: unknown field "wait" (its fields: agent, prompt)`},
		{`{"agent":"payer"`, "body: the JSON ends too soon"},
		{`{"agent":"payer","prompt":` + strings.Repeat("9", 5000) + `}`, "body: prompt: want a string, got a JSON number"},
		{`{"agent":"payer","prompt":"x","` + strings.Repeat("k", 5000) + `":1}`, `body: unknown field "kkkk`},
	} {
		var prob serverapi.Problem
		if code := f.do("POST", "/v1/runs", aliceToken, []byte(tc.body), &prob); code != http.StatusBadRequest || !strings.HasPrefix(prob.Detail, tc.want) {
			t.Errorf("%s: %d %q, want 400 starting %q", bounded.Cut(tc.body, 80), code, prob.Detail, tc.want)
		}
		if len(prob.Detail) > 300 {
			t.Errorf("%s: a detail of %d bytes, want it cut", bounded.Cut(tc.body, 80), len(prob.Detail))
		}
	}
}
