package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tollgate-dev/tollgate/internal/browsertest"
	"github.com/tollgate-dev/tollgate/internal/serveconfig"
	"github.com/tollgate-dev/tollgate/internal/web"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/server"
	"github.com/tollgate-dev/tollgate/store/memory"
)

const sessionAgentToken = "tg_ci_bot_page"

// sessionServer starts a server with the page that answers the hooks of
// Claude Code and Codex, asking a person before any tee; it returns its
// URL.
func sessionServer(t *testing.T) string {
	t.Helper()
	pol, _, err := policy.ParsePolicy("team.yaml", strings.NewReader("rules:\n  - id: review-tee\n    tool: bash\n    command: {program: tee}\n    decision: ask\n    reason: the notes are reviewed\n"))
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := serveconfig.NewTokens([]serveconfig.TokenEntry{
		{SHA256: serveconfig.HashToken(aliceToken), Name: "alice", Tenant: "acme", Roles: []server.Role{server.RoleOperator, server.RoleApprover}},
		{SHA256: serveconfig.HashToken(sessionAgentToken), Name: "ci-bot", Tenant: "acme", Roles: []server.Role{server.RoleAgent}},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(memory.New(nil), &builder{}, &server.Options{Tokens: tokens.Lookup, Page: web.Handler(),
		ClaudeCode: &server.ClaudeCodeOptions{Policies: []*policy.Policy{pol}, StateDir: t.TempDir()},
		Codex:      &server.ClaudeCodeOptions{Policies: []*policy.Policy{pol}, StateDir: t.TempDir()},
		Tick:       20 * time.Millisecond, Heartbeat: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = srv.Run(ctx); close(done) }()
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		_ = srv.Shutdown(sctx)
		cancel()
		<-done
		ts.CloseClientConnections()
		ts.Close()
	})
	return ts.URL
}

// hook sends one PreToolUse event of session sess to the server's hook
// endpoint path, as the agent's hook would, with the prompt and intent
// the hook read from the agent's transcript; it returns when the server
// answers.
func hook(t *testing.T, url, path, sess, id, prompt, intent string) {
	b, _ := json.Marshal(map[string]any{"session_id": sess, "cwd": "/work/ws", "hook_event_name": "PreToolUse",
		"tool_name": "Bash", "tool_input": map[string]string{"command": "echo hi | tee -a notes.txt"}, "tool_use_id": id,
		"tollgate_prompt": prompt, "tollgate_intent": intent})
	req, err := http.NewRequest("POST", url+path+"?wait=2m", bytes.NewReader(b))
	if err != nil {
		t.Error(err)
		return
	}
	req.Header.Set("Authorization", "Bearer "+sessionAgentToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return
	}
	resp.Body.Close()
}

// A Claude Code session's card and a Codex session's name their source,
// the workspace, the session's last prompt and the model's stated intent,
// those two marked as the agent's report, not verified.
func TestPageSessionCards(t *testing.T) {
	url := sessionServer(t)
	ctx := tab(t)
	browsertest.SignIn(t, ctx, url, aliceToken)
	run(t, ctx, chromedp.WaitVisible(chromedp.CSS(`#approvals-empty`)))
	for _, c := range []struct{ path, sess, source string }{
		{"/v1/hooks/claude-code", "cc-1", "Claude Code session"},
		{"/v1/hooks/codex", "cx-1", "Codex session"},
	} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			hook(t, url, c.path, c.sess, "t1", "tidy the notes", "I'll add a line to notes.txt.")
		}()
		card := `li.approval:not(.decided)`
		run(t, ctx, chromedp.WaitVisible(chromedp.CSS(card+` button.approve`)))
		facts := text(t, ctx, card+` dl.facts`)
		for _, want := range []string{c.source, "started by person:ci-bot", "/work/ws", "rule:review-tee"} {
			if !strings.Contains(facts, want) {
				t.Errorf("%s: the card's facts %q lack %q", c.source, facts, want)
			}
		}
		if strings.Contains(facts, "Last user prompt") || !strings.Contains(facts, "Allow bash") {
			t.Errorf("%s: the question repeats the agent's report, unmarked: %q", c.source, facts)
		}
		if strings.Contains(facts, "agent ") || strings.Contains(facts, "command line") {
			t.Errorf("%s: the card's facts name another source: %q", c.source, facts)
		}
		if got := text(t, ctx, card+` h4.prompt-head`); got != "The session's last prompt (reported by the agent, not verified)" {
			t.Errorf("%s: prompt heading %q", c.source, got)
		}
		if got := text(t, ctx, card+` blockquote.prompt`); got != "tidy the notes" {
			t.Errorf("%s: prompt %q", c.source, got)
		}
		if got := text(t, ctx, card+` h4.intent-head`); got != "The model says (reported by the agent, not verified)" {
			t.Errorf("%s: intent heading %q", c.source, got)
		}
		if got := text(t, ctx, card+` blockquote.intent`); got != "I'll add a line to notes.txt." {
			t.Errorf("%s: intent %q", c.source, got)
		}
		if c.sess == "cc-1" {
			screenshot(t, ctx, "session-card.png")
		}
		run(t, ctx, chromedp.Click(chromedp.CSS(card+` button.approve`)))
		<-done
		waitText(t, ctx, `#runs`, c.source+" · person:ci-bot")
	}
}
