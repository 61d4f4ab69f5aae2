package claudegate_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/claudegate"
	"github.com/tollgate-dev/tollgate/internal/claudenames"
	"github.com/tollgate-dev/tollgate/policy"
)

// A path through a link is judged at the file the kernel reaches: lnk/..
// is the parent of lnk's target, not the directory that holds lnk, and
// alias/.codex (alias -> .) is the workspace's own .codex, even when it
// does not exist yet. Each spelling below reaches a denied place; judged
// as text, each was allowed.
func TestCodexPatchPathsThroughLinks(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w, outside := filepath.Join(root, "w"), filepath.Join(root, "outside")
	for _, err := range []error{
		os.MkdirAll(filepath.Join(outside, "sub"), 0o755), os.MkdirAll(w, 0o755),
		os.Symlink(filepath.Join(outside, "sub"), filepath.Join(w, "lnk")),
		os.Symlink(".", filepath.Join(w, "alias")),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	pol, _, err := policy.ParsePolicy("policy.yaml", strings.NewReader("rules:\n  - id: not-outside\n    tool: apply_patch\n    args:\n      path: {pathPrefix: "+outside+"}\n    decision: deny\n    reason: outside is off limits\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := claudegate.New(&claudegate.Options{Policies: []*policy.Policy{pol}, StateDir: t.TempDir(), Source: gate.SourceCodex,
		Authorizers: []approval.Authorizer{claudegate.ProtectFiles(filepath.Join(w, ".codex"))}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"lnk/evil", "lnk/../evil", w + "/lnk/../evil", "alias/lnk/../x", ".codex/hooks.json", "alias/.codex/hooks.json", "alias/.codex/new/x"} {
		patch := "*** Begin Patch\n*** Add File: " + p + "\n+x\n*** End Patch\n"
		input, _ := json.Marshal(map[string]string{"command": patch})
		in := &claudegate.Input{SessionID: "s", Cwd: w, HookEventName: claudenames.PreToolUse, ToolName: "apply_patch", ToolInput: input, ToolUseID: "call_1"}
		a := claudegate.CodexAnswer(in.HookEventName, b.Handle(context.Background(), in))
		if a.Exit == 0 {
			t.Errorf("Add File: %s was allowed: %+v", p, a)
		}
		// Denied for where it lands, not for a patch that does not read.
		if !strings.Contains(a.Stderr, "outside is off limits") && !strings.Contains(a.Stderr, ".codex") {
			t.Errorf("Add File: %s denied for another reason: %q", p, a.Stderr)
		}
	}
}

// A Claude Code Write into .claude through a link to the workspace is the
// governing files' write it is: denied, though .claude does not exist yet.
func TestProtectFilesThroughALink(t *testing.T) {
	w, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".", filepath.Join(w, "alias")); err != nil {
		t.Fatal(err)
	}
	az := claudegate.ProtectFiles(filepath.Join(w, ".claude"))
	for _, p := range []string{w + "/.claude/settings.json", w + "/alias/.claude/settings.json", w + "/alias/alias/.claude/x/y"} {
		args, _ := json.Marshal(map[string]string{"path": p})
		v, err := az.Authorize(context.Background(), approval.Call{Tool: "Write", Args: args})
		if err != nil || v.Decision != approval.Deny {
			t.Errorf("write %s: %+v, %v", p, v, err)
		}
	}
	args, _ := json.Marshal(map[string]string{"path": w + "/alias/notes.txt"})
	if v, _ := az.Authorize(context.Background(), approval.Call{Tool: "Write", Args: args}); v.Decision == approval.Deny {
		t.Errorf("a file beside .claude was denied: %+v", v)
	}
}
