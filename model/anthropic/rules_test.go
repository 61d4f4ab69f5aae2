package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tollgate-dev/tollgate/internal/providertest"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/model/anthropic"
	"github.com/tollgate-dev/tollgate/model/modeltest"
)

// wireBody is a Messages API request as the rule checks read it.
type wireBody struct {
	MaxTokens int `json:"max_tokens"`
	Messages  []struct {
		Role    string      `json:"role"`
		Content []ruleBlock `json:"content"`
	} `json:"messages"`
	System []ruleBlock `json:"system"`
	Tools  []struct {
		Name        string                     `json:"name"`
		InputSchema map[string]json.RawMessage `json:"input_schema"`
	} `json:"tools"`
}

type ruleBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
	Content   []ruleBlock     `json:"content"`
}

var (
	idPattern   = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)
	namePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)
)

// messagesRuleViolations returns every rule of the Messages API the request
// body breaks (the list in the package's source), or nil.
func messagesRuleViolations(raw []byte) []string {
	var b wireBody
	if err := json.Unmarshal(raw, &b); err != nil {
		return []string{"body does not decode: " + err.Error()}
	}
	var bad []string
	badf := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	// Rule 1.
	if len(b.Messages) == 0 {
		badf("rule 1: no messages")
	}
	for i, m := range b.Messages {
		want := "user"
		if i%2 == 1 {
			want = "assistant"
		}
		if m.Role != want {
			badf("rule 1: message %d has role %s, want %s", i, m.Role, want)
		}
		if len(m.Content) == 0 {
			badf("rule 1: message %d has no content", i)
		}
	}
	for i, m := range b.Messages {
		var calls []string
		if i > 0 && m.Role == "user" {
			for _, blk := range b.Messages[i-1].Content {
				if blk.Type == "tool_use" {
					calls = append(calls, blk.ID)
				}
			}
		}
		answered := map[string]bool{}
		seenOther := false
		for j, blk := range m.Content {
			where := fmt.Sprintf("message %d block %d", i, j)
			switch blk.Type {
			case "text":
				// Rule 2.
				if blk.Text == nil || strings.TrimSpace(*blk.Text) == "" {
					badf("rule 2: %s: blank text", where)
				}
				seenOther = true
			case "tool_use":
				// Rules 3 and 4.
				var obj map[string]any
				if json.Unmarshal(blk.Input, &obj) != nil || obj == nil {
					badf("rule 3: %s: input %s is not an object", where, blk.Input)
				}
				if !idPattern.MatchString(blk.ID) {
					badf("rule 4: %s: id %q", where, blk.ID)
				}
				if blk.Name == "" {
					badf("rule 12: %s: tool_use without a name", where)
				}
				seenOther = true
			case "tool_result":
				// Rules 5, 6, 7.
				if !idPattern.MatchString(blk.ToolUseID) {
					badf("rule 4: %s: tool_use_id %q", where, blk.ToolUseID)
				}
				if !contains(calls, blk.ToolUseID) || answered[blk.ToolUseID] {
					badf("rule 5: %s: result for %q answers no call of the turn before", where, blk.ToolUseID)
				}
				answered[blk.ToolUseID] = true
				if seenOther {
					badf("rule 6: %s: tool_result after another block", where)
				}
				if blk.IsError && len(blk.Content) == 0 {
					badf("rule 7: %s: error result without content", where)
				}
				for _, c := range blk.Content {
					if c.Type == "text" && (c.Text == nil || strings.TrimSpace(*c.Text) == "") {
						badf("rule 2: %s: blank text in a result", where)
					}
				}
			}
		}
		for _, id := range calls {
			if !answered[id] {
				badf("rule 5: message %d: no result for call %q", i, id)
			}
		}
	}
	if n := len(b.Messages); n > 0 && b.Messages[n-1].Role == "assistant" {
		if c := b.Messages[n-1].Content; len(c) > 0 && c[len(c)-1].Text != nil {
			t := *c[len(c)-1].Text
			if strings.TrimRightFunc(t, unicode.IsSpace) != t {
				badf("rule 2: the final assistant text %q ends with whitespace", t)
			}
		}
		for _, blk := range b.Messages[n-1].Content {
			if blk.Type == "tool_use" {
				badf("rule 5: the request ends on tool call %q without its result", blk.ID)
			}
		}
	}
	for _, s := range b.System {
		if s.Text == nil || strings.TrimSpace(*s.Text) == "" {
			badf("rule 2: blank system text")
		}
	}
	// Rule 10.
	ids := map[string]bool{}
	for i, m := range b.Messages {
		for j, blk := range m.Content {
			if blk.Type == "tool_use" {
				if ids[blk.ID] {
					badf("rule 10: message %d block %d: tool_use id %q is not unique", i, j, blk.ID)
				}
				ids[blk.ID] = true
			}
		}
	}
	// Rule 8.
	names := map[string]bool{}
	for i, t := range b.Tools {
		if !namePattern.MatchString(t.Name) || names[t.Name] {
			badf("rule 8: tool %d name %q", i, t.Name)
		}
		names[t.Name] = true
		if string(t.InputSchema["type"]) != `"object"` {
			badf("rule 8: tool %d input_schema type %s", i, t.InputSchema["type"])
		}
	}
	// Rule 9.
	if b.MaxTokens < 1 {
		badf("rule 9: max_tokens %d", b.MaxTokens)
	}
	return bad
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func call(id, args string) model.ToolCall {
	return model.ToolCall{ID: id, Name: "read_file", Arguments: json.RawMessage(args)}
}

// TestRequestsValidByConstruction sends transcripts that break each rule of
// the Messages API if translated naively, through Generate and Stream, and
// checks that every request body keeps all the rules, and what each case
// became.
func TestRequestsValidByConstruction(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  *model.Request
		// check, if set, looks at the decoded body.
		check func(t *testing.T, b wireBody)
	}{
		{name: "rule 3: cut-off arguments kept as a JSON string", req: &model.Request{Messages: []model.Message{
			model.User("read"), model.Assistant("", call("toolu_1", `"{\"path\":\"b.t"`)), model.ToolResult("toolu_1", "read_file", "cut off", true),
		}}, check: func(t *testing.T, b wireBody) {
			if got := string(b.Messages[1].Content[0].Input); got != "{}" {
				t.Errorf("input = %s, want {}", got)
			}
		}},
		{name: "rule 3: array and empty arguments", req: &model.Request{Messages: []model.Message{
			model.User("read"), model.Assistant("", call("toolu_1", `[]`), call("toolu_2", ``), call("toolu_3", `  {"a":1} `)),
			model.ToolResult("toolu_1", "read_file", "x", false), model.ToolResult("toolu_2", "read_file", "y", false), model.ToolResult("toolu_3", "read_file", "z", false),
		}}, check: func(t *testing.T, b wireBody) {
			var got []string
			for _, blk := range b.Messages[1].Content {
				got = append(got, string(blk.Input))
			}
			if diff := cmp.Diff([]string{"{}", "{}", `{"a":1}`}, got); diff != "" {
				t.Errorf("inputs (-want +got):\n%s", diff)
			}
		}},
		{name: "rule 7: a deny with an empty reason", req: &model.Request{Messages: []model.Message{
			model.User("read"), model.Assistant("", call("toolu_1", `{}`)), model.ToolResult("toolu_1", "read_file", "", true),
		}}, check: func(t *testing.T, b wireBody) {
			r := b.Messages[2].Content[0]
			if !r.IsError || len(r.Content) != 1 || *r.Content[0].Text != "the tool call failed without a message" {
				t.Errorf("result = %+v, want an error with text", r)
			}
		}},
		{name: "rule 7: a whitespace-only error text", req: &model.Request{Messages: []model.Message{
			model.User("read"), model.Assistant("", call("toolu_1", `{}`)), model.ToolResult("toolu_1", "read_file", " \n", true),
		}}},
		{name: "rule 1: the transcript starts with the assistant", req: &model.Request{Messages: []model.Message{
			model.System("be brief"), model.Assistant("Hello."), model.User("hi"),
		}}, check: func(t *testing.T, b wireBody) {
			if len(b.Messages) != 3 || *b.Messages[0].Content[0].Text != "(continue)" {
				t.Errorf("messages = %+v, want a short user turn first", b.Messages)
			}
		}},
		{name: "rule 1: consecutive messages of one role merge", req: &model.Request{Messages: []model.Message{
			model.User("a"), model.User("b"), model.Assistant("c"), model.Assistant("d"), model.User("e"),
		}}, check: func(t *testing.T, b wireBody) {
			if len(b.Messages) != 3 || len(b.Messages[0].Content) != 2 || len(b.Messages[1].Content) != 2 {
				t.Errorf("messages = %+v, want 3 merged turns", b.Messages)
			}
		}},
		{name: "rule 2: blank user, assistant and system text left out", req: &model.Request{Messages: []model.Message{
			model.System("  "), model.User("hi"), model.Assistant(" \t"), model.User("\n"), model.Assistant("ok"), model.User("go on"),
		}}, check: func(t *testing.T, b wireBody) {
			if len(b.Messages) != 3 || len(b.System) != 0 {
				t.Errorf("messages = %+v, system = %+v", b.Messages, b.System)
			}
		}},
		{name: "rule 2: the final assistant text loses its trailing whitespace", req: &model.Request{Messages: []model.Message{
			model.User("hi"), model.Assistant("The answer is \n"),
		}}, check: func(t *testing.T, b wireBody) {
			if got := *b.Messages[1].Content[0].Text; got != "The answer is" {
				t.Errorf("final text = %q", got)
			}
		}},
		{name: "rule 4: ids outside the alphabet", req: &model.Request{Messages: []model.Message{
			model.User("read"), model.Assistant("", call("functions.read_file:0", `{}`)), model.ToolResult("functions.read_file:0", "read_file", "x", false),
		}}, check: func(t *testing.T, b wireBody) {
			if b.Messages[1].Content[0].ID != "functions_read_file_0" || b.Messages[2].Content[0].ToolUseID != "functions_read_file_0" {
				t.Errorf("ids = %q, %q", b.Messages[1].Content[0].ID, b.Messages[2].Content[0].ToolUseID)
			}
		}},
		{name: "rule 5: a call without a result", req: &model.Request{Messages: []model.Message{
			model.User("read"), model.Assistant("", call("toolu_1", `{}`), call("toolu_2", `{}`)), model.ToolResult("toolu_2", "read_file", "y", false), model.User("and?"),
		}}, check: func(t *testing.T, b wireBody) {
			c := b.Messages[2].Content
			if len(c) != 3 || c[0].ToolUseID != "toolu_1" || !c[0].IsError || c[1].ToolUseID != "toolu_2" || c[2].Type != "text" {
				t.Errorf("user turn = %+v, want the missing result, the result, the text", c)
			}
		}},
		{name: "rule 5: the transcript ends on tool calls", req: &model.Request{Messages: []model.Message{
			model.User("read"), model.Assistant("", call("toolu_1", `{}`)),
		}}},
		{name: "rule 5: a result that answers no call", req: &model.Request{Messages: []model.Message{
			model.ToolResult("toolu_9", "read_file", "stray", false), model.User("read"), model.Assistant("", call("toolu_1", `{}`)),
			model.ToolResult("toolu_1", "read_file", "x", false), model.ToolResult("toolu_1", "read_file", "again", false),
		}}, check: func(t *testing.T, b wireBody) {
			if got := *b.Messages[0].Content[0].Text; got != "result of tool call toolu_9: stray" {
				t.Errorf("stray result = %q", got)
			}
		}},
		{name: "rule 6: user text before the results in one turn", req: &model.Request{Messages: []model.Message{
			model.User("read"), model.Assistant("", call("toolu_1", `{}`)), model.User("also this"), model.ToolResult("toolu_1", "read_file", "x", false),
		}}, check: func(t *testing.T, b wireBody) {
			if c := b.Messages[2].Content; c[0].Type != "tool_result" || c[1].Type != "text" {
				t.Errorf("user turn = %+v, want the result first", c)
			}
		}},
		{name: "rule 8: a schema without a type", req: &model.Request{Messages: []model.Message{model.User("hi")},
			Tools: []model.ToolDef{{Name: "t", InputSchema: json.RawMessage(`{"properties":{"a":{"type":"string"}}}`)}, {Name: "u"}}}},
		{name: "rule 9: a negative MaxTokens", req: &model.Request{MaxTokens: -3, Messages: []model.Message{model.User("hi")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := providertest.NewRecorder(t,
				providertest.Answer{Body: providertest.ReadFile(t, "response_tool_use.json")},
				providertest.Answer{Body: providertest.ReadFile(t, "stream_tool_use.sse")},
			)
			m := newModel(t, rec.URL(), nil)
			tc.req.Model = "claude-test"
			if _, err := m.Generate(context.Background(), tc.req); err != nil {
				t.Fatal(err)
			}
			if _, _, err := modeltest.Collect(m.Stream(context.Background(), tc.req)); err != nil {
				t.Fatal(err)
			}
			for i := range 2 {
				if bad := messagesRuleViolations(rec.Body(i)); len(bad) > 0 {
					t.Errorf("request %d breaks the Messages API's rules:\n%s\nbody: %s", i, strings.Join(bad, "\n"), rec.Body(i))
				}
			}
			if tc.check != nil {
				var b wireBody
				if err := json.Unmarshal(rec.Body(0), &b); err != nil {
					t.Fatal(err)
				}
				tc.check(t, b)
			}
		})
	}
}

// TestRequestsRejectedLocally: what no translation can make valid fails
// before anything is sent, with an error that names the problem.
func TestRequestsRejectedLocally(t *testing.T) {
	rec := providertest.NewRecorder(t, providertest.Answer{Body: providertest.ReadFile(t, "response_tool_use.json")})
	m := newModel(t, rec.URL(), nil)
	for _, tc := range []struct {
		req  *model.Request
		want string
	}{
		{&model.Request{Messages: []model.Message{model.System("only a system prompt"), model.User(" ")}}, "no user or assistant content"},
		{&model.Request{Messages: []model.Message{model.User("hi")}, Tools: []model.ToolDef{{Name: "fs.read"}}}, `tool 0: name "fs.read" must be`},
		{&model.Request{Messages: []model.Message{model.User("hi")}, Tools: []model.ToolDef{{Name: ""}}}, `tool 0: name "" must be`},
		{&model.Request{Messages: []model.Message{model.User("hi")}, Tools: []model.ToolDef{{Name: strings.Repeat("a", 129)}}}, "must be 1 to 128"},
		{&model.Request{Messages: []model.Message{model.User("hi")}, Tools: []model.ToolDef{{Name: "a"}, {Name: "a"}}}, `tool 1: name "a" is used by an earlier tool`},
		{&model.Request{Messages: []model.Message{model.User("hi")}, Tools: []model.ToolDef{{Name: "a", InputSchema: json.RawMessage(`{"type":"string"}`)}}}, `input schema has type "string"`},
	} {
		tc.req.Model = "claude-test"
		_, err := m.Generate(context.Background(), tc.req)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v, want it to say %q", err, tc.want)
		}
		var pe *model.ProviderError
		if errors.As(err, &pe) {
			t.Errorf("err = %v: a request error, not a provider's", err)
		}
	}
	if rec.Calls() != 0 {
		t.Errorf("%d requests sent, want none", rec.Calls())
	}
}

// TestServerStreams runs the stream shapes of Anthropic-compatible servers
// under testdata/servers through Stream: where a tool's input arrives (whole
// in content_block_start, as Kimi's and some gateways' endpoints send it, or
// in one input_json_delta after an empty one, as DeepSeek's does), a cut at
// max_tokens, an error event, and a stream that just stops.
func TestServerStreams(t *testing.T) {
	usage := model.Usage{InputTokens: 120, OutputTokens: 31, TotalTokens: 151}
	for _, tc := range []struct {
		file    string
		want    *model.Response
		errText string
	}{
		{file: "input_in_block_start.sse", want: &model.Response{Message: model.Assistant("",
			call("functions.read_file:0", `{"path":"a.txt"}`), call("functions.read_file:1", `{"path":"b.txt"}`),
		), Usage: usage, FinishReason: model.FinishToolCalls, Model: "kimi-k2"}},
		{file: "input_whole_delta.sse", want: &model.Response{Message: model.Assistant("Reading both.",
			call("call_00_a", `{"path":"a.txt"}`), call("call_01_b", `{"path":"b.txt"}`),
		), Usage: usage, FinishReason: model.FinishToolCalls, Model: "deepseek-chat"}},
		{file: "max_tokens_cut.sse", want: &model.Response{Message: model.Assistant("",
			call("toolu_a", `{"path":"a.txt"}`), call("toolu_b", `"{\"path\":\"b.t"`),
		), Usage: usage, FinishReason: model.FinishLength, Model: "claude-sonnet-4-5"}},
		{file: "error_midway.sse", errText: "anthropic: api_error: Internal server error"},
		{file: "stops_without_message_stop.sse", errText: "stream ended before message_stop"},
	} {
		t.Run(strings.TrimSuffix(tc.file, ".sse"), func(t *testing.T) {
			rec := providertest.NewRecorder(t, providertest.Answer{Body: providertest.ReadFile(t, "servers/"+tc.file)})
			deltas, final, err := modeltest.Collect(newModel(t, rec.URL(), nil).Stream(context.Background(), canonical()))
			if tc.errText != "" {
				var pe *model.ProviderError
				if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.errText) || final != nil {
					t.Fatalf("err = %v, final = %v; want only a *model.ProviderError containing %q", err, final, tc.errText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, final, cmpopts.IgnoreFields(model.Response{}, "Raw")); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			if got := strings.Join(deltas, ""); got != tc.want.Message.Content {
				t.Errorf("deltas %q, want %q", got, tc.want.Message.Content)
			}
		})
	}
}

// TestTimeout: a server that never answers is given up on after
// Options.Timeout, on Generate and Stream, with an error that says so.
func TestTimeout(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) }) // runs first: lets the handlers return
	m := newModel(t, srv.URL, func(o *anthropic.Options) { o.Timeout = 50 * time.Millisecond; o.MaxRetries = -1 })
	_, err := m.Generate(context.Background(), canonical())
	_, _, err2 := modeltest.Collect(m.Stream(context.Background(), canonical()))
	for _, err := range []error{err, err2} {
		var pe *model.ProviderError
		if !errors.As(err, &pe) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timeout of 50ms") {
			t.Errorf("err = %v, want a ProviderError naming the timeout", err)
		}
	}
}

// TestKeyNeverOverPlainHTTP: a key is refused for a plain http URL to a host
// that is not loopback.
func TestKeyNeverOverPlainHTTP(t *testing.T) {
	_, err := anthropic.New(&anthropic.Options{BaseURL: "http://gpu-box.lan:8000", APIKey: testKey})
	if err == nil || !strings.Contains(err.Error(), "refusing to send an API key over plain http") || strings.Contains(err.Error(), testKey) {
		t.Errorf("err = %v", err)
	}
	if _, err := anthropic.New(&anthropic.Options{BaseURL: "http://gpu-box.lan:8000"}); err != nil {
		t.Errorf("no key: err = %v", err)
	}
}
