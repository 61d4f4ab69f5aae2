package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/store"
)

func (cs *claudeServer) codexArgs(wait string) codexOpts {
	return codexOpts{Args: []string{"--server", cs.url, "--token-file", cs.agentFile, "--wait", wait}}
}

// A command the team's policy asks about waits for a person on the
// server: approved there through the API, it runs once, and the session
// is a run of agent codex of the hook's principal, with the call recorded
// as approved by alice.
func TestCodexServerApproved(t *testing.T) {
	t.Parallel()
	cs := startHookServer(t, "codex")
	decided := cs.decideNext(t, "approve", "")
	r := runCodex(t, codexPolicy, cs.codexArgs("60s"), nil, "echo hello | tee -a notes.txt")
	a := <-decided
	if a.Tool != "bash" || a.RunOwner != "person:ci-bot" {
		t.Errorf("approval %+v", a)
	}
	// The card shows the session's prompt, which UserPromptSubmit brought.
	if !strings.Contains(a.Prompt, "Last user prompt: do the task") {
		t.Errorf("the approval's prompt %q", a.Prompt)
	}
	if b, err := os.ReadFile(filepath.Join(r.Workspace, "notes.txt")); err != nil || string(b) != "hello\n" {
		t.Errorf("notes.txt = %q, %v: want the command run once", b, err)
	}
	var page serverapi.RunPage
	cs.do(t, "GET", "/v1/runs", cs.approver, nil, &page)
	// Codex has no SessionEnd: its Stop marks the run done.
	if len(page.Runs) != 1 || page.Runs[0].Agent != serverapi.CodexAgent || page.Runs[0].Owner != "person:ci-bot" || page.Runs[0].Status != store.RunDone {
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
	if len(run.ToolCalls) != 1 || !run.ToolCalls[0].Ran || run.ToolCalls[0].Name != "bash" || run.ToolCalls[0].Decision.Outcome != "approved" || run.ToolCalls[0].Decision.By.Name != "alice" {
		t.Errorf("the run's calls: %+v", run.ToolCalls)
	}
	if code := cs.do(t, "GET", "/v1/runs/"+page.Runs[0].ID, cs.agent, nil, nil); code != http.StatusForbidden {
		t.Errorf("the agent's token reading the run: %d, want 403", code)
	}
}

// A person's deny reaches the model with the reason; the command does not
// run.
func TestCodexServerDenied(t *testing.T) {
	t.Parallel()
	cs := startHookServer(t, "codex")
	decided := cs.decideNext(t, "deny", "not the notes today")
	r := runCodex(t, codexPolicy, cs.codexArgs("60s"), nil, "echo hello | tee -a notes.txt")
	<-decided
	if _, err := os.Stat(filepath.Join(r.Workspace, "notes.txt")); err == nil {
		t.Error("notes.txt was written")
	}
	if !strings.Contains(r.Outputs["call_01"], "declined by alice: not the notes today") {
		t.Errorf("the model read %q", r.Outputs["call_01"])
	}
}

// No answer within --wait denies, and says so.
func TestCodexServerNoAnswer(t *testing.T) {
	t.Parallel()
	cs := startHookServer(t, "codex")
	r := runCodex(t, codexPolicy, cs.codexArgs("2s"), nil, "echo hello | tee -a notes.txt")
	if _, err := os.Stat(filepath.Join(r.Workspace, "notes.txt")); err == nil {
		t.Error("notes.txt was written")
	}
	if !strings.Contains(r.Outputs["call_01"], "no one answered") {
		t.Errorf("the model read %q", r.Outputs["call_01"])
	}
}

// A server that cannot be reached denies even a command no policy speaks
// of: Codex would let it run on a hook's failure, tollgate does not. With
// every hook, the prompt itself is refused (UserPromptSubmit); with
// PreToolUse alone, the call is denied with the reason.
func TestCodexServerUnreachable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	token := writeFile(t, dir, "agent.token", "tg_unused\n")
	args := []string{"--server", "http://127.0.0.1:1", "--token-file", token, "--wait", "2s"}
	r := runCodex(t, codexPolicy, codexOpts{Args: args}, nil, "echo made > made.txt")
	if _, err := os.Stat(filepath.Join(r.Workspace, "made.txt")); err == nil || len(r.Outputs) != 0 {
		t.Errorf("with every hook: made.txt %v, the model read %v; want no call", err, r.Outputs)
	}
	r = runCodex(t, codexPolicy, codexOpts{Args: args, Only: []string{"PreToolUse"}}, nil, "echo made > made.txt")
	if _, err := os.Stat(filepath.Join(r.Workspace, "made.txt")); err == nil {
		t.Error("made.txt was written: the call ran without a decision")
	}
	if out := r.Outputs["call_01"]; !strings.Contains(out, "could not be reached") {
		t.Errorf("the model read %q", out)
	}
}

// The hook's own policy's ask goes to the server, which asks a person
// though its own policy says nothing of the call: approved, it runs.
func TestCodexServerLocalAsk(t *testing.T) {
	t.Parallel()
	cs := startHookServer(t, "codex")
	decided := cs.decideNext(t, "approve", "")
	r := runCodex(t, codexPolicy, cs.codexArgs("60s"), nil, "touch asked.txt")
	a := <-decided
	if a.AskedBy != "hook:codex-local-policy" || !strings.Contains(a.Reason, "touching is reviewed") {
		t.Errorf("approval asked by %q for %q", a.AskedBy, a.Reason)
	}
	if _, err := os.Stat(filepath.Join(r.Workspace, "asked.txt")); err != nil {
		t.Errorf("the approved call did not run: %v", err)
	}
}
