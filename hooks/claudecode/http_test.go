package claudecode_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/gate"
)

// http handlers get the same JSON and answer in the body; a status other
// than 2xx is a failure, which denies (fail closed).
func TestHTTPHandler(t *testing.T) {
	var got map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &got)
		if r.Header.Get("X-Team") != "ops" {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		io.WriteString(w, `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"ops says no"}}`)
	}))
	defer srv.Close()
	for _, tc := range []struct{ headers, reason string }{
		{`{"X-Team": "ops"}`, "ops says no"},
		{`{}`, "hook failed"},
	} {
		h := newHarness(t, pre(`{"type":"http","url":"`+srv.URL+`","headers":`+tc.headers+`}`))
		res, err := h.run(t, "go", bash("touch ran"))
		if err != nil {
			t.Fatal(err)
		}
		if d := res.ToolCalls[0].Decision; d.Outcome != gate.OutcomeDenied || !strings.Contains(d.Reason, tc.reason) || h.exists("ran") {
			t.Fatalf("decision %+v, want denied with %q", d, tc.reason)
		}
		if got["tool_name"] != "Bash" || got["hook_event_name"] != "PreToolUse" {
			t.Fatalf("the server got %v", got)
		}
	}
}

// Hooks get the allowlisted environment: no key, no database URL, no other
// variable of the process unless PassEnv names it; they do see
// CLAUDE_PROJECT_DIR.
func TestHooksGetNoSecrets(t *testing.T) {
	t.Setenv("MY_API_KEY", "s3cret")
	t.Setenv("DATABASE_URL", "postgres://u:pw@h/db")
	t.Setenv("PLAIN_SETTING", "visible")
	h := newHarness(t, pre(cmd(`env > "$CLAUDE_PROJECT_DIR/env.txt"`)))
	if _, err := h.run(t, "go", bash("true")); err != nil {
		t.Fatal(err)
	}
	env := h.read(t, "env.txt")
	if strings.Contains(env, "s3cret") || strings.Contains(env, "postgres://") || strings.Contains(env, "PLAIN_SETTING") ||
		!strings.Contains(env, "PATH=") || !strings.Contains(env, "CLAUDE_PROJECT_DIR="+h.ws) {
		t.Fatalf("hook environment:\n%s", env)
	}
}
