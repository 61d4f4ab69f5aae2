// Package modeltest is a conformance suite for implementations of
// [model.Model] (and [model.Streamer]), in the spirit of testing/slogtest.
//
// The suite decides what the model must answer: it hands a script of [Turn]s
// to the constructor under test, which returns the model wired to a backend
// that plays those turns in order, one per call. For an HTTP provider the
// backend is a local fake server speaking the provider's wire format; for
// [model.Func] it is a function. The suite then calls the model and checks
// what comes back:
//
//   - a text reply; one tool call with JSON arguments; several tool calls in
//     one turn, in order, with text;
//   - tool results fed back: the next request carries the assistant's tool
//     calls and the results keyed by call ID (checked on what the backend
//     received, when it reports it);
//   - usage and finish reasons (stop, tool_calls, length);
//   - the model ID sent verbatim and reported back;
//   - for a Streamer: text deltas whose concatenation is the final text,
//     exactly one final chunk carrying the Response, last, and the same final
//     result as Generate on the same turn; breaking out of the stream early
//     leaves no goroutine behind;
//   - cancelling the context returns promptly with the context's error, for
//     Generate and Stream.
//
// Use it from a test:
//
//	func TestConformance(t *testing.T) {
//		modeltest.Run(t, func(t *testing.T, turns []modeltest.Turn) modeltest.Backend {
//			srv := newFakeServer(t, turns) // plays turns, records requests
//			return modeltest.Backend{Model: newModel(srv.URL), Requests: srv.Requests}
//		})
//	}
package modeltest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/model"
)

// Turn is one answer the backend must produce, for the next call it receives.
type Turn struct {
	// Text is the assistant's text. A streaming backend should send it in
	// several deltas (see [SplitText]); the suite checks only their
	// concatenation and, for early break, that there are at least two.
	Text string
	// ToolCalls are the tool calls, in order, with the IDs the backend must
	// report. Arguments are JSON objects.
	ToolCalls []model.ToolCall
	// FinishReason is the reason to report, in tollgate's vocabulary; the
	// backend translates it into its own (stop, tool_calls, length).
	FinishReason model.FinishReason
	// Usage is the token usage to report; TotalTokens is always
	// InputTokens+OutputTokens.
	Usage model.Usage
	// Stall asks the backend to send nothing for this call until the client
	// gives up (the request's context ends). The suite cancels the call.
	Stall bool
}

// Backend is what the constructor under test returns.
type Backend struct {
	// Model is the model under test, wired to a backend playing the turns.
	Model model.Model
	// Requests, if not nil, returns the requests the backend has received so
	// far, decoded back from the wire into tollgate's types (a system
	// message first, tool results as separate tool messages; Name and IsError
	// of tool messages need not survive). The suite uses it to check that
	// tool calls and results round-trip. Nil skips those checks.
	Requests func() []*model.Request
	// NoLength says the backend cannot end a turn for length (model.Func
	// always reports stop or tool_calls); the length cases are skipped.
	NoLength bool
	// NoTemperature says the backend does not receive the request's
	// temperature (an API version without sampling parameters); the
	// temperature check is skipped.
	NoTemperature bool
	// OwnUsage says the backend reports a usage of its own making rather
	// than the turn's (a script replayer has no tokens to count); the usage
	// checks are skipped.
	OwnUsage bool
	// OwnModelID says the backend reports its own name as the answering
	// model rather than the request's model ID (a script replayer reports
	// its script); the model ID check is skipped.
	OwnModelID bool
	// NoStall says the backend cannot hold a call open (an in-process model
	// that answers at once): the cases that cancel a call in flight are
	// skipped. A context cancelled before the call is still checked.
	NoStall bool
}

// modelID is the model ID the suite puts in every request; backends should
// report back the ID they received.
const modelID = "conformance-model-1"

// SplitText cuts s into pieces of at most n bytes, at rune boundaries, for a
// fake backend that streams text in several deltas. n <= 0 means 4.
func SplitText(s string, n int) []string {
	if n <= 0 {
		n = 4
	}
	var out []string
	for len(s) > 0 {
		i := min(n, len(s))
		for i < len(s) && !isRuneStart(s[i]) {
			i++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

var weatherTool = model.ToolDef{
	Name:        "get_weather",
	Description: "Current weather of a city.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
}

var timeTool = model.ToolDef{
	Name:        "get_time",
	Description: "Local time of a city.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"format":{"type":"string","enum":["12h","24h"]}},"required":["city"]}`),
}

func baseRequest() *model.Request {
	return &model.Request{
		Model: modelID,
		Messages: []model.Message{
			model.System("You are a terse assistant."),
			model.User("What is the weather in Paris?"),
		},
		Tools: []model.ToolDef{weatherTool, timeTool},
	}
}

func usage(in, out int) model.Usage {
	return model.Usage{InputTokens: in, OutputTokens: out, TotalTokens: in + out}
}

var (
	textTurn = Turn{Text: "It is sunny in Paris, 21 °C.", FinishReason: model.FinishStop, Usage: usage(31, 12)}
	oneCall  = Turn{
		ToolCalls:    []model.ToolCall{{ID: "call_w1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}},
		FinishReason: model.FinishToolCalls, Usage: usage(40, 9),
	}
	severalCalls = Turn{
		Text: "Checking both.",
		ToolCalls: []model.ToolCall{
			{ID: "call_a", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
			{ID: "call_b", Name: "get_time", Arguments: json.RawMessage(`{"city":"Paris","format":"24h"}`)},
			{ID: "call_c", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Lyon"}`)},
		},
		FinishReason: model.FinishToolCalls, Usage: usage(52, 30),
	}
	lengthTurn = Turn{Text: "The weather in Paris is", FinishReason: model.FinishLength, Usage: usage(31, 5)}
)

// Run runs the suite. Each case is a subtest that calls newBackend with the
// turns it needs: newBackend builds a [Backend] that answers its successive
// calls with turns, in order. It is called once per subtest, with the
// subtest's t; it should register its cleanup on t and fail t when called
// more often than there are turns. The suite sends the model ID
// "conformance-model-1" in every request; a backend reports back the ID it
// received (unless [Backend].OwnModelID).
func Run(t *testing.T, newBackend func(t *testing.T, turns []Turn) Backend) {
	t.Run("Text", func(t *testing.T) {
		b := newBackend(t, []Turn{textTurn})
		resp := generate(t, b.Model, baseRequest())
		checkResponse(t, b, resp, textTurn)
		if b.Requests != nil {
			reqs := b.Requests()
			if len(reqs) != 1 {
				t.Fatalf("backend received %d requests, want 1", len(reqs))
			}
			checkRequest(t, reqs[0], baseRequest())
		}
	})
	t.Run("OneToolCall", func(t *testing.T) {
		b := newBackend(t, []Turn{oneCall})
		checkResponse(t, b, generate(t, b.Model, baseRequest()), oneCall)
	})
	t.Run("SeveralToolCalls", func(t *testing.T) {
		b := newBackend(t, []Turn{severalCalls})
		checkResponse(t, b, generate(t, b.Model, baseRequest()), severalCalls)
	})
	t.Run("ToolResultsRoundTrip", func(t *testing.T) { testRoundTrip(t, newBackend) })
	t.Run("FinishLength", func(t *testing.T) {
		b := newBackend(t, []Turn{lengthTurn})
		if b.NoLength {
			t.Skip("backend cannot end a turn for length")
		}
		req := baseRequest()
		req.MaxTokens = 5
		checkResponse(t, b, generate(t, b.Model, req), lengthTurn)
		if b.Requests != nil {
			if reqs := b.Requests(); len(reqs) != 1 || reqs[0].MaxTokens != 5 {
				t.Errorf("backend did not receive MaxTokens 5: %+v", reqs)
			}
		}
	})
	t.Run("Temperature", func(t *testing.T) {
		b := newBackend(t, []Turn{textTurn})
		req := baseRequest()
		temp := 0.25
		req.Temperature = &temp
		checkResponse(t, b, generate(t, b.Model, req), textTurn)
		if b.NoTemperature {
			t.Skip("backend does not receive temperature")
		}
		if b.Requests != nil {
			reqs := b.Requests()
			if len(reqs) != 1 || reqs[0].Temperature == nil || *reqs[0].Temperature != temp {
				t.Errorf("backend did not receive temperature %v", temp)
			}
		}
	})
	t.Run("CancelGenerate", func(t *testing.T) {
		b := newBackend(t, []Turn{{Stall: true}})
		if b.NoStall {
			t.Skip("backend cannot hold a call open")
		}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		errc := make(chan error, 1)
		go func() {
			_, err := b.Model.Generate(ctx, baseRequest())
			errc <- err
		}()
		select {
		case err := <-errc:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Generate after cancel: err = %v, want context.Canceled", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Generate did not return within 10s of cancellation")
		}
	})
	t.Run("CancelledBeforeCall", func(t *testing.T) {
		b := newBackend(t, []Turn{textTurn})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := b.Model.Generate(ctx, baseRequest()); !errors.Is(err, context.Canceled) {
			t.Errorf("Generate with a cancelled context: err = %v, want context.Canceled", err)
		}
	})

	probe := newBackend(t, nil)
	if _, ok := probe.Model.(model.Streamer); !ok {
		t.Log("model does not implement model.Streamer: stream cases skipped")
		return
	}
	t.Run("Stream", func(t *testing.T) {
		for name, turn := range map[string]Turn{"Text": textTurn, "OneToolCall": oneCall, "SeveralToolCalls": severalCalls, "FinishLength": lengthTurn} {
			t.Run(name, func(t *testing.T) {
				b := newBackend(t, []Turn{turn, turn})
				if b.NoLength && turn.FinishReason == model.FinishLength {
					t.Skip("backend cannot end a turn for length")
				}
				gen := generate(t, b.Model, baseRequest())
				deltas, final := stream(t, b.Model.(model.Streamer), baseRequest())
				if got := strings.Join(deltas, ""); got != final.Message.Content {
					t.Errorf("concatenated deltas %q != final text %q", got, final.Message.Content)
				}
				checkResponse(t, b, final, turn)
				if err := sameResult(gen, final); err != nil {
					t.Errorf("Stream and Generate differ on the same turn: %v", err)
				}
				if b.Requests != nil {
					reqs := b.Requests()
					if len(reqs) != 2 {
						t.Fatalf("backend received %d requests, want 2", len(reqs))
					}
					checkRequest(t, reqs[1], baseRequest())
				}
			})
		}
	})
	t.Run("StreamEarlyBreak", func(t *testing.T) {
		long := Turn{Text: strings.Repeat("Sunny and warm. ", 16), FinishReason: model.FinishStop, Usage: usage(31, 64)}
		b := newBackend(t, []Turn{long})
		before := runtime.NumGoroutine()
		n := 0
		for c, err := range b.Model.(model.Streamer).Stream(context.Background(), baseRequest()) {
			if err != nil {
				t.Fatalf("stream error before the first delta: %v", err)
			}
			if c.Response != nil {
				t.Fatal("final chunk before any delta; the backend must split the text")
			}
			n++
			break
		}
		if n != 1 {
			t.Fatalf("got %d chunks before break, want 1", n)
		}
		if err := settle(before, 5*time.Second); err != nil {
			t.Error(err)
		}
	})
	t.Run("StreamCancel", func(t *testing.T) {
		b := newBackend(t, []Turn{{Stall: true}})
		if b.NoStall {
			t.Skip("backend cannot hold a call open")
		}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		errc := make(chan error, 1)
		go func() {
			var last error
			for c, err := range b.Model.(model.Streamer).Stream(ctx, baseRequest()) {
				if err != nil {
					last = err
				} else if c.Response != nil {
					last = errors.New("got a final response from a stalled backend")
				}
			}
			errc <- last
		}()
		select {
		case err := <-errc:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Stream after cancel: last error = %v, want context.Canceled", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Stream did not end within 10s of cancellation")
		}
	})
}

func testRoundTrip(t *testing.T, newBackend func(t *testing.T, turns []Turn) Backend) {
	first := Turn{
		Text: "Let me look.",
		ToolCalls: []model.ToolCall{
			{ID: "call_rt1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
			{ID: "call_rt2", Name: "get_time", Arguments: json.RawMessage(`{"city":"Paris"}`)},
		},
		FinishReason: model.FinishToolCalls, Usage: usage(40, 20),
	}
	b := newBackend(t, []Turn{first, textTurn})
	req := baseRequest()
	resp := generate(t, b.Model, req)
	checkResponse(t, b, resp, first)
	req.Messages = append(req.Messages, resp.Message,
		model.ToolResult("call_rt1", "get_weather", `{"sky":"clear","celsius":21}`, false),
		model.ToolResult("call_rt2", "get_time", "error: time service unavailable", true),
	)
	checkResponse(t, b, generate(t, b.Model, req), textTurn)
	if b.Requests == nil {
		return
	}
	reqs := b.Requests()
	if len(reqs) != 2 {
		t.Fatalf("backend received %d requests, want 2", len(reqs))
	}
	checkRequest(t, reqs[1], req)
}

func generate(t *testing.T, m model.Model, req *model.Request) *model.Response {
	t.Helper()
	resp, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if resp == nil {
		t.Fatal("Generate returned a nil response and no error")
	}
	return resp
}

// stream collects the deltas and the final response, checking there is
// exactly one final chunk, that it comes last and has no delta.
func stream(t *testing.T, s model.Streamer, req *model.Request) ([]string, *model.Response) {
	t.Helper()
	var deltas []string
	var final *model.Response
	for c, err := range s.Stream(context.Background(), req) {
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		if final != nil {
			t.Fatal("Stream yielded a chunk after the final one")
		}
		if c.Response != nil {
			if c.Delta != "" {
				t.Errorf("final chunk also carries a delta %q", c.Delta)
			}
			final = c.Response
			continue
		}
		if c.Delta == "" {
			t.Error("Stream yielded an empty chunk")
		}
		deltas = append(deltas, c.Delta)
	}
	if final == nil {
		t.Fatal("Stream ended without a final Response")
	}
	return deltas, final
}

func checkResponse(t *testing.T, b Backend, resp *model.Response, want Turn) {
	t.Helper()
	m := resp.Message
	if m.Role != model.RoleAssistant {
		t.Errorf("role = %q, want assistant", m.Role)
	}
	if m.Content != want.Text {
		t.Errorf("text = %q, want %q", m.Content, want.Text)
	}
	if err := sameCalls(m.ToolCalls, want.ToolCalls); err != nil {
		t.Error(err)
	}
	if resp.FinishReason != want.FinishReason {
		t.Errorf("finish reason = %q, want %q", resp.FinishReason, want.FinishReason)
	}
	if !b.OwnUsage && resp.Usage != want.Usage {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want.Usage)
	}
	if !b.OwnModelID && resp.Model != modelID {
		t.Errorf("model = %q, want %q (sent verbatim, reported back)", resp.Model, modelID)
	}
}

func sameCalls(got, want []model.ToolCall) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d tool calls %v, want %d %v", len(got), got, len(want), want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.Name != w.Name {
			return fmt.Errorf("tool call %d = %s %s, want %s %s", i, g.ID, g.Name, w.ID, w.Name)
		}
		if !jsonEqual(g.Arguments, w.Arguments) {
			return fmt.Errorf("tool call %d arguments = %s, want %s", i, g.Arguments, w.Arguments)
		}
	}
	return nil
}

func sameResult(a, b *model.Response) error {
	if a.Message.Role != b.Message.Role || a.Message.Content != b.Message.Content {
		return fmt.Errorf("message %q/%q vs %q/%q", a.Message.Role, a.Message.Content, b.Message.Role, b.Message.Content)
	}
	if err := sameCalls(b.Message.ToolCalls, a.Message.ToolCalls); err != nil {
		return err
	}
	if a.Usage != b.Usage || a.FinishReason != b.FinishReason || a.Model != b.Model {
		return fmt.Errorf("usage/finish/model %+v %s %s vs %+v %s %s", a.Usage, a.FinishReason, a.Model, b.Usage, b.FinishReason, b.Model)
	}
	return nil
}

// checkRequest compares what the backend received with what was sent: model
// ID, messages (tool message Name and IsError excepted), tool definitions,
// max tokens when set.
func checkRequest(t *testing.T, got, want *model.Request) {
	t.Helper()
	if got.Model != want.Model {
		t.Errorf("backend received model %q, want %q", got.Model, want.Model)
	}
	if len(got.Messages) != len(want.Messages) {
		t.Fatalf("backend received %d messages, want %d:\n got %+v\nwant %+v", len(got.Messages), len(want.Messages), got.Messages, want.Messages)
	}
	for i, w := range want.Messages {
		g := got.Messages[i]
		if g.Role != w.Role || g.Content != w.Content || g.ToolCallID != w.ToolCallID {
			t.Errorf("message %d received as %s %q (call %q), want %s %q (call %q)", i, g.Role, g.Content, g.ToolCallID, w.Role, w.Content, w.ToolCallID)
		}
		if err := sameCalls(g.ToolCalls, w.ToolCalls); err != nil {
			t.Errorf("message %d: %v", i, err)
		}
	}
	if len(got.Tools) != len(want.Tools) {
		t.Fatalf("backend received %d tools, want %d", len(got.Tools), len(want.Tools))
	}
	for i, w := range want.Tools {
		g := got.Tools[i]
		if g.Name != w.Name || g.Description != w.Description || !jsonEqual(g.InputSchema, w.InputSchema) {
			t.Errorf("tool %d received as %s %q %s, want %s %q %s", i, g.Name, g.Description, g.InputSchema, w.Name, w.Description, w.InputSchema)
		}
	}
	if want.MaxTokens != 0 && got.MaxTokens != want.MaxTokens {
		t.Errorf("backend received max tokens %d, want %d", got.MaxTokens, want.MaxTokens)
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

// settle waits until the number of goroutines is back to at most before, or
// fails after timeout with a dump of the goroutines.
func settle(before int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		n := runtime.NumGoroutine()
		if n <= before {
			return nil
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			return fmt.Errorf("goroutines: %d after early break, %d before; stacks:\n%s", n, before, buf)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Collect drains a stream into its deltas and final response, returning the
// first error. It is a helper for provider tests.
func Collect(seq iter.Seq2[model.Chunk, error]) (deltas []string, final *model.Response, err error) {
	for c, e := range seq {
		if e != nil {
			return deltas, final, e
		}
		if c.Response != nil {
			final = c.Response
		} else {
			deltas = append(deltas, c.Delta)
		}
	}
	return deltas, final, nil
}
