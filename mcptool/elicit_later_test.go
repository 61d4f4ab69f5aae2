package mcptool

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/builtin"
	"github.com/tollgate-dev/tollgate/internal/toolcall"
	"github.com/tollgate-dev/tollgate/tool"
)

// laterServer serves "ask", which asks the client for params(n) on its
// n-th call (1-based) before it acts, and keeps every response it got.
type laterServer struct {
	mu    sync.Mutex
	calls int
	seen  []string
}

func (ls *laterServer) transport(t *testing.T, params func(n int) *mcp.ElicitParams) mcp.Transport {
	srv := newServer(nil)
	srv.AddTool(&mcp.Tool{Name: "ask", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ls.mu.Lock()
		defer ls.mu.Unlock()
		if r, ok := req.Params.InputResponses["q"]; ok {
			b, _ := json.Marshal(r)
			ls.seen = append(ls.seen, string(b))
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
		}
		ls.calls++
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": params(ls.calls)}}, nil
	})
	return serve(t, srv)
}

func (ls *laterServer) responses() []string {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return append([]string(nil), ls.seen...)
}

// callAsk calls mcp__srv__ask with args, carrying ans when not nil.
func callAsk(t *testing.T, s *Set, args string, ans *tool.Answer) tool.Result {
	t.Helper()
	ctx := context.Background()
	if ans != nil {
		ctx = toolcall.WithAnswer(ctx, *ans)
	}
	res, err := toolsByName(s)["mcp__srv__ask"].Call(ctx, json.RawMessage(args))
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	return res
}

// With nobody to ask, an elicitation halts the call on a pending request
// (the form's fields as questions) and the call is cancelled; the call
// retried with a person's answer gives that answer to the same
// elicitation, decline and cancel as such.
func TestElicitationHaltsAndIsAnsweredLater(t *testing.T) {
	for _, c := range []struct {
		name, data, want string
	}{
		{"answers to the questions", `{"answers":[["7"],["us"]]}`, `{"action":"accept","content":{"count":7,"region":"us"}}`},
		{"content", `{"action":"accept","content":{"region":"us"}}`, `{"action":"accept","content":{"count":3,"region":"us"}}`},
		{"decline", `{"action":"decline"}`, `{"action":"decline"}`},
		{"cancel", `{"action":"cancel"}`, `{"action":"cancel"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			ls := &laterServer{}
			s := open(t, &Config{Servers: map[string]*ServerConfig{"srv": {Transport: ls.transport(t, func(int) *mcp.ElicitParams { return form() })}}}, nil)
			res := callAsk(t, s, `{"env":"prod"}`, nil)
			if res.Pending == nil {
				t.Fatalf("result %+v, want a pending request", res)
			}
			req := *res.Pending
			qs, err := builtin.ParseQuestions(req)
			if err != nil || len(qs) != 2 || qs[0].Header != "count" || qs[1].Header != "region" || len(qs[1].Options) != 2 {
				t.Fatalf("questions %+v: %v", qs, err)
			}
			if !strings.Contains(qs[0].Question, "default 3") || !strings.Contains(req.Prompt, `"srv" asks: Which region?`) {
				t.Errorf("question %q, prompt %q", qs[0].Question, req.Prompt)
			}
			// The call is cancelled; a server that still reads the
			// response sees a cancel.
			if got := ls.responses(); len(got) > 1 || (len(got) == 1 && got[0] != `{"action":"cancel"}`) {
				t.Errorf("server saw %q while the call halted, want nothing or a cancel", got)
			}
			res = callAsk(t, s, `{"env":"prod"}`, &tool.Answer{ID: req.ID, OK: true, By: "alice", Data: json.RawMessage(c.data)})
			if res.IsError || res.Output != c.want {
				t.Errorf("server saw %q (isError %v, pending %v), want %s", res.Output, res.IsError, res.Pending, c.want)
			}
		})
	}
}

// A stored answer is for one elicitation: another message, or the same
// elicitation in a call with other arguments, does not get it and halts
// again; an answer not given by a person declines.
func TestElicitationAnswerNotReplayed(t *testing.T) {
	answer := json.RawMessage(`{"action":"accept","content":{"region":"us"}}`)
	halted := func(t *testing.T, params func(int) *mcp.ElicitParams) (*Set, *laterServer, tool.Request) {
		ls := &laterServer{}
		s := open(t, &Config{Servers: map[string]*ServerConfig{"srv": {Transport: ls.transport(t, params)}}}, nil)
		res := callAsk(t, s, `{"env":"prod"}`, nil)
		if res.Pending == nil {
			t.Fatalf("result %+v, want a pending request", res)
		}
		return s, ls, *res.Pending
	}
	t.Run("another message", func(t *testing.T) {
		s, ls, req := halted(t, func(n int) *mcp.ElicitParams {
			p := form()
			if n > 1 {
				p.Message = "Which region for the payroll database?"
			}
			return p
		})
		res := callAsk(t, s, `{"env":"prod"}`, &tool.Answer{ID: req.ID, OK: true, By: "alice", Data: answer})
		if res.Pending == nil || res.Pending.ID == req.ID {
			t.Errorf("result %+v, want a new pending request", res)
		}
		for _, r := range ls.responses() {
			if strings.Contains(r, "accept") {
				t.Errorf("server saw %s", r)
			}
		}
	})
	t.Run("other arguments", func(t *testing.T) {
		s, ls, req := halted(t, func(int) *mcp.ElicitParams { return form() })
		res := callAsk(t, s, `{"env":"staging"}`, &tool.Answer{ID: req.ID, OK: true, By: "alice", Data: answer})
		if res.Pending == nil {
			t.Errorf("result %+v, want a new pending request", res)
		}
		for _, r := range ls.responses() {
			if strings.Contains(r, "accept") {
				t.Errorf("server saw %s", r)
			}
		}
	})
	t.Run("not a person", func(t *testing.T) {
		s, _, req := halted(t, func(int) *mcp.ElicitParams { return form() })
		res := callAsk(t, s, `{"env":"prod"}`, &tool.Answer{ID: req.ID, OK: true, Principal: tool.Principal{Kind: tool.PrincipalFlag, Name: "--approve=yes"}, Data: answer})
		if res.Output != `{"action":"decline"}` {
			t.Errorf("server saw %q, want a decline", res.Output)
		}
	})
}

// ElicitAnswer refuses what does not fit the form, naming the field.
func TestElicitAnswerChecks(t *testing.T) {
	schema, _ := json.Marshal(form().RequestedSchema)
	d := &ElicitData{Server: "srv", Mode: "form", Message: "Which region?", RequestedSchema: schema}
	for data, want := range map[string]string{
		`{"answers":[["many"],["us"]]}`:               `field "count": "many" is not a whole number`,
		`{"answers":[["1"],["mars"]]}`:                `field "region": "mars" is not one of "eu", "us"`,
		`{"answers":[["1"]]}`:                         `answers`,
		`{"action":"accept","content":{"count":"x"}}`: `does not fit the form`,
		`{"action":"maybe"}`:                          `want accept, decline or cancel`,
		`{"action":"decline","content":{"a":1}}`:      `only an accept has content`,
	} {
		if _, _, err := ElicitAnswer(d, json.RawMessage(data)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ElicitAnswer(%s) = %v, want an error with %q", data, err, want)
		}
	}
	action, content, err := ElicitAnswer(d, nil)
	if err != nil || action != elicitAccept || len(content) != 0 {
		t.Errorf("no data: %s %v %v, want accept with the defaults", action, content, err)
	}
}

func FuzzElicitAnswer(f *testing.F) {
	f.Add([]byte(`{"type":"object","properties":{"region":{"type":"string","enum":["eu","us"]}}}`), []byte(`{"answers":[["eu"]]}`))
	f.Add([]byte(`{"properties":{"n":{"type":"integer"},"b":{"type":"boolean"},"l":{"type":"array","items":{"anyOf":[{"const":"a","title":"A"}]}}}}`), []byte(`["1","yes","a"]`))
	f.Add([]byte(`{}`), []byte(`{"action":"cancel"}`))
	f.Fuzz(func(t *testing.T, schema, answer []byte) {
		d := &ElicitData{Mode: "form", RequestedSchema: schema}
		_, _ = elicitQuestions(schema)
		action, content, err := ElicitAnswer(d, answer)
		if err == nil && action == elicitAccept && content == nil {
			t.Fatalf("ElicitAnswer(%q, %q): accept without content", schema, answer)
		}
	})
}

// A form the question tool cannot carry (a choice of 25) halts as an
// input request, answered with the content as JSON.
func TestElicitationBeyondQuestions(t *testing.T) {
	var regions []string
	for i := range 25 {
		regions = append(regions, fmt.Sprintf("r%d", i))
	}
	p := &mcp.ElicitParams{Message: "Which region?", RequestedSchema: map[string]any{"type": "object",
		"properties": map[string]any{"region": map[string]any{"type": "string", "enum": regions}}}}
	ls := &laterServer{}
	s := open(t, &Config{Servers: map[string]*ServerConfig{"srv": {Transport: ls.transport(t, func(int) *mcp.ElicitParams { return p })}}}, nil)
	res := callAsk(t, s, `{}`, nil)
	if res.Pending == nil || res.Pending.Kind != tool.KindInput {
		t.Fatalf("result %+v, want an input request", res)
	}
	res = callAsk(t, s, `{}`, &tool.Answer{ID: res.Pending.ID, OK: true, By: "alice", Data: json.RawMessage(`{"action":"accept","content":{"region":"r24"}}`)})
	if res.Output != `{"action":"accept","content":{"region":"r24"}}` {
		t.Errorf("server saw %q", res.Output)
	}
}
