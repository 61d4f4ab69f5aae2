package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/internal/toolcall"
	"github.com/tollgate-dev/tollgate/tool"
)

// elicitServer serves one tool, "ask", that asks the client for params (an
// input request of a multi round-trip call, SEP-2322, which the SDK turns
// into elicitation/create for clients of older protocol versions) and
// returns the client's response as JSON text.
func elicitServer(t *testing.T, params *mcp.ElicitParams) mcp.Transport {
	srv := newServer(nil)
	srv.AddTool(&mcp.Tool{Name: "ask", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r, ok := req.Params.InputResponses["q"]; ok {
			b, _ := json.Marshal(r)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": params}}, nil
	})
	return serve(t, srv)
}

// askOnce opens a server with elicitServer(params), calls "ask" and returns
// the server's view of the result and the requests the person was asked.
func askOnce(t *testing.T, params *mcp.ElicitParams, elicit tool.WaitFunc) (tool.Result, []tool.Request) {
	t.Helper()
	var mu sync.Mutex
	var asked []tool.Request
	var wrapped tool.WaitFunc
	if elicit != nil {
		wrapped = func(ctx context.Context, req tool.Request) (tool.Answer, error) {
			mu.Lock()
			asked = append(asked, req)
			mu.Unlock()
			return elicit(ctx, req)
		}
	}
	s := open(t, &Config{Servers: map[string]*ServerConfig{"srv": {Transport: elicitServer(t, params)}}}, &Options{Elicit: wrapped})
	res, err := toolsByName(s)["mcp__srv__ask"].Call(context.Background(), json.RawMessage(`{}`))
	if err != nil {
		res = tool.Error(err.Error())
	}
	mu.Lock()
	defer mu.Unlock()
	return res, asked
}

func form() *mcp.ElicitParams {
	return &mcp.ElicitParams{
		Message: "Which region?",
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"region": map[string]any{"type": "string", "enum": []string{"eu", "us"}, "default": "eu"},
				"count":  map[string]any{"type": "integer", "default": 3},
			},
		},
	}
}

// An elicitation is a question to a person: accepted with the person's
// content (and the schema's defaults for what they left out), declined, or
// cancelled when no answer comes (with nobody to ask, see
// TestElicitationHaltsAndIsAnsweredLater).
func TestElicitationAnsweredByAPerson(t *testing.T) {
	answer := func(a tool.Answer, err error) tool.WaitFunc {
		return func(_ context.Context, req tool.Request) (tool.Answer, error) {
			a.ID = req.ID
			return a, err
		}
	}
	cases := []struct {
		name   string
		elicit tool.WaitFunc
		want   string
		asked  int
	}{
		{"accepted", answer(tool.Answer{OK: true, Data: json.RawMessage(`{"region":"us"}`)}, nil), `{"action":"accept","content":{"count":3,"region":"us"}}`, 1},
		{"accepted with defaults", answer(tool.Answer{OK: true}, nil), `{"action":"accept","content":{"count":3,"region":"eu"}}`, 1},
		{"declined", answer(tool.Answer{OK: false, Reason: "no"}, nil), `{"action":"decline"}`, 1},
		{"cancelled", answer(tool.Answer{}, errors.New("nobody answered")), `{"action":"cancel"}`, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, asked := askOnce(t, form(), c.elicit)
			if res.IsError || res.Output != c.want {
				t.Errorf("server saw %q (isError %v), want %s", res.Output, res.IsError, c.want)
			}
			if len(asked) != c.asked {
				t.Fatalf("asked %d times, want %d", len(asked), c.asked)
			}
			if c.asked == 0 {
				return
			}
			req := asked[0]
			d, err := ParseElicitData(req)
			if err != nil {
				t.Fatal(err)
			}
			if req.Kind != tool.KindInput || !strings.Contains(req.Prompt, `"srv" asks: Which region?`) || d.Server != "srv" || d.Mode != "form" {
				t.Errorf("request %+v, data %+v", req, d)
			}
			var schema map[string]any
			if err := json.Unmarshal(d.RequestedSchema, &schema); err != nil || schema["properties"] == nil {
				t.Errorf("schema %s: %v", d.RequestedSchema, err)
			}
		})
	}
}

// An answer that does not fit the form, or is not an object, or is too big,
// never reaches the server as accepted.
func TestElicitationBadAnswers(t *testing.T) {
	for name, data := range map[string]string{
		"wrong type":   `{"count":"many"}`,
		"not in enum":  `{"region":"mars"}`,
		"not object":   `["us"]`,
		"over the cap": `{"region":"` + strings.Repeat("x", maxElicitAnswerBytes) + `"}`,
	} {
		t.Run(name, func(t *testing.T) {
			res, _ := askOnce(t, form(), func(_ context.Context, req tool.Request) (tool.Answer, error) {
				return tool.Answer{ID: req.ID, OK: true, Data: json.RawMessage(data)}, nil
			})
			if !res.IsError || strings.Contains(res.Output, "accept") {
				t.Errorf("server saw %q, want an error", res.Output)
			}
		})
	}
}

// Form mode never asks a person for a secret, and a request over the limits
// is refused: neither reaches the person.
func TestElicitationRefused(t *testing.T) {
	big := form()
	big.Message = strings.Repeat("m", maxElicitMessageBytes+1)
	many := map[string]any{}
	for i := range maxElicitFields + 1 {
		many[strings.Repeat("f", i+1)] = map[string]any{"type": "string"}
	}
	cases := map[string]*mcp.ElicitParams{
		"long message":    big,
		"too many fields": {Message: "x", RequestedSchema: map[string]any{"type": "object", "properties": many}},
		"url not http":    {Mode: "url", Message: "go", URL: "javascript:alert(1)", ElicitationID: "e1"},
	}
	for name, p := range cases {
		t.Run(name, func(t *testing.T) {
			res, asked := askOnce(t, p, func(_ context.Context, req tool.Request) (tool.Answer, error) {
				return tool.Answer{ID: req.ID, OK: true}, nil
			})
			if !res.IsError || len(asked) != 0 {
				t.Errorf("server saw %q (isError %v), person asked %d times; want refused before asking", res.Output, res.IsError, len(asked))
			}
		})
	}
}

// A form that asks for a secret, in its message, a field's name, title or
// description, its choices' titles or its defaults, however spelled, is
// declined without asking the person, with a reason the call's notice
// (the person) and record see.
func TestElicitationSecretDeclined(t *testing.T) {
	field := func(name string, schema map[string]any) *mcp.ElicitParams {
		schema["type"] = "string"
		return &mcp.ElicitParams{Message: "x", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{name: schema}}}
	}
	cases := map[string]*mcp.ElicitParams{
		"password field":    field("password", map[string]any{}),
		"api key title":     field("k", map[string]any{"title": "Your API key"}),
		"pass_word field":   field("Pass_Word", map[string]any{}),
		"pin description":   field("card", map[string]any{"description": "Your PIN"}),
		"pat title":         field("value", map[string]any{"title": "GitHub PAT"}),
		"passwort":          field("passwort", map[string]any{}),
		"pwd":               field("pwd", map[string]any{}),
		"ssh_key":           field("ssh_key", map[string]any{}),
		"seed_phrase":       field("seed_phrase", map[string]any{}),
		"verification_code": field("verification_code", map[string]any{}),
		"cyrillic a":        field("p\u0430ssword", map[string]any{}),
		"pass-code title":   field("c", map[string]any{"title": "Pass-code"}),
		"enumNames":         field("how", map[string]any{"enum": []string{"a", "b"}, "enumNames": []string{"Your password", "Other"}}),
		"oneOf title":       field("how", map[string]any{"oneOf": []any{map[string]any{"const": "a", "title": "Enter password"}}}),
		"default":           field("note", map[string]any{"default": "type your password here"}),
		"enum value":        field("how", map[string]any{"enum": []string{"my password", "other"}}),
		"oneOf const":       field("how", map[string]any{"oneOf": []any{map[string]any{"const": "your API key", "title": "First"}}}),
		"message":           {Message: "Please paste your GitHub personal access token", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"value": map[string]any{"type": "string"}}}},
	}
	for name, p := range cases {
		t.Run(name, func(t *testing.T) {
			s := open(t, &Config{Servers: map[string]*ServerConfig{"srv": {Transport: elicitServer(t, p)}}}, &Options{
				Elicit: func(_ context.Context, req tool.Request) (tool.Answer, error) {
					t.Errorf("the person was asked: %s", req.Prompt)
					return tool.Answer{ID: req.ID, OK: true, Data: json.RawMessage(`{"value":"ghp_SECRET"}`)}, nil
				}})
			rec := &noticeRecorder{}
			res, err := toolsByName(s)["mcp__srv__ask"].Call(toolcall.WithReporter(context.Background(), rec), json.RawMessage(`{}`))
			if err != nil || res.Output != `{"action":"decline"}` {
				t.Errorf("server saw %q, %v; want a decline", res.Output, err)
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if len(rec.notices) != 1 || !strings.Contains(rec.notices[0].Message, "decline (runtime: the form asks for a secret") {
				t.Errorf("notices %+v", rec.notices)
			}
			var recs []elicitationRecord
			if b, _ := json.Marshal(res.Metadata[metaElicitations]); json.Unmarshal(b, &recs) != nil || len(recs) != 1 ||
				recs[0].Outcome != "decline" || recs[0].By != "runtime" || !strings.Contains(recs[0].Reason, "asks for a secret") {
				t.Errorf("record %+v (meta %v)", recs, res.Metadata)
			}
		})
	}
}

// A server's elicitation handed on to a host's own client (Forward, the
// gateway's) passes the same checks first: a form asking for a secret and
// a URL that is not http(s) never reach the client; a plain form does.
func TestForwardedElicitationIsScreened(t *testing.T) {
	for name, c := range map[string]struct {
		p        *mcp.ElicitParams
		reaches  bool
		response string
	}{
		"secret form": {&mcp.ElicitParams{Message: "Please paste your GitHub personal access token", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"value": map[string]any{"type": "string"}}}}, false, `{"action":"decline"}`},
		"script url":  {&mcp.ElicitParams{Mode: "url", Message: "open", URL: "javascript:alert(1)", ElicitationID: "e1"}, false, ""},
		"plain form":  {&mcp.ElicitParams{Message: "Which region?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"region": map[string]any{"type": "string"}}}}, true, `{"action":"accept"`},
	} {
		t.Run(name, func(t *testing.T) {
			reached := 0
			s := open(t, &Config{Servers: map[string]*ServerConfig{"srv": {Transport: elicitServer(t, c.p)}}}, &Options{
				Forward: &Forward{Elicit: func(_ context.Context, _ string, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					reached++
					return &mcp.ElicitResult{Action: elicitAccept, Content: map[string]any{"region": "eu"}}, nil
				}}})
			res, _ := toolsByName(s)["mcp__srv__ask"].Call(context.Background(), json.RawMessage(`{}`))
			if (reached > 0) != c.reaches {
				t.Errorf("the client was reached %d times, want reached %v", reached, c.reaches)
			}
			if c.response != "" && !strings.HasPrefix(res.Output, c.response) {
				t.Errorf("server saw %q, want %s…", res.Output, c.response)
			}
		})
	}
}

// URL mode is shown as a link to open; accepting sends no content.
func TestElicitationURLMode(t *testing.T) {
	p := &mcp.ElicitParams{Mode: "url", Message: "Connect your account", URL: "https://example.com/connect?x=1", ElicitationID: "e1"}
	res, asked := askOnce(t, p, func(_ context.Context, req tool.Request) (tool.Answer, error) {
		return tool.Answer{ID: req.ID, OK: true, Data: json.RawMessage(`{"ignored":true}`)}, nil
	})
	if res.Output != `{"action":"accept"}` {
		t.Errorf("server saw %q", res.Output)
	}
	if len(asked) != 1 {
		t.Fatalf("asked %d times", len(asked))
	}
	want := tool.Request{Kind: tool.KindAuthorization, URL: "https://example.com/connect?x=1"}
	got := tool.Request{Kind: asked[0].Kind, URL: asked[0].URL}
	if d := cmp.Diff(want, got); d != "" || !strings.Contains(asked[0].Prompt, "open https://example.com/connect") {
		t.Errorf("request (-want +got):\n%s\nprompt %q", d, asked[0].Prompt)
	}
}

// The checks of a server's form and of a person's answer never panic, and
// an accepted answer is always an object within the limit.
// Field names that do not ask for secrets pass; those that do are found
// whatever their case, separators, language, compatibility forms,
// invisible characters or look-alike letters.
func TestAsksSecret(t *testing.T) {
	for s, want := range map[string]bool{
		"password": true, "Pass_Word": true, "API-Key": true, "client secret": true, "PIN": true, "one-time OTP": true,
		"pat": true, "GitHub PAT": true, "githubPAT": true, "passwort": true, "pwd": true, "ssh_key": true, "seed_phrase": true,
		"verification_code": true, "p\u0430ssword": true, "Pass-code": true, "mot de passe": true, "contraseña": true,
		"Contrasen\u0303a": true, "ｐａｓｓｗｏｒｄ": true, "pass\u200bword": true, "2FA code": true, "MFA": true, "recovery phrase": true,
		"mnemonic": true, "credit card": true, "CVV": true, "SSN": true, "Private Key": true, "personal access token": true,
		"\u0440\u0430ss\u0441\u043ede": true,
		"shipping address":             false, "region": false, "spinner speed": false, "opinion": false, "name": false,
		"path": false, "value": false, "patch": false, "count": false, "keyboard layout": false,
	} {
		if got := asksSecret(s); got != want {
			t.Errorf("asksSecret(%q) = %v, want %v", s, got, want)
		}
	}
}

func FuzzElicitChecks(f *testing.F) {
	f.Add([]byte(`{"type":"object","properties":{"region":{"type":"string","title":"Region"}}}`), []byte(`{"region":"eu"}`))
	f.Add([]byte(`{"properties":{"password":{}}}`), []byte(`null`))
	f.Add([]byte(`[]`), []byte(`"x"`))
	f.Fuzz(func(t *testing.T, schema, answer []byte) {
		_ = checkFormSchema(schema)
		_ = formSecret(string(answer), schema)
		content, err := elicitContent(answer)
		if err == nil && (content == nil || len(answer) > maxElicitAnswerBytes) {
			t.Fatalf("elicitContent(%q) = %v", answer, content)
		}
	})
}

// noticeRecorder is a tool.Reporter that keeps the notices.
type noticeRecorder struct {
	mu      sync.Mutex
	notices []tool.Notice
}

func (r *noticeRecorder) Progress(tool.Progress) {}
func (r *noticeRecorder) Notice(n tool.Notice) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notices = append(r.notices, n)
}

// An elicitation is a notice of the call during which the server asked
// (an event in the run's log and records), saying what became of it but
// never the answer.
func TestElicitationNotice(t *testing.T) {
	for _, c := range []struct {
		params *mcp.ElicitParams
		ok     bool
		want   string
	}{
		{form(), true, "the server asked the person for input (form mode): accept"},
		{form(), false, "the server asked the person for input (form mode): decline"},
		{&mcp.ElicitParams{Message: "log in", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"password": map[string]any{"type": "string"}}}}, true,
			`the server asked the person for input (form mode): decline (runtime: the form asks for a secret (field "password" names "password"), which form mode must not (MCP specification, Elicitation: security considerations); use URL mode)`},
		{&mcp.ElicitParams{Message: strings.Repeat("m", maxElicitMessageBytes+1), RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "string"}}}}, true, "the server asked the person for input (form mode): refused"},
	} {
		s := open(t, &Config{Servers: map[string]*ServerConfig{"srv": {Transport: elicitServer(t, c.params)}}}, &Options{
			Elicit: func(_ context.Context, req tool.Request) (tool.Answer, error) {
				return tool.Answer{ID: req.ID, OK: c.ok, Data: json.RawMessage(`{"region":"us"}`)}, nil
			}})
		rec := &noticeRecorder{}
		_, _ = toolsByName(s)["mcp__srv__ask"].Call(toolcall.WithReporter(context.Background(), rec), json.RawMessage(`{}`))
		rec.mu.Lock()
		want := []tool.Notice{{Kind: "elicitation", Source: "mcp:srv", Message: c.want}}
		if d := cmp.Diff(want, rec.notices); d != "" {
			t.Errorf("notices (-want +got):\n%s", d)
		}
		rec.mu.Unlock()
	}
}
