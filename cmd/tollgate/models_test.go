package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/internal/providertest"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/sqlite"
)

const cliKey = "sk-cli-SECRET-0123456789abcdef"

// readThenAnswer is a conversation: read notes.txt, then answer.
var readThenAnswer = []providertest.Turn{
	{Text: "Let me read the notes.", Calls: []providertest.Call{{ID: "call_read1", Name: "read", Args: `{"path":"notes.txt"}`}}},
	{Text: "The notes say: buy milk."},
}

func cliWorkdir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("buy milk\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// withoutKeys is an environment for the command without the providers' keys,
// so that the machine's own keys play no part, with the variables of kv
// (name, value, ...) set.
func withoutKeys(kv ...string) map[string]string {
	env := map[string]string{"OPENAI_API_KEY": "", "OPENROUTER_API_KEY": "", "ANTHROPIC_API_KEY": ""}
	for i := 0; i+1 < len(kv); i += 2 {
		env[kv[i]] = kv[i+1]
	}
	return env
}

func TestRunOpenAIStreamsToTerminal(t *testing.T) {
	t.Parallel()
	env := withoutKeys()
	srv := providertest.NewLLMServer(t, readThenAnswer...)
	code, out, errOut := tgMainIn(t, "", env, "run", "--model", "openai:gpt-test-1", "--base-url", srv.URL+"/v1",
		"--api-key", cliKey, "--workdir", cliWorkdir(t), "read my notes")
	if code != exitDone {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	// The tool call (assembled from its split arguments), its result (a
	// call nothing objected to has no decision line), and the streamed text
	// of both turns, in that order.
	if strings.Contains(out, "allowed by runtime:default") {
		t.Errorf("a call nothing objected to has a decision line:\n%s", out)
	}
	want := []string{
		"Let me read the notes.",
		`-> read {"path":"notes.txt"}  [call_read1]`,
		"<- ok",
		"buy milk",
		"The notes say: buy milk.",
	}
	rest := out
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("stdout lacks %q after the earlier lines:\n%s", w, out)
		}
		rest = rest[i+len(w):]
	}
	hdrs, bodies, _ := srv.Requests()
	if len(bodies) != 2 {
		t.Fatalf("server got %d requests, want 2", len(bodies))
	}
	for i, h := range hdrs {
		if got := h.Get("Authorization"); got != "Bearer "+cliKey {
			t.Errorf("request %d: Authorization = %q, want the --api-key", i, got)
		}
		if bodies[i]["model"] != "gpt-test-1" || bodies[i]["stream"] != true {
			t.Errorf("request %d: model %v, stream %v; want gpt-test-1 streamed", i, bodies[i]["model"], bodies[i]["stream"])
		}
	}
	// The second request carries the tool result under the call's ID.
	msgs, _ := bodies[1]["messages"].([]any)
	last, _ := msgs[len(msgs)-1].(map[string]any)
	if last["role"] != "tool" || last["tool_call_id"] != "call_read1" || !strings.Contains(fmt.Sprint(last["content"]), "buy milk") {
		t.Errorf("last message of request 2 = %v, want the read result for call_read1", last)
	}
	if strings.Contains(out+errOut, cliKey) {
		t.Error("the API key appears in the output")
	}
}

func TestRunOpenAIJSONEvents(t *testing.T) {
	t.Parallel()
	env := withoutKeys("LOCAL_LLM_KEY", cliKey)
	srv := providertest.NewLLMServer(t, readThenAnswer...)
	code, out, errOut := tgMainIn(t, "", env, "run", "--json", "--model", "openai:gpt-test-1", "--base-url", srv.URL+"/v1", "--api-key-env", "LOCAL_LLM_KEY",
		"--workdir", cliWorkdir(t), "read my notes")
	if code != exitDone {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var kinds []agent.EventKind
	var text strings.Builder
	var done *agent.Result
	var call *agent.Event
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var ev agent.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line is not an event: %v\n%s", err, sc.Text())
		}
		if len(kinds) == 0 || kinds[len(kinds)-1] != ev.Kind {
			kinds = append(kinds, ev.Kind)
		}
		switch ev.Kind {
		case agent.EventText:
			text.WriteString(ev.Delta)
		case agent.EventToolCall:
			call = &ev
		case agent.EventDone:
			done = ev.Result
		}
	}
	wantKinds := []agent.EventKind{agent.EventText, agent.EventUsage, agent.EventToolCall, agent.EventDecision, agent.EventToolResult, agent.EventText, agent.EventUsage, agent.EventDone}
	if fmt.Sprint(kinds) != fmt.Sprint(wantKinds) {
		t.Errorf("event kinds %v, want %v", kinds, wantKinds)
	}
	if call == nil || call.Call.Name != "read" || string(call.Call.Arguments) != `{"path":"notes.txt"}` {
		t.Errorf("tool_call event = %+v, want read with the assembled arguments", call)
	}
	if got := text.String(); got != "Let me read the notes.The notes say: buy milk." {
		t.Errorf("text deltas = %q", got)
	}
	if done == nil || done.Status != agent.StatusDone || done.Text != "The notes say: buy milk." || len(done.ToolCalls) != 1 || done.Usage.TotalTokens != 54 {
		t.Errorf("done result = %+v", done)
	}
	if hdrs, _, _ := srv.Requests(); len(hdrs) == 0 || hdrs[0].Get("Authorization") != "Bearer "+cliKey {
		t.Error("the key from --api-key-env was not sent")
	}
}

// A vendor's key goes to another server only when asked for by name.
func TestRunAnthropicKeyFromEnv(t *testing.T) {
	t.Parallel()
	env := withoutKeys("ANTHROPIC_API_KEY", cliKey)
	srv := providertest.NewLLMServer(t, readThenAnswer...)
	code, out, errOut := tgMainIn(t, "", env, "run", "--model", "anthropic:claude-test-1", "--base-url", srv.URL,
		"--api-key-env", "ANTHROPIC_API_KEY", "--workdir", cliWorkdir(t), "read my notes")
	if code != exitDone {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, w := range []string{`-> read {"path":"notes.txt"}`, "buy milk", "The notes say: buy milk."} {
		if !strings.Contains(out, w) {
			t.Errorf("stdout lacks %q:\n%s", w, out)
		}
	}
	hdrs, bodies, _ := srv.Requests()
	if len(hdrs) != 2 || hdrs[0].Get("X-Api-Key") != cliKey || hdrs[0].Get("Anthropic-Version") == "" || bodies[0]["model"] != "claude-test-1" {
		t.Errorf("requests: %d, x-api-key sent: %v, anthropic-version %q", len(hdrs), len(hdrs) > 0 && hdrs[0].Get("X-Api-Key") == cliKey, hdrs[0].Get("Anthropic-Version"))
	}
	if strings.Contains(out+errOut, cliKey) {
		t.Error("the API key appears in the output")
	}
}

// A server that echoes the key in its errors: the CLI never shows it, in
// text or JSON output, with -v logging, on a rejected request or an error
// event in the middle of a stream.
func TestRunNeverPrintsTheKey(t *testing.T) {
	t.Parallel()
	env := withoutKeys()
	rejected := func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s.","type":"invalid_request_error","code":"invalid_api_key"}}`, cliKey)
	}
	midway := func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Partial"},"finish_reason":null}]}`+"\n\n")
		fmt.Fprintf(w, `data: {"error":{"message":"upstream refused key %s","type":"server_error"}}`+"\n\n", cliKey)
	}
	for name, fail := range map[string]func(http.ResponseWriter){"401": rejected, "midstream": midway} {
		for _, extra := range [][]string{nil, {"--json"}, {"-v"}} {
			t.Run(name+strings.Join(extra, ""), func(t *testing.T) {
				srv := providertest.NewLLMServer(t)
				srv.Fail = fail
				args := append([]string{"run", "--model", "openai:gpt-test-1", "--base-url", srv.URL + "/v1", "--api-key", cliKey, "--workdir", t.TempDir()}, extra...)
				code, out, errOut := tgMainIn(t, "", env, append(args, "hello")...)
				if code != exitError {
					t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitError, out, errOut)
				}
				if strings.Contains(out+errOut, cliKey) {
					t.Errorf("the API key appears in the output:\nstdout:\n%s\nstderr:\n%s", out, errOut)
				}
				if !strings.Contains(out+errOut, "[redacted]") {
					t.Errorf("the provider's message is not shown (redacted):\nstdout:\n%s\nstderr:\n%s", out, errOut)
				}
			})
		}
	}
}

func TestRunModelUsageErrors(t *testing.T) {
	t.Parallel()
	env := withoutKeys()
	script := apWrite(t, t.TempDir(), "s.yaml", "turns:\n  - text: hi\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", "openai:gpt-4.1-mini"}, "export OPENAI_API_KEY=... (or name another variable with --api-key-env)"},
		{[]string{"--model", "openai:some/model", "--base-url", "https://openrouter.ai/api/v1"}, "export OPENROUTER_API_KEY=... (or name another variable with --api-key-env)"},
		{[]string{"--model", "anthropic:claude-test"}, "export ANTHROPIC_API_KEY=... (or name another variable with --api-key-env)"},
		{[]string{"--model", "openai:"}, `--model: want openai:MODEL, anthropic:MODEL or script:PATH, got "openai:"`},
		{[]string{"--model", "gemini:pro"}, `unknown provider "gemini" (known: script, openai, anthropic)`},
		{[]string{"--model", "opnai:gpt-4.1"}, `unknown provider "opnai"; did you mean "openai"?`},
		{[]string{"--model", "openai:m", "--base-url", "ftp://127.0.0.1/v1", "--api-key", cliKey}, "not an absolute http(s) URL"},
		{[]string{"--model", "script:" + script, "--api-key", cliKey}, "--base-url, --api-key and --api-key-env are for openai: and anthropic: models"},
		{[]string{"--model", "openai:m", "--base-url", "http://127.0.0.1:1/v1", "--api-key-env", "TOLLGATE_UNSET_KEY_VAR"}, "--api-key-env TOLLGATE_UNSET_KEY_VAR: the variable is unset or empty"},
	} {
		code, out, errOut := tgMainIn(t, "", env, append(append([]string{"run"}, tc.args...), "hi")...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args, code, errOut, exitUsage, tc.want)
		}
		if strings.Contains(out+errOut, cliKey) {
			t.Errorf("%q: the API key appears in the output", tc.args)
		}
		if strings.Contains(errOut, "pass --api-key") {
			t.Errorf("%q: the error points to --api-key, which every process of the machine sees: %q", tc.args, errOut)
		}
	}
}

// A local OpenAI-compatible server (Ollama, vLLM) needs no key: none is
// asked for and no Authorization header is sent.
func TestRunLocalServerWithoutKey(t *testing.T) {
	t.Parallel()
	env := withoutKeys()
	srv := providertest.NewLLMServer(t, providertest.Turn{Text: "Hello from a local model."})
	code, out, errOut := tgMainIn(t, "", env, "run", "--model", "openai:llama3.1", "--base-url", srv.URL+"/v1", "--workdir", t.TempDir(), "hi")
	if code != exitDone || !strings.Contains(out, "Hello from a local model.") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if hdrs, _, _ := srv.Requests(); len(hdrs) != 1 || hdrs[0].Get("Authorization") != "" {
		t.Errorf("requests %d, Authorization %q; want one request without a key", len(hdrs), hdrs[0].Get("Authorization"))
	}
}

// OPENAI_API_KEY belongs to api.openai.com: it is not sent to another
// --base-url unless --api-key-env names it.
func TestVendorKeyNotSentElsewhere(t *testing.T) {
	t.Parallel()
	env := withoutKeys("OPENAI_API_KEY", cliKey)
	srv := providertest.NewLLMServer(t, providertest.Turn{Text: "hi"})
	code, out, errOut := tgMainIn(t, "", env, "run", "--model", "openai:m", "--base-url", srv.URL+"/v1", "--workdir", t.TempDir(), "hi")
	if code != exitDone {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if hdrs, _, _ := srv.Requests(); len(hdrs) != 1 || hdrs[0].Get("Authorization") != "" {
		t.Errorf("the OpenAI key was sent to %s", srv.URL)
	}
}

// The key given with --api-key is not in the configuration stored for resume.
func TestStoredConfigNeverKeepsTheKey(t *testing.T) {
	t.Parallel()
	rc := newRunCommand(&cliEnv{})
	if err := rc.cmd.ParseFlags([]string{"--model", "openai:m", "--api-key", cliKey, "--base-url", "http://127.0.0.1:1/v1"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := rc.flags.config("/")
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), cliKey) {
		t.Errorf("stored configuration %s holds the key", b)
	}
	if want := "http://127.0.0.1:1/v1"; cfg.Model.BaseURL != want {
		t.Errorf("BaseURL = %q, want %q kept", cfg.Model.BaseURL, want)
	}
}

// A run started with --api-key halts on an approval; --api-key is never
// stored, so a resume without it is refused before anything runs, and a
// resume that gives it again sends it.
func TestResumeOfRunStartedWithAPIKeyNeedsTheKey(t *testing.T) {
	t.Parallel()
	env := withoutKeys()
	srv := providertest.NewLLMServer(t,
		providertest.Turn{Calls: []providertest.Call{{ID: "call_w1", Name: "write", Args: `{"path":"out.txt","content":"hi"}`}}},
		providertest.Turn{Text: "written"})
	dir := t.TempDir()
	ws := cliWorkdir(t)
	policy := apWrite(t, dir, "policy.yaml", "rules:\n  - id: ask-write\n    tool: write\n    decision: ask\n    reason: writes need a person\n")
	state := filepath.Join(dir, "state")
	code, out, errOut := tgMainIn(t, "", env, "run", "--model", "openai:m", "--base-url", srv.URL+"/v1", "--api-key", cliKey,
		"--workdir", ws, "--policy", policy, "--state-dir", state, "--approve", "prompt", "write it")
	if code != exitPending {
		t.Fatalf("run: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitPending, out, errOut)
	}
	runID, reqID := onlyPending(t, state)
	if code, out, errOut = tgMainIn(t, "", env, "approvals", "approve", "--state-dir", state, "--run", runID, reqID); code != 0 {
		t.Fatalf("approve: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = tgMainIn(t, "", env, "resume", "--state-dir", state, runID)
	if code != exitUsage || !strings.Contains(errOut, "started with --api-key") {
		t.Fatalf("resume without the key: exit %d, want %d naming --api-key\nstdout:\n%s\nstderr:\n%s", code, exitUsage, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(ws, "out.txt")); err == nil {
		t.Fatal("the approved call ran although the resume was refused")
	}
	code, out, errOut = tgMainIn(t, "", env, "resume", "--state-dir", state, "--api-key", cliKey, runID)
	if code != exitDone || !strings.Contains(out, "written") {
		t.Fatalf("resume with the key: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	hdrs, _, _ := srv.Requests()
	if len(hdrs) != 2 || hdrs[1].Get("Authorization") != "Bearer "+cliKey {
		t.Fatalf("requests %d; the resumed turn must carry the key given again", len(hdrs))
	}
}

// onlyPending returns the run and request IDs of the one pending approval in
// the store of the state directory, failing t when there is not exactly one.
func onlyPending(t *testing.T, state string) (runID, reqID string) {
	t.Helper()
	as := pendingApprovals(t, state)
	if len(as) != 1 {
		t.Fatalf("pending approvals: %+v, want one", as)
	}
	return as[0].RunID, as[0].ID
}

// Edited arguments are checked against the tool's schema when the approval
// is made: a bad edit is refused and the request stays pending for a good one.
func TestApproveArgsCheckedAgainstSchema(t *testing.T) {
	t.Parallel()
	env := withoutKeys()
	srv := providertest.NewLLMServer(t,
		providertest.Turn{Calls: []providertest.Call{{ID: "call_w1", Name: "write", Args: `{"path":"out.txt","content":"hi"}`}}},
		providertest.Turn{Text: "written"})
	dir := t.TempDir()
	ws := cliWorkdir(t)
	policy := apWrite(t, dir, "policy.yaml", "rules:\n  - id: ask-write\n    tool: write\n    decision: ask\n")
	state := filepath.Join(dir, "state")
	if code, out, errOut := tgMainIn(t, "", env, "run", "--model", "openai:m", "--base-url", srv.URL+"/v1",
		"--workdir", ws, "--policy", policy, "--state-dir", state, "write it"); code != exitPending {
		t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
	}
	runID, reqID := onlyPending(t, state)
	code, out, errOut := tgMainIn(t, "", env, "approvals", "approve", "--state-dir", state, "--args", `{"path":"out.txt","content":7}`, reqID)
	if code != exitUsage || !strings.Contains(errOut, "input schema") {
		t.Fatalf("bad edit: exit %d, want %d naming the schema\n%s%s", code, exitUsage, out, errOut)
	}
	if r2, q2 := onlyPending(t, state); r2 != runID || q2 != reqID {
		t.Fatalf("the request is no longer pending after a refused edit")
	}
	if code, out, errOut = tgMainIn(t, "", env, "approvals", "approve", "--state-dir", state, "--args", `{"path":"out.txt","content":"edited"}`, reqID); code != 0 {
		t.Fatalf("good edit: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut = tgMainIn(t, "", env, "resume", "--state-dir", state, runID); code != exitDone {
		t.Fatalf("resume: exit %d\n%s%s", code, out, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "out.txt")); err != nil || string(b) != "edited" {
		t.Fatalf("out.txt = %q, %v; want the edited content", b, err)
	}
}

// resume --wait goes on waiting when the resumed run halts again, as run
// --approve wait does, until the run ends.
func TestResumeWaitWaitsAtEveryHalt(t *testing.T) {
	t.Parallel()
	env := withoutKeys()
	srv := providertest.NewLLMServer(t,
		providertest.Turn{Calls: []providertest.Call{{ID: "call_w1", Name: "write", Args: `{"path":"a.txt","content":"a"}`}}},
		providertest.Turn{Calls: []providertest.Call{{ID: "call_w2", Name: "write", Args: `{"path":"b.txt","content":"b"}`}}},
		providertest.Turn{Text: "both written"})
	dir := t.TempDir()
	ws := cliWorkdir(t)
	policy := apWrite(t, dir, "policy.yaml", "rules:\n  - id: ask-write\n    tool: write\n    decision: ask\n")
	state := filepath.Join(dir, "state")
	if code, out, errOut := tgMainIn(t, "", env, "run", "--model", "openai:m", "--base-url", srv.URL+"/v1",
		"--workdir", ws, "--policy", policy, "--state-dir", state, "write two files"); code != exitPending {
		t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
	}
	runID, first := onlyPending(t, state)
	type result struct {
		code     int
		out, err string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errOut := tgMainIn(t, "", env, "resume", "--state-dir", state, "--wait", "--poll", "20ms", runID)
		done <- result{code, out, errOut}
	}()
	if code, out, errOut := tgMainIn(t, "", env, "approvals", "approve", "--state-dir", state, first); code != 0 {
		t.Fatalf("approve 1: exit %d\n%s%s", code, out, errOut)
	}
	// The run halts again on the second write; the waiting resume stays.
	var second string
	for deadline := time.Now().Add(60 * time.Second); second == ""; {
		select {
		case r := <-done:
			t.Fatalf("resume --wait ended at the second halt: exit %d\n%s%s", r.code, r.out, r.err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the second request never appeared")
		}
		if _, id := pendingIDs(t, state); id != "" && id != first {
			second = id
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, out, errOut := tgMainIn(t, "", env, "approvals", "approve", "--state-dir", state, second); code != 0 {
		t.Fatalf("approve 2: exit %d\n%s%s", code, out, errOut)
	}
	r := <-done
	if r.code != exitDone || !strings.Contains(r.out, "both written") {
		t.Fatalf("resume --wait: exit %d, want %d\n%s%s", r.code, exitDone, r.out, r.err)
	}
}

// pendingIDs returns the run and request IDs of a pending approval in the
// store of the state directory, or empty strings when there is none.
func pendingIDs(t *testing.T, state string) (runID, reqID string) {
	t.Helper()
	if as := pendingApprovals(t, state); len(as) > 0 {
		return as[0].RunID, as[0].ID
	}
	return "", ""
}

// pendingApprovals lists the pending approvals in the store of the state
// directory.
func pendingApprovals(t *testing.T, state string) []store.Approval {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(state, storeFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	page, err := s.ListApprovals(context.Background(), store.ApprovalFilter{AllTenants: true, Status: store.StatusPending})
	if err != nil {
		t.Fatal(err)
	}
	return page.Approvals
}

// A script model takes no key: resume refuses --api-key for a run whose
// model is a script, as run does, before anything runs.
func TestResumeOfScriptRunRefusesAPIKey(t *testing.T) {
	t.Parallel()
	env := withoutKeys()
	dir := t.TempDir()
	ws := cliWorkdir(t)
	script := apWrite(t, dir, "s.yaml", "turns:\n  - toolCalls: [{name: write, args: {path: out.txt, content: hi}}]\n  - text: written\n")
	policy := apWrite(t, dir, "policy.yaml", "rules:\n  - id: ask-write\n    tool: write\n    decision: ask\n")
	state := filepath.Join(dir, "state")
	if code, out, errOut := tgMainIn(t, "", env, "run", "--model", "script:"+script, "--workdir", ws, "--policy", policy, "--state-dir", state, "write it"); code != exitPending {
		t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
	}
	runID, reqID := onlyPending(t, state)
	if code, out, errOut := tgMainIn(t, "", env, "approvals", "approve", "--state-dir", state, reqID); code != 0 {
		t.Fatalf("approve: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := tgMainIn(t, "", env, "resume", "--state-dir", state, "--api-key", cliKey, runID)
	if code != exitUsage || !strings.Contains(errOut, "--base-url, --api-key and --api-key-env are for openai: and anthropic: models, not script:") || strings.Contains(out+errOut, cliKey) {
		t.Fatalf("resume --api-key of a script run: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitUsage, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(ws, "out.txt")); err == nil {
		t.Fatal("the approved call ran although the resume was refused")
	}
	if code, out, errOut = tgMainIn(t, "", env, "resume", "--state-dir", state, runID); code != exitDone || !strings.Contains(out, "written") {
		t.Fatalf("resume: exit %d\n%s%s", code, out, errOut)
	}
}

// run's help puts the key in a variable and warns against --api-key: a
// command line is visible to every process of the machine.
func TestRunHelpPrefersTheKeyVariable(t *testing.T) {
	t.Parallel()
	code, out, _ := tgMain(t, "run", "--help")
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{
		"The key comes from the variable --api-key-env names",
		"--api-key overrides them, but a command line is visible to every process of the machine: prefer a variable.",
		"API key, visible to every process of the machine on a command line: prefer the variable",
	} {
		if code != 0 || !strings.Contains(flat, want) {
			t.Errorf("run --help: exit %d, lacks %q:\n%s", code, want, out)
		}
	}
}
