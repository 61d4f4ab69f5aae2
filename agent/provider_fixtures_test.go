package agent_test

// The inputs of the providers' recorded server fixtures
// (model/*/testdata/servers), through the agent and the real OpenAI and
// Anthropic providers: what a run does with each, on Run, Stream and
// Resume. Run and Resume ask without streaming (the .json fixtures), Stream
// streams (the .sse fixtures).

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/model/anthropic"
	"github.com/tollgate-dev/tollgate/model/openai"
	"github.com/tollgate-dev/tollgate/tool"
)

// fixtureServer answers the n-th non-streaming request with json[n] and
// the n-th streaming one with sse[n] (the last one repeats; a .json one is
// sent as application/json, as a server that does not stream answers): each a fixture
// file of the provider's testdata/servers, or, when it starts with "data:"
// or "event:", the body itself.
func fixtureServer(t *testing.T, provider string, json, sse []string) string {
	t.Helper()
	var mu sync.Mutex
	var nJSON, nSSE int
	body := func(name string) string {
		if strings.HasPrefix(name, "data:") || strings.HasPrefix(name, "event:") {
			return name
		}
		b, err := os.ReadFile(filepath.Join("..", "model", provider, "testdata", "servers", name))
		if err != nil {
			t.Error(err)
		}
		return string(b)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := io.ReadAll(r.Body)
		stream := strings.Contains(string(req), `"stream":true`)
		mu.Lock()
		var name string
		if stream {
			name = sse[min(nSSE, len(sse)-1)]
			nSSE++
			// A .json fixture is one JSON answer to a streaming request.
			if strings.HasSuffix(name, ".json") {
				w.Header().Set("Content-Type", "application/json")
			} else {
				w.Header().Set("Content-Type", "text/event-stream")
			}
		} else {
			name = json[min(nJSON, len(json)-1)]
			nJSON++
			w.Header().Set("Content-Type", "application/json")
		}
		mu.Unlock()
		_, _ = io.WriteString(w, body(name))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func fixtureModel(t *testing.T, provider, url string) model.Model {
	t.Helper()
	var (
		m   model.Model
		err error
	)
	switch provider {
	case "openai":
		m, err = openai.New(&openai.Options{BaseURL: url + "/v1", Model: "m", MaxRetries: -1})
	case "anthropic":
		m, err = anthropic.New(&anthropic.Options{BaseURL: url, Model: "m", MaxRetries: -1})
	}
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// streamResult runs a.Stream and returns the done event's result and the
// error that came with it.
func streamResult(a *agent.Agent, prompt string) (*agent.Result, error) {
	var res *agent.Result
	var last error
	for ev, err := range a.Stream(context.Background(), prompt) {
		if err != nil {
			last = err
		}
		if ev.Kind == agent.EventDone {
			res = ev.Result
		}
	}
	return res, last
}

// Cut off at the output limit, through each provider, on Run, Stream and
// Resume: one complete call and one cut off mid-arguments, then a text
// answer cut off the same way. The complete call runs; the cut one never
// does, and its result names the output limit; the run ends incomplete with
// finish reason length and the text that arrived.
func TestProviderFixturesOutputLimit(t *testing.T) {
	for _, p := range []struct {
		provider  string
		json, sse []string
		cutID     string
	}{
		{"openai", []string{"length_cut.json", "length_text.json"}, []string{"length_cut.sse", "length_text.sse"}, "call_b"},
		// Without streaming, the Messages API sends a cut tool_use with
		// the part of its input it could parse ({} here): the last call of
		// a cut answer never runs, whatever its input.
		{"anthropic", []string{"max_tokens_cut.json", "max_tokens_text.json"}, []string{"max_tokens_cut.sse", "max_tokens_text.sse"}, "toolu_b"},
	} {
		check := func(t *testing.T, res *agent.Result, err error, read *testkit.Counter) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != agent.StatusIncomplete || res.FinishReason != model.FinishLength || res.Text != "The files s" || !strings.Contains(res.Reason, "output limit") {
				t.Errorf("status %s, finish %q, text %q, reason %q; want incomplete, length, the partial text and a reason", res.Status, res.FinishReason, res.Text, res.Reason)
			}
			if got := read.Args(); len(got) != 1 || !strings.Contains(got[0], `"a.txt"`) {
				t.Errorf("read_file ran with %q, want only the complete call's arguments", got)
			}
			if len(res.ToolCalls) != 2 {
				t.Fatalf("%d records, want 2", len(res.ToolCalls))
			}
			cut := res.ToolCalls[1]
			if cut.ID != p.cutID || cut.Ran || !cut.IsError || cut.Decision.Outcome != gate.OutcomeInvalid ||
				!strings.Contains(cut.Output, "cut off at the model's output limit") {
				t.Errorf("cut-off call record = %+v", cut)
			}
		}
		t.Run(p.provider+"/Run", func(t *testing.T) {
			read := &testkit.Counter{Name: "read_file"}
			m := fixtureModel(t, p.provider, fixtureServer(t, p.provider, p.json, p.sse))
			res, err := newAgent(t, agent.Options{Model: m, Tools: agent.ToolList{read}}).Run(context.Background(), "read both")
			check(t, res, err, read)
		})
		t.Run(p.provider+"/Stream", func(t *testing.T) {
			read := &testkit.Counter{Name: "read_file"}
			m := fixtureModel(t, p.provider, fixtureServer(t, p.provider, p.json, p.sse))
			res, err := streamResult(newAgent(t, agent.Options{Model: m, Tools: agent.ToolList{read}}), "read both")
			check(t, res, err, read)
		})
		t.Run(p.provider+"/Resume", func(t *testing.T) {
			// The complete call waits for an approval; the cut one is
			// settled at once and never asked about.
			read := &testkit.Counter{Name: "read_file"}
			var mu sync.Mutex
			var asked []string
			h := (&hooks.Hooks{}).BeforeTool("ask", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
				if ev.Answer != nil {
					return nil, nil
				}
				mu.Lock()
				asked = append(asked, ev.ID)
				mu.Unlock()
				return hooks.Ask(tool.Request{Kind: tool.KindApproval, Prompt: "read?"}), nil
			})
			m := fixtureModel(t, p.provider, fixtureServer(t, p.provider, p.json, p.sse))
			a := newAgent(t, agent.Options{Model: m, Tools: agent.ToolList{read}, Hooks: h})
			res, err := a.Run(context.Background(), "read both")
			if err != nil || res.Status != agent.StatusPending || len(res.Pending) != 1 {
				t.Fatalf("status %s, pending %v, err %v", res.Status, res.Pending, err)
			}
			if len(asked) != 1 || asked[0] == p.cutID {
				t.Errorf("asked about %v, want only the complete call", asked)
			}
			res, err = a.Resume(context.Background(), res.State, tool.Answer{ID: res.Pending[0].ID, OK: true})
			check(t, res, err, read)
		})
	}
}

// finalText is a stream that answers with text and ends the run.
var finalText = map[string]string{
	"openai": `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Done."},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n",
	"anthropic": "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"Done.\"}}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
}

// Streams whose two tool calls a naive reader merges or drops run both
// calls, each with its own arguments and an id of its own: two calls on one
// index, one id for two calls, calls without ids, choices numbered by content
// block, indices from 1, and the Anthropic-compatible streams that send a
// tool's input in content_block_start, in both places, or after empty deltas.
func TestProviderFixturesBothCallsRun(t *testing.T) {
	for _, tc := range bothCallsFixtures {
		t.Run(tc.provider+"/"+strings.TrimSuffix(tc.file, ".sse"), func(t *testing.T) {
			read := &testkit.Counter{Name: "read_file"}
			m := fixtureModel(t, tc.provider, fixtureServer(t, tc.provider, nil, []string{tc.file, finalText[tc.provider]}))
			res, err := streamResult(newAgent(t, agent.Options{Model: m, Tools: agent.ToolList{read}}), "read both")
			if err != nil {
				t.Fatal(err)
			}
			got := read.Args()
			slices.Sort(got)
			if len(got) != 2 || !strings.Contains(got[0], `"a.txt"`) || !strings.Contains(got[1], `"b.txt"`) {
				t.Errorf("read_file ran with %q, want a.txt and b.txt once each", got)
			}
			if res.Status != agent.StatusDone || len(res.ToolCalls) != 2 || res.ToolCalls[0].ID == res.ToolCalls[1].ID || res.ToolCalls[0].ID == "" {
				t.Errorf("status %s, records %+v; want done and two calls with ids of their own", res.Status, res.ToolCalls)
			}
		})
	}
}

// bothCallsFixtures are the streams of TestProviderFixturesBothCallsRun.
var bothCallsFixtures = []struct{ provider, file string }{
	{"openai", "vllm_tool_calls.sse"},
	{"openai", "llamacpp_tool_calls.sse"},
	{"openai", "litellm_tool_calls.sse"},
	{"openai", "openrouter_tool_calls.sse"},
	{"openai", "azure_tool_calls.sse"},
	{"openai", "two_calls_one_index.sse"},
	{"openai", "repeated_ids.sse"},
	{"openai", "missing_ids.sse"},
	{"openai", "numeric_ids.sse"},
	{"openai", "one_chunk_no_index_no_id.sse"},
	{"openai", "llamacpp_object_arguments.sse"},
	{"openai", "ollama_tool_calls.sse"},
	{"openai", "litellm_choice_index.sse"},
	{"openai", "proxy_index_from_1.sse"},
	{"openai", "id_on_every_chunk.sse"},
	{"openai", "null_fields.sse"},
	{"anthropic", "input_in_block_start.sse"},
	{"anthropic", "input_both.sse"},
	{"anthropic", "input_start_empty_deltas.sse"},
	{"anthropic", "input_whole_delta.sse"},
	{"anthropic", "no_event_lines.sse"},
	{"anthropic", "bedrock_invocation_metrics.sse"},
	{"anthropic", "stream_json_message.json"},
}

// An error inside a 200 stream, in each server's shape, and a stream that
// just stops fail the run with a *model.ProviderError (the server's
// message, when it sent one), and no tool call in them runs.
func TestProviderFixturesFailTheRun(t *testing.T) {
	for _, tc := range failFixtures {
		t.Run(tc.provider+"/"+strings.TrimSuffix(tc.file, ".sse"), func(t *testing.T) {
			read := &testkit.Counter{Name: "read_file"}
			m := fixtureModel(t, tc.provider, fixtureServer(t, tc.provider, nil, []string{tc.file}))
			res, err := streamResult(newAgent(t, agent.Options{Model: m, Tools: agent.ToolList{read}}), "read both")
			var pe *model.ProviderError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("err = %v, want a *model.ProviderError with %q", err, tc.message)
			}
			if res == nil || res.Status != agent.StatusError {
				t.Errorf("result %+v, want status error", res)
			}
			if read.Count() != 0 {
				t.Errorf("read_file ran %d times, want none", read.Count())
			}
		})
	}
}

// failFixtures are the streams of TestProviderFixturesFailTheRun, with what
// the error must say.
var failFixtures = []struct{ provider, file, message string }{
	{"openai", "vllm_error.sse", "CUDA out of memory"},
	{"openai", "llamacpp_error.sse", "CUDA out of memory"},
	{"openai", "litellm_error.sse", "CUDA out of memory"},
	{"openai", "openrouter_error.sse", "Provider disconnected"},
	{"openai", "tgi_error.sse", "CUDA out of memory"},
	{"openai", "event_error.sse", "upstream timed out"},
	{"openai", "finish_error.sse", `finish_reason "error"`},
	{"openai", "stops_without_finish.sse", "ended before a finish_reason"},
	{"openai", "done_without_finish.sse", "ended before a finish_reason"},
	{"anthropic", "error_midway.sse", "Internal server error"},
	{"anthropic", "stops_without_message_stop.sse", "ended before message_stop"},
	{"anthropic", "event_error_text.sse", "upstream request timeout (gateway)"},
	{"anthropic", "stream_json_error.json", "Overloaded"},
}

// outputLimitFixtures are the files of TestProviderFixturesOutputLimit.
var outputLimitFixtures = []string{
	"openai/length_cut.json", "openai/length_text.json", "openai/length_cut.sse", "openai/length_text.sse",
	"anthropic/max_tokens_cut.json", "anthropic/max_tokens_text.json", "anthropic/max_tokens_cut.sse", "anthropic/max_tokens_text.sse",
}

// TestProviderFixturesAllRun: every recorded answer and stream of the
// providers' testdata/servers goes through the agent in one of the tests
// above, but those whose expected value is the provider's own to check.
func TestProviderFixturesAllRun(t *testing.T) {
	run := map[string]bool{}
	for _, f := range bothCallsFixtures {
		run[f.provider+"/"+f.file] = true
	}
	for _, f := range failFixtures {
		run[f.provider+"/"+f.file] = true
	}
	for _, f := range outputLimitFixtures {
		run[f] = true
	}
	providerOnly := map[string]string{
		"openai/split_characters.sse":        "paths other than a.txt and b.txt; model/openai TestSplitCharacters",
		"openai/split_text.sse":              "a text answer checked delta by delta; model/openai TestSplitText",
		"anthropic/split_characters.sse":     "paths other than a.txt and b.txt; model/anthropic TestSplitCharacters",
		"anthropic/split_text.sse":           "a text answer checked delta by delta; model/anthropic TestSplitText",
		"openai/tgi_object_arguments.json":   "a Generate answer; model/openai TestGenerateCutAtOutputLimit",
		"anthropic/input_in_block_start.sse": "", // listed: run above
	}
	for _, provider := range []string{"openai", "anthropic"} {
		files, err := filepath.Glob(filepath.Join("..", "model", provider, "testdata", "servers", "*"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s fixtures: %v", provider, err)
		}
		for _, f := range files {
			name := provider + "/" + filepath.Base(f)
			if !run[name] && providerOnly[name] == "" {
				t.Errorf("%s runs through no agent test", name)
			}
		}
	}
}
