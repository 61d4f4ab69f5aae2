package anthropic_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tollgate-dev/tollgate/internal/providertest"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/model/anthropic"
	"github.com/tollgate-dev/tollgate/model/modeltest"
)

// TestToolUseIDsUniqueAcrossTurns: the Messages API rejects a request in
// which two tool_use blocks share an id ("`tool_use` ids must be unique"),
// across turns as well. Servers that number their calls per turn (Kimi's
// "functions.read_file:0") repeat ids from one turn to the next, and ids
// outside the API's alphabet can map onto one; every repeat is renamed,
// with the result that answers it, and the request keeps every rule.
func TestToolUseIDsUniqueAcrossTurns(t *testing.T) {
	for _, tc := range []struct {
		name string
		msgs []model.Message
		// calls and results are the tool_use ids and the tool_use_ids of
		// the results, in the order the request has them.
		calls, results []string
	}{
		{name: "an id repeated in the next turn", msgs: []model.Message{
			model.User("read a then b"),
			model.Assistant("", call("functions.read_file:0", `{"path":"a.txt"}`)),
			model.ToolResult("functions.read_file:0", "read_file", "A", false),
			model.Assistant("", call("functions.read_file:0", `{"path":"b.txt"}`)),
			model.ToolResult("functions.read_file:0", "read_file", "B", false),
		}, calls: []string{"functions_read_file_0", "functions_read_file_0_2"}, results: []string{"functions_read_file_0", "functions_read_file_0_2"}},
		{name: "two ids that map onto one", msgs: []model.Message{
			model.User("read"),
			model.Assistant("", call("call.1", `{"path":"a.txt"}`), call("call_1", `{"path":"b.txt"}`)),
			model.ToolResult("call.1", "read_file", "A", false),
			model.ToolResult("call_1", "read_file", "B", false),
		}, calls: []string{"call_1", "call_1_2"}, results: []string{"call_1", "call_1_2"}},
		{name: "a suffix taken by a later call", msgs: []model.Message{
			model.User("read"),
			model.Assistant("", call("c", `{}`)), model.ToolResult("c", "read_file", "1", false),
			model.Assistant("", call("c", `{}`)), model.ToolResult("c", "read_file", "2", false),
			model.Assistant("", call("c_2", `{}`)), model.ToolResult("c_2", "read_file", "3", false),
		}, calls: []string{"c", "c_3", "c_2"}, results: []string{"c", "c_3", "c_2"}},
		{name: "empty ids in every turn, the last without its result", msgs: []model.Message{
			model.User("read"),
			model.Assistant("", call("", `{}`)), model.ToolResult("", "read_file", "1", false),
			model.Assistant("", call("", `{}`)),
		}, calls: []string{"toolu_", "toolu__2"}, results: []string{"toolu_", "toolu__2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := providertest.NewRecorder(t,
				providertest.Answer{Body: providertest.ReadFile(t, "response_tool_use.json")},
				providertest.Answer{Body: providertest.ReadFile(t, "stream_tool_use.sse")},
			)
			m := newModel(t, rec.URL(), nil)
			req := &model.Request{Model: "claude-test", Messages: tc.msgs}
			if _, err := m.Generate(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			if _, _, err := modeltest.Collect(m.Stream(context.Background(), req)); err != nil {
				t.Fatal(err)
			}
			for i := range 2 {
				if bad := messagesRuleViolations(rec.Body(i)); len(bad) > 0 {
					t.Errorf("request %d breaks the Messages API's rules:\n%s\nbody: %s", i, strings.Join(bad, "\n"), rec.Body(i))
				}
			}
			var b wireBody
			if err := json.Unmarshal(rec.Body(0), &b); err != nil {
				t.Fatal(err)
			}
			var calls, results []string
			for _, m := range b.Messages {
				for _, blk := range m.Content {
					switch blk.Type {
					case "tool_use":
						calls = append(calls, blk.ID)
					case "tool_result":
						results = append(results, blk.ToolUseID)
					}
				}
			}
			if diff := cmp.Diff(tc.calls, calls); diff != "" {
				t.Errorf("tool_use ids (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.results, results); diff != "" {
				t.Errorf("tool_result ids (-want +got):\n%s", diff)
			}
			// The transcript keeps its own ids.
			if got := tc.msgs[1].ToolCalls[0].ID; got != tc.msgs[2].ToolCallID {
				t.Errorf("the transcript's ids changed: %q", got)
			}
		})
	}
}

// TestBlankToolResultText: a tool result whose text is only whitespace
// ("text content blocks must contain non-whitespace text") is sent without
// content when it succeeded and with the provider's text when it failed.
func TestBlankToolResultText(t *testing.T) {
	rec := providertest.NewRecorder(t, providertest.Answer{Body: providertest.ReadFile(t, "response_tool_use.json")})
	req := &model.Request{Model: "claude-test", Messages: []model.Message{
		model.User("run both"),
		model.Assistant("", call("toolu_1", `{}`), call("toolu_2", `{}`)),
		model.ToolResult("toolu_1", "read_file", "\n", false),
		model.ToolResult("toolu_2", "read_file", " \t", true),
	}}
	if _, err := newModel(t, rec.URL(), nil).Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if bad := messagesRuleViolations(rec.Body(0)); len(bad) > 0 {
		t.Errorf("the request breaks the Messages API's rules:\n%s\nbody: %s", strings.Join(bad, "\n"), rec.Body(0))
	}
	var b wireBody
	if err := json.Unmarshal(rec.Body(0), &b); err != nil {
		t.Fatal(err)
	}
	r := b.Messages[2].Content
	if len(r) != 2 || len(r[0].Content) != 0 || r[0].IsError {
		t.Errorf("blank success = %+v, want a result without content", r[0])
	}
	if len(r) != 2 || !r[1].IsError || len(r[1].Content) != 1 || *r[1].Content[0].Text != "the tool call failed without a message" {
		t.Errorf("blank failure = %+v, want an error result with text", r[1])
	}
}

// TestTemperatureInRange: under an API version that takes sampling
// parameters, a temperature outside the API's 0 to 1 (OpenAI's range is 0
// to 2) is sent as the nearest bound, which the API accepts.
func TestTemperatureInRange(t *testing.T) {
	for _, tc := range []struct{ in, want float64 }{{1.5, 1}, {-0.2, 0}, {0.7, 0.7}} {
		rec := providertest.NewRecorder(t, providertest.Answer{Body: providertest.ReadFile(t, "response_tool_use.json")})
		m := newModel(t, rec.URL(), func(o *anthropic.Options) { o.APIVersion = "2023-06-01" })
		temp := tc.in
		if _, err := m.Generate(context.Background(), &model.Request{Model: "claude-test", Messages: []model.Message{model.User("hi")}, Temperature: &temp}); err != nil {
			t.Fatal(err)
		}
		var b struct{ Temperature *float64 }
		if err := json.Unmarshal(rec.Body(0), &b); err != nil || b.Temperature == nil || *b.Temperature != tc.want {
			t.Errorf("temperature %v sent as %v (%v), want %v", tc.in, b.Temperature, err, tc.want)
		}
		if temp != tc.in {
			t.Errorf("the request's temperature changed to %v", temp)
		}
	}
}

// TestToolUseWithoutName: a call that named no tool (it failed as an
// unknown tool) is replayed with a name, which the API requires.
func TestToolUseWithoutName(t *testing.T) {
	rec := providertest.NewRecorder(t, providertest.Answer{Body: providertest.ReadFile(t, "response_tool_use.json")})
	req := &model.Request{Model: "claude-test", Messages: []model.Message{
		model.User("read"),
		model.Assistant("", model.ToolCall{ID: "toolu_1", Arguments: json.RawMessage(`{}`)}),
		model.ToolResult("toolu_1", "", `unknown tool ""`, true),
	}}
	if _, err := newModel(t, rec.URL(), nil).Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if bad := messagesRuleViolations(rec.Body(0)); len(bad) > 0 {
		t.Errorf("the request breaks the Messages API's rules:\n%s\nbody: %s", strings.Join(bad, "\n"), rec.Body(0))
	}
	var b wireBody
	if err := json.Unmarshal(rec.Body(0), &b); err != nil {
		t.Fatal(err)
	}
	if got := b.Messages[1].Content[0].Name; got != "unnamed_tool" {
		t.Errorf("name = %q, want unnamed_tool", got)
	}
}
