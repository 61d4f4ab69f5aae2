package claudegate_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/claudegate"
	"github.com/tollgate-dev/tollgate/internal/claudenames"
	"github.com/tollgate-dev/tollgate/policy"
)

const patchPolicyYAML = `rules:
  - id: no-secrets
    tool: apply_patch
    args:
      path: {pathPrefix: secret}
    decision: deny
    reason: secrets are off limits
  - id: not-etc
    tool: apply_patch
    args:
      path: {pathPrefix: /etc}
    decision: deny
    reason: not the system's files
`

// A Codex apply_patch is judged by every file its patch touches, with the
// policy's path rules as a run judges tollgate's apply_patch (a relative
// path against the session's workspace) and with the files that govern
// the agent, which it may not change; a patch tollgate cannot read is
// denied.
func TestCodexApplyPatchJudgedByPath(t *testing.T) {
	pol, _, err := policy.ParsePolicy("policy.yaml", strings.NewReader(patchPolicyYAML))
	if err != nil {
		t.Fatal(err)
	}
	b, err := claudegate.New(&claudegate.Options{Policies: []*policy.Policy{pol}, StateDir: t.TempDir(), Source: gate.SourceCodex,
		Authorizers: []approval.Authorizer{claudegate.ProtectFiles("/w/.codex")}})
	if err != nil {
		t.Fatal(err)
	}
	add := func(path string) string {
		return "*** Begin Patch\n*** Update File: notes.txt\n@@\n-a\n+b\n*** Add File: " + path + "\n+x\n*** End Patch\n"
	}
	for _, c := range []struct{ patch, want string }{
		{add("src/main.go"), ""},
		{add("secret/key.txt"), "secrets are off limits"},
		{add("/w/secret/key.txt"), "secrets are off limits"},
		{add("/etc/cron.d/job"), "not the system's files"},
		{add("../../etc/cron.d/job"), "not the system's files"},
		{add(".codex/hooks.json"), "governs this agent"},
		{"*** Begin Patch\n*** Update File: a.txt\n*** End Patch\n", "could not read the files"},
		{"rm -rf /", "could not read the files"},
	} {
		input, _ := json.Marshal(map[string]string{"command": c.patch})
		in := &claudegate.Input{SessionID: "s", Cwd: "/w", HookEventName: claudenames.PreToolUse, ToolName: "apply_patch", ToolInput: input, ToolUseID: "call_1"}
		a := claudegate.CodexAnswer(in.HookEventName, b.Handle(context.Background(), in))
		switch {
		case c.want == "" && a.Exit != 0:
			t.Errorf("%q: denied (%s), want no objection", c.patch, a.Stderr)
		case c.want != "" && (a.Exit != 2 || !strings.Contains(a.Stderr, c.want)):
			t.Errorf("%q: exit %d %q, want a deny saying %q", c.patch, a.Exit, a.Stderr, c.want)
		}
	}
}
