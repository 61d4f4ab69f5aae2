package agent_test

// Streaming parity: one conversation through Run and through Stream, on the
// scripted model, model.Func, and the OpenAI and Anthropic providers against
// local fake servers that stream server-sent events. These tests import the
// providers; the agent package itself never does (internal/archtest).

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/providertest"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/model/anthropic"
	"github.com/tollgate-dev/tollgate/model/openai"
	"github.com/tollgate-dev/tollgate/model/scripted"
	"github.com/tollgate-dev/tollgate/tool"
)

// parTurn is one assistant answer of a parity conversation.
type parTurn struct {
	text  string
	calls []model.ToolCall
}

// parBackend is a model under test and what it has received.
type parBackend struct {
	model model.Model
	// requests returns what the model (or its server) has received, one
	// string per call: the raw request body for a server.
	requests func() []string
}

var parKinds = []string{"scripted", "func", "openai", "anthropic"}

// assistantTurns counts the assistant messages of a conversation: every
// backend here is stateless and plays the turn with that index.
func assistantTurns(msgs []model.Message) int {
	n := 0
	for _, m := range msgs {
		if m.Role == model.RoleAssistant {
			n++
		}
	}
	return n
}

func newParBackend(t *testing.T, kind string, turns []parTurn) parBackend {
	t.Helper()
	switch kind {
	case "scripted":
		var s scripted.Script
		for _, tr := range turns {
			st := scripted.Turn{Text: tr.text}
			for _, c := range tr.calls {
				var args map[string]any
				if err := json.Unmarshal(c.Arguments, &args); err != nil {
					t.Fatal(err)
				}
				st.ToolCalls = append(st.ToolCalls, scripted.ToolCall{ID: c.ID, Name: c.Name, Args: args})
			}
			s.Turns = append(s.Turns, st)
		}
		rec := &parRecorder{inner: scripted.New("parity.yaml", s)}
		return parBackend{model: rec, requests: rec.requests}
	case "func":
		rec := &parRecorder{inner: model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
			n := assistantTurns(req.Messages)
			if n >= len(turns) {
				return model.Reply{}, fmt.Errorf("func: turn %d asked for, the conversation has %d", n+1, len(turns))
			}
			rep := model.Reply{Content: turns[n].text, Usage: model.Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15}}
			for _, c := range turns[n].calls {
				rep.ToolCalls = append(rep.ToolCalls, model.FuncCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
			}
			return rep, nil
		})}
		return parBackend{model: rec, requests: rec.requests}
	case "openai":
		srv := newParServer(t, turns)
		m, err := openai.New(&openai.Options{BaseURL: srv.URL + "/v1", APIKey: "sk-parity", Model: "gpt-parity", MaxRetries: -1})
		if err != nil {
			t.Fatal(err)
		}
		return parBackend{model: m, requests: rawRequests(srv)}
	case "anthropic":
		srv := newParServer(t, turns)
		m, err := anthropic.New(&anthropic.Options{BaseURL: srv.URL, APIKey: "sk-ant-parity", Model: "claude-parity", MaxRetries: -1})
		if err != nil {
			t.Fatal(err)
		}
		return parBackend{model: m, requests: rawRequests(srv)}
	}
	t.Fatalf("unknown backend %q", kind)
	return parBackend{}
}

// newParServer starts a fake OpenAI and Anthropic API playing turns.
func newParServer(t *testing.T, turns []parTurn) *providertest.LLMServer {
	var pt []providertest.Turn
	for _, tr := range turns {
		x := providertest.Turn{Text: tr.text}
		for _, c := range tr.calls {
			x.Calls = append(x.Calls, providertest.Call{ID: c.ID, Name: c.Name, Args: string(c.Arguments)})
		}
		pt = append(pt, x)
	}
	return providertest.NewLLMServer(t, pt...)
}

type parObj = map[string]any

// parSend writes one server-sent event (with an event name when not empty).
func parSend(w http.ResponseWriter, event string, data parObj) {
	b, _ := json.Marshal(data)
	if event != "" {
		fmt.Fprintf(w, "event: %s\n", event)
	}
	fmt.Fprintf(w, "data: %s\n\n", b)
	w.(http.Flusher).Flush()
}

// rawRequests returns the raw bodies srv has received.
func rawRequests(srv *providertest.LLMServer) func() []string {
	return func() []string {
		_, _, raw := srv.Requests()
		return raw
	}
}

// parRecorder records the requests of an in-process model (one that does
// not stream; the agent then calls Generate).
type parRecorder struct {
	inner model.Model
	mu    sync.Mutex
	reqs  []string
}

func (r *parRecorder) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	b, _ := json.Marshal(req)
	r.mu.Lock()
	r.reqs = append(r.reqs, string(b))
	r.mu.Unlock()
	return r.inner.Generate(ctx, req)
}

func (r *parRecorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.reqs...)
}

// parStages counts hook calls per stage.
type parStages struct {
	beforeLLM, afterLLM, beforeTool, afterTool atomic.Int64
}

func (s *parStages) counts() map[string]int64 {
	return map[string]int64{
		"before_llm": s.beforeLLM.Load(), "after_llm": s.afterLLM.Load(),
		"before_tool": s.beforeTool.Load(), "after_tool": s.afterTool.Load(),
	}
}

// parSecret is in the raw output of the lookup tool; an AfterTool hook
// replaces it before anything else sees it (C39).
const parSecret = "tok_LIVE_9f8e7d6c5b4a"

var parConversation = []parTurn{
	{text: "Looking up Ada.", calls: []model.ToolCall{{ID: "call_lookup1", Name: "lookup", Arguments: json.RawMessage(`{"user":"ada"}`)}}},
	{text: "Ada's account is active; its token is withheld."},
}

// parRun is one run of an agent and what could be seen of it.
type parRun struct {
	res    *agent.Result
	err    error
	events []agent.Event // Stream only
	stages map[string]int64
	ran    int64    // executions of the tool
	reqs   []string // what the model received
}

// parAgent builds a fresh agent on a fresh backend for one run: the lookup
// tool, a counting hook at every stage, and the AfterTool redaction.
func parAgent(t *testing.T, kind string, turns []parTurn, extra func(h *hooks.Hooks)) (*agent.Agent, parBackend, *parStages, *atomic.Int64) {
	t.Helper()
	b := newParBackend(t, kind, turns)
	var ran atomic.Int64
	lookup := tool.Must("lookup", "Look up a user's account.", func(ctx context.Context, in struct {
		User string `json:"user"`
	}) (string, error) {
		ran.Add(1)
		return "user " + in.User + ": active, api token " + parSecret, nil
	}, nil)
	transfer := tool.Must("transfer_funds", "Move money.", func(ctx context.Context, in struct {
		Amount int `json:"amount"`
	}) (string, error) {
		ran.Add(1)
		return fmt.Sprintf("moved %d", in.Amount), nil
	}, nil)
	st := &parStages{}
	h := &hooks.Hooks{}
	if extra != nil {
		extra(h)
	}
	h.BeforeLLM("count", func(ctx context.Context, ev *hooks.BeforeLLMEvent) (*hooks.LLMOverride, error) {
		st.beforeLLM.Add(1)
		return nil, nil
	})
	h.AfterLLM("count", func(ctx context.Context, ev *hooks.AfterLLMEvent) error {
		st.afterLLM.Add(1)
		return nil
	})
	h.BeforeTool("count", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		st.beforeTool.Add(1)
		return nil, nil
	})
	h.AfterTool("count", func(ctx context.Context, ev *hooks.AfterToolEvent) (*hooks.ToolOverride, error) {
		st.afterTool.Add(1)
		return nil, nil
	})
	h.AfterTool("redact", func(ctx context.Context, ev *hooks.AfterToolEvent) (*hooks.ToolOverride, error) {
		if strings.Contains(ev.Result.Output, parSecret) {
			return hooks.Replace(tool.Text(strings.ReplaceAll(ev.Result.Output, parSecret, "[withheld]"))), nil
		}
		return nil, nil
	})
	a, err := agent.New(&agent.Options{Model: b.model, ModelName: "parity-model", Tools: agent.ToolList{lookup, transfer}, Hooks: h})
	if err != nil {
		t.Fatal(err)
	}
	return a, b, st, &ran
}

func parDoRun(t *testing.T, kind string, turns []parTurn, extra func(*hooks.Hooks)) parRun {
	a, b, st, ran := parAgent(t, kind, turns, extra)
	res, err := a.Run(context.Background(), "How is Ada's account?")
	return parRun{res: res, err: err, stages: st.counts(), ran: ran.Load(), reqs: b.requests()}
}

// parDoStream runs the agent through Stream; onEvent, if set, sees each
// event with the tool's execution count at that moment.
func parDoStream(t *testing.T, kind string, turns []parTurn, extra func(*hooks.Hooks), onEvent func(ev agent.Event, ran int64)) parRun {
	a, b, st, ran := parAgent(t, kind, turns, extra)
	var out parRun
	for ev, err := range a.Stream(context.Background(), "How is Ada's account?") {
		if onEvent != nil {
			onEvent(ev, ran.Load())
		}
		out.events = append(out.events, ev)
		if ev.Kind == agent.EventDone {
			out.res = ev.Result
		}
		if err != nil {
			out.err = err
		}
	}
	out.stages, out.ran, out.reqs = st.counts(), ran.Load(), b.requests()
	return out
}

// parComparable strips what differs between two runs of one conversation:
// run IDs, timings, the halted state's run ID, and its event number (Stream
// yields a streamed turn's text in several deltas, Run's Generate call gets
// it whole).
func parComparable(res *agent.Result) *agent.Result {
	if res == nil {
		return nil
	}
	c := *res
	c.RunID = ""
	c.ToolCalls = append([]gate.Record(nil), res.ToolCalls...)
	for i := range c.ToolCalls {
		c.ToolCalls[i].RunID = ""
		c.ToolCalls[i].Started = time.Time{}
		c.ToolCalls[i].Duration = 0
	}
	return &c
}

// parState compares halted states by their JSON, without the run ID, the
// records (which carry timings) and the event count.
var parState = cmp.Transformer("stateJSON", func(s *agent.State) map[string]any {
	if s == nil {
		return nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		panic(err)
	}
	delete(m, "runId")
	delete(m, "toolCalls")
	delete(m, "seq")
	return m
})

func TestStreamParityAcrossModels(t *testing.T) {
	var first *agent.Result
	for _, kind := range parKinds {
		t.Run(kind, func(t *testing.T) {
			run := parDoRun(t, kind, parConversation, nil)
			str := parDoStream(t, kind, parConversation, nil, nil)
			if run.err != nil || str.err != nil {
				t.Fatalf("Run err = %v, Stream err = %v", run.err, str.err)
			}
			if diff := cmp.Diff(parComparable(run.res), parComparable(str.res), parState); diff != "" {
				t.Errorf("Run and Stream results differ (-run +stream):\n%s", diff)
			}
			want := map[string]int64{"before_llm": 2, "after_llm": 2, "before_tool": 1, "after_tool": 1}
			if diff := cmp.Diff(want, run.stages); diff != "" {
				t.Errorf("hooks fired on Run (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(run.stages, str.stages); diff != "" {
				t.Errorf("hooks fired differently on Stream (-run +stream):\n%s", diff)
			}
			if run.ran != 1 || str.ran != 1 {
				t.Errorf("tool ran %d times on Run, %d on Stream; want once each", run.ran, str.ran)
			}
			res := str.res
			if res.Status != agent.StatusDone || res.Text != parConversation[1].text {
				t.Errorf("result %s %q, want done %q", res.Status, res.Text, parConversation[1].text)
			}
			if len(res.ToolCalls) != 1 || res.ToolCalls[0].ID != "call_lookup1" || string(res.ToolCalls[0].Args) != `{"user":"ada"}` ||
				res.ToolCalls[0].Output != "user ada: active, api token [withheld]" || strings.Join(res.ToolCalls[0].ReplacedBy, ",") != "redact" {
				t.Errorf("tool call records = %+v", res.ToolCalls)
			}

			// The streamed text is the conversation's text, in deltas.
			var text strings.Builder
			for _, ev := range str.events {
				if ev.Kind == agent.EventText {
					text.WriteString(ev.Delta)
				}
			}
			if got, want := text.String(), parConversation[0].text+parConversation[1].text; got != want {
				t.Errorf("streamed text = %q, want %q", got, want)
			}

			// C39: the replacement is what every event shows, and what the
			// model is sent; the secret appears nowhere.
			sawResult := false
			for _, ev := range str.events {
				b, _ := json.Marshal(ev)
				if strings.Contains(string(b), parSecret) {
					t.Errorf("%s event carries the replaced secret: %s", ev.Kind, b)
				}
				if ev.Kind == agent.EventToolResult {
					sawResult = true
					if ev.Record.Output != "user ada: active, api token [withheld]" {
						t.Errorf("tool_result event output = %q", ev.Record.Output)
					}
				}
			}
			if !sawResult {
				t.Error("no tool_result event")
			}
			for _, runs := range [][]string{run.reqs, str.reqs} {
				if len(runs) != 2 {
					t.Fatalf("the model received %d requests, want 2", len(runs))
				}
				if strings.Contains(runs[1], parSecret) || !strings.Contains(runs[1], "[withheld]") {
					t.Errorf("the second model request does not carry the replacement alone: %s", runs[1])
				}
			}

			// Every model gives the same conversation.
			c := parComparable(res)
			c.Usage = model.Usage{}
			if first == nil {
				first = c
			} else if diff := cmp.Diff(first.Transcript, c.Transcript, parJSONEqual); diff != "" {
				t.Errorf("transcript differs from %s's (-%s +%s):\n%s", parKinds[0], parKinds[0], kind, diff)
			}
		})
	}
}

// parJSONEqual compares JSON arguments by value, not by bytes.
var parJSONEqual = cmp.Comparer(func(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	return cmp.Equal(x, y)
})

// C43 via Stream: a BeforeLLM hook that supplies the response means no model
// is called; the servers see no request.
func TestStreamBeforeLLMCannedCallsNoModel(t *testing.T) {
	canned := func(h *hooks.Hooks) {
		h.BeforeLLM("canned", func(ctx context.Context, ev *hooks.BeforeLLMEvent) (*hooks.LLMOverride, error) {
			return &hooks.LLMOverride{Response: &model.Response{Message: model.Assistant("From the cache."), FinishReason: model.FinishStop}}, nil
		})
	}
	for _, kind := range parKinds {
		t.Run(kind, func(t *testing.T) {
			str := parDoStream(t, kind, parConversation, canned, nil)
			run := parDoRun(t, kind, parConversation, canned)
			for name, r := range map[string]parRun{"Stream": str, "Run": run} {
				if r.err != nil || r.res == nil || r.res.Status != agent.StatusDone || r.res.Text != "From the cache." {
					t.Errorf("%s: result %+v, err %v; want done with the canned text", name, r.res, r.err)
				}
				if len(r.reqs) != 0 {
					t.Errorf("%s: the model received %d requests, want none", name, len(r.reqs))
				}
				if r.ran != 0 {
					t.Errorf("%s: a tool ran", name)
				}
			}
			var text strings.Builder
			for _, ev := range str.events {
				if ev.Kind == agent.EventText {
					text.WriteString(ev.Delta)
				}
			}
			if text.String() != "From the cache." {
				t.Errorf("streamed text = %q, want the canned text", text.String())
			}
		})
	}
}

// C42 via Stream with every model: a BeforeTool hook asks for approval of
// transfer_funds; the pending event comes before anything runs, and nothing
// runs.
func TestStreamPendingApprovalBeforeExecution(t *testing.T) {
	turns := []parTurn{
		{text: "Moving the money.", calls: []model.ToolCall{{ID: "call_xfer1", Name: "transfer_funds", Arguments: json.RawMessage(`{"amount":100}`)}}},
		{text: "Done."},
	}
	gate := func(h *hooks.Hooks) {
		h.BeforeTool("gate", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
			if ev.Name == "transfer_funds" && ev.Answer == nil {
				return hooks.Ask(tool.Request{ID: "approve-" + ev.ID, Kind: tool.KindApproval, Prompt: "Transfer 100?"}), nil
			}
			return nil, nil
		})
	}
	for _, kind := range parKinds {
		t.Run(kind, func(t *testing.T) {
			var kinds []agent.EventKind
			pendingSeen := false
			str := parDoStream(t, kind, turns, gate, func(ev agent.Event, ran int64) {
				kinds = append(kinds, ev.Kind)
				switch ev.Kind {
				case agent.EventPending:
					pendingSeen = true
					if ran != 0 {
						t.Errorf("the tool ran %d times before the pending event", ran)
					}
					if ev.Request == nil || ev.Request.ID != "approve-call_xfer1" || ev.CallID != "call_xfer1" {
						t.Errorf("pending event = %+v", ev)
					}
				case agent.EventToolResult:
					t.Errorf("a tool_result event for a pending call: %+v", ev.Record)
				}
			})
			if !pendingSeen {
				t.Fatalf("no pending event; events %v", kinds)
			}
			if str.err != nil || str.res == nil || str.res.Status != agent.StatusPending || len(str.res.Pending) != 1 {
				t.Fatalf("result %+v, err %v; want pending with one request", str.res, str.err)
			}
			if str.ran != 0 {
				t.Errorf("counter = %d, want 0", str.ran)
			}
			if len(str.reqs) != 1 {
				t.Errorf("the model received %d requests, want 1 (the run halts after the first turn)", len(str.reqs))
			}
			run := parDoRun(t, kind, turns, gate)
			if diff := cmp.Diff(parComparable(run.res), parComparable(str.res), parState); diff != "" || run.err != nil {
				t.Errorf("Run and Stream differ (-run +stream), Run err %v:\n%s", run.err, diff)
			}
		})
	}
}

// Breaking out of Stream in the middle of a provider's stream ends the HTTP
// request and leaves no goroutine behind: the server holds the stream open
// after the first text chunk until the client goes away.
func TestStreamEarlyBreakWithProvider(t *testing.T) {
	for _, kind := range []string{"openai", "anthropic"} {
		t.Run(kind, func(t *testing.T) {
			released := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				defer close(released)
				w.Header().Set("Content-Type", "text/event-stream")
				if kind == "openai" {
					parSend(w, "", parObj{"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
						"choices": []parObj{{"index": 0, "delta": parObj{"role": "assistant", "content": "Hel"}, "finish_reason": nil}}})
				} else {
					parSend(w, "message_start", parObj{"type": "message_start", "message": parObj{"id": "msg", "type": "message", "role": "assistant", "model": "m",
						"content": []parObj{}, "stop_reason": nil, "stop_sequence": nil, "usage": parObj{"input_tokens": 1, "output_tokens": 1}}})
					parSend(w, "content_block_start", parObj{"type": "content_block_start", "index": 0, "content_block": parObj{"type": "text", "text": ""}})
					parSend(w, "content_block_delta", parObj{"type": "content_block_delta", "index": 0, "delta": parObj{"type": "text_delta", "text": "Hel"}})
				}
				<-r.Context().Done()
			}))
			defer srv.Close()
			var m model.Model
			var err error
			if kind == "openai" {
				m, err = openai.New(&openai.Options{BaseURL: srv.URL + "/v1", Model: "m", MaxRetries: -1})
			} else {
				m, err = anthropic.New(&anthropic.Options{BaseURL: srv.URL, APIKey: "k", Model: "m", MaxRetries: -1})
			}
			if err != nil {
				t.Fatal(err)
			}
			a, err := agent.New(&agent.Options{Model: m, ModelName: "m"})
			if err != nil {
				t.Fatal(err)
			}
			before := runtime.NumGoroutine()
			var got []agent.EventKind
			for ev, err := range a.Stream(context.Background(), "hi") {
				if err != nil {
					t.Fatalf("stream error before the first delta: %v", err)
				}
				got = append(got, ev.Kind)
				break
			}
			if len(got) != 1 || got[0] != agent.EventText {
				t.Fatalf("events before break = %v, want one text event", got)
			}
			select {
			case <-released:
			case <-time.After(10 * time.Second):
				t.Fatal("the server's request was still open 10s after the consumer stopped")
			}
			deadline := time.Now().Add(10 * time.Second)
			for runtime.NumGoroutine() > before {
				if time.Now().After(deadline) {
					buf := make([]byte, 1<<20)
					t.Fatalf("%d goroutines, %d before the stream:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
