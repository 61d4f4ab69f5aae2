package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/builtin"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/tool"
	"github.com/tollgate-dev/tollgate/toolkit"
)

// A read refused by approval.CheckFile inside the tool (a link into a denied
// directory, a file with another name) was recorded as allowed by the
// runtime. The record now says denied by whoever refused the file, with its
// reason and a deny vote; a call whose tool skipped a refused file but
// succeeded stays allowed.
func TestFileRefusedByCheckFileIsRecordedDenied(t *testing.T) {
	ws := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("secret/key.txt", "s3cret\n")
	write("docs/note.txt", "hello\n")
	write("docs/twin.txt", "twin\n")
	// public leads into secret: the path as written does not show it, so
	// the authorizers allow it and only the check of the opened file refuses.
	if err := os.Symlink("secret", filepath.Join(ws, "public")); err != nil {
		t.Fatal(err)
	}
	// hl.txt is another name of docs/twin.txt.
	if err := os.Link(filepath.Join(ws, "docs", "twin.txt"), filepath.Join(ws, "hl.txt")); err != nil {
		t.Fatal(err)
	}
	const pol = `
rules:
  - id: no-secret
    tool: [read, grep, glob]
    args: {path: {pathPrefix: secret}}
    decision: deny
    reason: secret is off limits
`
	p, _, err := policy.ParsePolicy("p.yaml", strings.NewReader(pol))
	if err != nil {
		t.Fatal(err)
	}
	// guard judges the path it is given, as written at step 4 and as the real
	// path of the opened file in CheckFile.
	guard := approval.AuthorizerFunc(func(_ context.Context, c approval.Call) (approval.Verdict, error) {
		var in struct{ Path string }
		_ = json.Unmarshal(c.Args, &in)
		if strings.Contains(in.Path, "secret") {
			return approval.Verdict{Decision: approval.Deny, Reason: "no secrets", By: tool.Principal{Kind: tool.PrincipalRule, Name: "guard"}}, nil
		}
		return approval.Verdict{Decision: approval.Allow}, nil
	})
	azs := []approval.Authorizer{p, guard}
	bo := &builtin.Options{CheckFile: func(ctx context.Context, u builtin.FileUse) error {
		return approval.CheckFile(ctx, approval.Call{Tool: u.Tool, Args: u.Args, Hints: u.Hints}, u.Links, azs...)
	}}
	tk, err := toolkit.New(&toolkit.Options{Workdir: ws, Builtin: bo, Unconfined: true})
	if err != nil {
		t.Fatal(err)
	}
	var onRecord []gate.Record
	a := newAgent(t, agent.Options{
		Model: testkit.Script([]model.FuncCall{
			testkit.Call("link", "read", map[string]string{"path": "public/key.txt"}),
			testkit.Call("hardlink", "read", map[string]string{"path": "hl.txt"}),
			testkit.Call("plain", "read", map[string]string{"path": "docs/note.txt"}),
			testkit.Call("grep", "grep", map[string]string{"pattern": "hello|twin"}), // skips hl.txt
		}),
		Tools: tk, Authorizers: azs, MaxParallel: 1,
		OnRecord: func(_ context.Context, r gate.Record) { onRecord = append(onRecord, r) },
	})
	res, err := a.Run(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	if len(onRecord) != 4 {
		t.Fatalf("%d records handed to OnRecord, want 4", len(onRecord))
	}
	rule := func(name string) tool.Principal {
		return tool.Principal{Kind: tool.PrincipalRule, Name: name}
	}
	want := map[string]struct {
		output, reason string
		by             tool.Principal
	}{
		"link":     {"refused: public/key.txt leads to secret/key.txt: denied by rule:guard: no secrets", "no secrets", rule("guard")},
		"hardlink": {"refused: hl.txt: the file has 2 hard links", "the file has 2 hard links, and the policy judges read by path: another name of it may be one the policy denies", rule("no-secret")},
	}
	for _, rec := range append(res.ToolCalls, onRecord...) {
		d := rec.Decision
		w, refused := want[rec.ID]
		if !refused {
			if rec.IsError || d.Outcome != gate.OutcomeAllowed {
				t.Errorf("%s: %s by %s, error %v: %q", rec.ID, d.Outcome, d.By, rec.IsError, rec.Output)
			}
			if rec.ID == "grep" && (!strings.Contains(rec.Output, "note.txt:1: hello") || !strings.Contains(rec.Output, "not searched: refused")) {
				t.Errorf("grep did not skip the refused files and find the others: %q", rec.Output)
			}
			continue
		}
		if !rec.IsError || !strings.HasPrefix(rec.Output, w.output) {
			t.Fatalf("%s: output %q, want it to start with %q", rec.ID, rec.Output, w.output)
		}
		if d.Outcome != gate.OutcomeDenied || d.By != w.by || d.Reason != w.reason {
			t.Errorf("%s: decided %s by %s (%q), want denied by %s (%q)", rec.ID, d.Outcome, d.By, d.Reason, w.by, w.reason)
		}
		if n := len(d.Votes); n == 0 || d.Votes[n-1].Source != w.by || d.Votes[n-1].Decision != tool.VoteDeny {
			t.Errorf("%s: votes %+v, want a last deny vote by %s", rec.ID, d.Votes, w.by)
		}
		if !rec.Ran {
			t.Errorf("%s: Ran false; the tool ran and refused the file", rec.ID)
		}
	}
}
