package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/internal/claudegate"
	"github.com/tollgate-dev/tollgate/internal/claudenames"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
)

// envToken holds the bearer token of `tollgate claude-code hook --server`
// when --token-file is not given.
const envToken = "TOLLGATE_TOKEN"

// maxClaudeAnswer bounds the server's answer to one hook event.
const maxClaudeAnswer = 1 << 20

// forwardClaude sends one event to the server's POST /v1/hooks/claude-code
// and returns its answer. The hook's own policy judges a tool event first:
// its deny is answered here, its ask goes along (the server then asks a
// person whatever its own policy says). Any failure denies.
func forwardClaude(ctx context.Context, env *cliEnv, f *claudeHookFlags, in *claudegate.Input, raw []byte, local *claudegate.Bridge) claudegate.Answer {
	ev := in.HookEventName
	localAsk := ""
	if local != nil && (ev == claudenames.PreToolUse || ev == claudenames.PermissionRequest) && len(f.policies) > 0 {
		switch eff, reason := local.Judge(ctx, in); eff {
		case approval.Deny:
			return local.Handle(ctx, in) // recorded with --records, as in local mode
		case approval.Ask:
			localAsk = oneLineHeader(reason)
		}
	}
	if ev == claudenames.PreToolUse {
		// The person asked sees the session's last prompt and the model's
		// stated intent, which only this machine's transcript holds.
		in.TollgatePrompt, in.TollgateIntent = claudegate.TranscriptNotes(in.TranscriptPath)
		if b, err := json.Marshal(in); err == nil {
			raw = b
		}
	}
	token, err := claudeToken(env, f.tokenFile)
	if err != nil {
		return claudegate.Failed(ev, err.Error())
	}
	u, err := url.Parse(strings.TrimRight(f.server, "/") + "/v1/hooks/" + string(f.source))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return claudegate.Failed(ev, fmt.Sprintf("--server %q is not an http or https URL", f.server))
	}
	u.RawQuery = url.Values{"wait": {f.wait.String()}}.Encode()
	ctx, cancel := context.WithTimeout(ctx, hookDeadline(f.wait))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(raw))
	if err != nil {
		return claudegate.Failed(ev, err.Error())
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	if localAsk != "" {
		req.Header.Set(serverapi.HeaderAsk, localAsk)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return claudegate.Failed(ev, "tollgate's server could not be reached, so the call was not allowed: "+err.Error())
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxClaudeAnswer+1))
	if err != nil || len(body) > maxClaudeAnswer {
		return claudegate.Failed(ev, "tollgate's server's answer could not be read, so the call was not allowed")
	}
	if resp.StatusCode != http.StatusOK {
		return claudegate.Failed(ev, fmt.Sprintf("tollgate's server answered %s, so the call was not allowed: %s", resp.Status, oneLineHeader(string(body))))
	}
	var out claudegate.Output
	if err := json.Unmarshal(body, &out); err != nil {
		return claudegate.Failed(ev, "tollgate's server's answer is not hook JSON, so the call was not allowed")
	}
	if out == (claudegate.Output{}) {
		return claudegate.Answer{}
	}
	return claudegate.Answer{Output: &out}
}

// claudeToken reads the bearer token from file, or else $TOLLGATE_TOKEN in
// the command's environment.
func claudeToken(env *cliEnv, file string) (string, error) {
	if file == "" {
		if t := strings.TrimSpace(env.env(envToken)); t != "" {
			return t, nil
		}
		return "", fmt.Errorf("no token for the server: give --token-file or set $%s", envToken)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("reading the token: %v", err)
	}
	t := strings.TrimSpace(string(b))
	if t == "" || len(t) > 1024 || strings.ContainsAny(t, "\r\n") {
		return "", fmt.Errorf("%s does not hold one token", file)
	}
	return t, nil
}

// oneLineHeader makes s fit an HTTP header: one line of at most 512 bytes.
func oneLineHeader(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 512 {
		s = s[:512]
	}
	return s
}

// The hook's own deadline and the agent's timeout for it, both beyond
// --wait: the hook gives up on the server, and denies, well before the
// agent's timeout, which lets the call run (Claude Code and Codex fail
// open). The margin between the two covers the hook's start, its policy
// and the transcript it reads before it asks.
const (
	hookSlack  = 10 * time.Second
	agentSlack = 30 * time.Second
)

// hookDeadline is how long the hook waits for the server's answer.
func hookDeadline(wait time.Duration) time.Duration { return wait + hookSlack }

// agentTimeout is the timeout, in seconds, the printed settings give the
// hook's tool events.
func agentTimeout(wait time.Duration) int { return int((wait + agentSlack).Seconds()) }
