package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tollgate-dev/tollgate/internal/browsertest"
	"github.com/tollgate-dev/tollgate/internal/serveconfig"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/server"
)

// claudeServer is a `tollgate serve` with a claudeCode: section whose
// policy asks about every write of notes, an approver's token (alice) and
// an agent's (the hook's).
type claudeServer struct {
	*serveProc
	approver, agent string
	agentFile       string
}

func startClaudeServer(t *testing.T) *claudeServer {
	t.Helper()
	return startHookServer(t, "claudeCode")
}

// startHookServer starts a `tollgate serve` whose server.yaml section
// (claudeCode or codex) decides with the team's policy, which also asks
// about every tee.
func startHookServer(t *testing.T, section string) *claudeServer {
	t.Helper()
	// The client first: a missing one fails (or, -short, skips) the test
	// before a server and a decider are started for it.
	if section == "codex" {
		codexBinary(t)
	} else {
		claudeBinary(t)
	}
	dir := t.TempDir()
	cs := &claudeServer{}
	var entries strings.Builder
	for _, who := range []struct {
		name string
		role server.Role
		tok  *string
	}{{"alice", server.RoleApprover, &cs.approver}, {"ci-bot", server.RoleAgent, &cs.agent}} {
		tok, hash, err := serveconfig.NewToken()
		if err != nil {
			t.Fatal(err)
		}
		*who.tok = tok
		fmt.Fprintf(&entries, "  - name: %s\n    roles: [%s]\n    sha256: %s\n", who.name, who.role, hash)
	}
	writeTestFile(t, filepath.Join(dir, "tokens.yaml"), "tokens:\n"+entries.String())
	writeTestFile(t, filepath.Join(dir, "team-policy.yaml"), `rules:
  - id: review-notes
    tool: write
    args:
      path: {regex: 'notes'}
    decision: ask
    reason: the notes are reviewed
  - id: review-tee
    tool: bash
    command: {program: tee}
    decision: ask
    reason: the notes are reviewed
`)
	writeTestFile(t, filepath.Join(dir, "server.yaml"), "tokens: tokens.yaml\nstateDir: state\n"+section+":\n  policy: team-policy.yaml\n")
	cs.agentFile = filepath.Join(dir, "agent.token")
	writeTestFile(t, cs.agentFile, cs.agent+"\n")
	cs.serveProc = startServe(t, filepath.Join(dir, "server.yaml"))
	return cs
}

// decideNext waits for the next pending approval and decides it as alice;
// it returns the approval it decided, on done.
func (cs *claudeServer) decideNext(t *testing.T, decision, reason string) <-chan serverapi.ApprovalView {
	done := make(chan serverapi.ApprovalView, 1)
	go func() {
		defer close(done)
		deadline := time.Now().Add(2 * time.Minute)
		for time.Now().Before(deadline) {
			var page serverapi.ApprovalPage
			if code := cs.do(t, "GET", "/v1/approvals?status=pending", cs.approver, nil, &page); code != http.StatusOK {
				t.Errorf("list approvals: %d", code)
				return
			}
			if len(page.Approvals) == 0 {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			a := page.Approvals[0]
			// The hook's token may not decide, nor list the approvals.
			if code := cs.do(t, "POST", "/v1/approvals/"+a.ID+"/decision", cs.agent, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest}, nil); code != http.StatusForbidden {
				t.Errorf("the agent's token deciding: %d, want 403", code)
			}
			if code := cs.do(t, "GET", "/v1/approvals", cs.agent, nil, nil); code != http.StatusForbidden {
				t.Errorf("the agent's token listing approvals: %d, want 403", code)
			}
			var v serverapi.ApprovalView
			if code := cs.do(t, "POST", "/v1/approvals/"+a.ID+"/decision", cs.approver, serverapi.DecisionRequest{Decision: decision, Reason: reason, ArgsDigest: a.ArgsDigest}, &v); code != http.StatusOK {
				t.Errorf("deciding: %d", code)
			}
			done <- v
			return
		}
		t.Error("no approval was asked")
	}()
	return done
}

func (cs *claudeServer) hookArgs(wait string) claudeOpts {
	return claudeOpts{Args: []string{"--server", cs.url, "--token-file", cs.agentFile, "--wait", wait}}
}

// A write the team's policy asks about waits for a person on the server:
// approved there, it runs once, and the session is a run of the hook's
// principal with the call recorded as approved by alice.
func TestClaudeCodeServerApproved(t *testing.T) {
	t.Parallel()
	cs := startClaudeServer(t)
	decided := cs.decideNext(t, "approve", "")
	r := runClaude(t, claudePolicy, cs.hookArgs("60s"), nil,
		toolUse{"Write", `{"file_path":"WS/notes.txt","content":"hello"}`})
	a := <-decided
	if a.Tool != "write" || a.RunOwner != "person:ci-bot" {
		t.Errorf("approval %+v", a)
	}
	// The card shows the session's prompt, from the transcript the hook
	// read on Claude Code's machine.
	if !strings.Contains(a.Prompt, "Last user prompt: do the task") {
		t.Errorf("the approval's prompt %q", a.Prompt)
	}
	if b, err := os.ReadFile(filepath.Join(r.Workspace, "notes.txt")); err != nil || string(b) != "hello" {
		t.Errorf("notes.txt = %q, %v", b, err)
	}
	var page serverapi.RunPage
	cs.do(t, "GET", "/v1/runs", cs.approver, nil, &page)
	if len(page.Runs) != 1 || page.Runs[0].Agent != serverapi.ClaudeAgent || page.Runs[0].Owner != "person:ci-bot" {
		t.Fatalf("runs %+v", page.Runs)
	}
	var run struct {
		ToolCalls []struct {
			Name     string
			Ran      bool
			Decision struct {
				Outcome string
				By      struct{ Kind, Name string }
			}
		}
	}
	cs.do(t, "GET", "/v1/runs/"+page.Runs[0].ID, cs.approver, nil, &run)
	if len(run.ToolCalls) != 1 || !run.ToolCalls[0].Ran || run.ToolCalls[0].Decision.Outcome != "approved" || run.ToolCalls[0].Decision.By.Name != "alice" {
		t.Errorf("the run's calls: %+v", run.ToolCalls)
	}
	if code := cs.do(t, "GET", "/v1/runs/"+page.Runs[0].ID, cs.agent, nil, nil); code != http.StatusForbidden {
		t.Errorf("the agent's token reading the run: %d, want 403", code)
	}
}

// A person's deny reaches the model with the reason; nothing is written.
func TestClaudeCodeServerDenied(t *testing.T) {
	t.Parallel()
	cs := startClaudeServer(t)
	decided := cs.decideNext(t, "deny", "not the notes today")
	r := runClaude(t, claudePolicy, cs.hookArgs("60s"), nil,
		toolUse{"Write", `{"file_path":"WS/notes.txt","content":"hello"}`})
	<-decided
	if _, err := os.Stat(filepath.Join(r.Workspace, "notes.txt")); err == nil {
		t.Error("notes.txt was written")
	}
	if !strings.Contains(r.Results["toolu_01"], "declined by alice: not the notes today") {
		t.Errorf("the model read %q", r.Results["toolu_01"])
	}
}

// No answer within --wait denies, and says so.
func TestClaudeCodeServerNoAnswer(t *testing.T) {
	t.Parallel()
	cs := startClaudeServer(t)
	r := runClaude(t, claudePolicy, cs.hookArgs("2s"), nil,
		toolUse{"Write", `{"file_path":"WS/notes.txt","content":"hello"}`})
	if _, err := os.Stat(filepath.Join(r.Workspace, "notes.txt")); err == nil {
		t.Error("notes.txt was written")
	}
	if !strings.Contains(r.Results["toolu_01"], "no one answered") {
		t.Errorf("the model read %q", r.Results["toolu_01"])
	}
}

// Claude Code's http hook type, as 'tollgate claude-code settings --http'
// prints it, reaches the server with the token from the environment: the
// ask is approved there and the write runs once.
func TestClaudeCodeServerHTTPHook(t *testing.T) {
	t.Parallel()
	cs := startClaudeServer(t)
	decided := cs.decideNext(t, "approve", "")
	o := claudeOpts{Args: []string{"--server", cs.url, "--http", "--wait", "60s"}, Env: []string{envToken + "=" + cs.agent}}
	r := runClaude(t, claudePolicy, o, nil,
		toolUse{"Write", `{"file_path":"WS/notes.txt","content":"hello"}`})
	<-decided
	if b, err := os.ReadFile(filepath.Join(r.Workspace, "notes.txt")); err != nil || string(b) != "hello" {
		t.Errorf("notes.txt = %q, %v", b, err)
	}
	var page serverapi.RunPage
	cs.do(t, "GET", "/v1/runs", cs.approver, nil, &page)
	if len(page.Runs) != 1 || page.Runs[0].Owner != "person:ci-bot" {
		t.Errorf("runs %+v", page.Runs)
	}
}

// The approvals page shows a Claude Code session's write with the session's
// prompt; a click on Approve lets it run, once.
func TestClaudeCodeServerPageApproves(t *testing.T) {
	t.Parallel()
	browsertest.Need(t)
	cs := startClaudeServer(t)
	r, wait := startClaude(t, claudePolicy, cs.hookArgs("90s"), nil,
		toolUse{"Write", `{"file_path":"WS/notes.txt","content":"hello"}`})
	ctx := chrome.Tab(t)
	browsertest.SignIn(t, ctx, cs.url, cs.approver)
	card := `li.approval`
	browsertest.Do(t, ctx, chromedp.WaitVisible(chromedp.CSS(card+` button.approve`)))
	args := browsertest.Value(t, ctx, chromedp.TextContent(chromedp.CSS(card+` pre.args`)))
	if !strings.Contains(args, "notes.txt") {
		t.Errorf("the card shows arguments %q", args)
	}
	if _, err := os.Stat(filepath.Join(r.Workspace, "notes.txt")); err == nil {
		t.Fatal("the write ran before the approval")
	}
	browsertest.Do(t, ctx, chromedp.Click(chromedp.CSS(card+` button.approve`)))
	browsertest.WaitText(t, ctx, card+` .outcome`, "Approved: write")
	wait()
	if b, err := os.ReadFile(filepath.Join(r.Workspace, "notes.txt")); err != nil || string(b) != "hello" {
		t.Errorf("notes.txt = %q, %v", b, err)
	}
	var page serverapi.RunPage
	cs.do(t, "GET", "/v1/runs", cs.approver, nil, &page)
	var run struct{ ToolCalls []struct{ Ran bool } }
	if len(page.Runs) == 1 {
		cs.do(t, "GET", "/v1/runs/"+page.Runs[0].ID, cs.approver, nil, &run)
	}
	if len(run.ToolCalls) != 1 || !run.ToolCalls[0].Ran {
		t.Errorf("the session's calls: %+v (runs %+v)", run.ToolCalls, page.Runs)
	}
}
