package policy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/builtin"
	"github.com/tollgate-dev/tollgate/internal/toolcall"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/tool"
)

// raceWorkspace builds ws/secret (denied by the policy) and ws/open, each
// with key.txt and a file only it holds, and a link ws/public that a
// goroutine swings between them until stop is called. The policy denies
// pathPrefix secret, with the workspace as its working directory and
// apply_patch's files as paths.
func raceWorkspace(t *testing.T) (ws string, pol *policy.Policy, stop func()) {
	t.Helper()
	ws = t.TempDir()
	for dir, content := range map[string]string{"secret": "SECRET-KEY\n", "open": "public\n"} {
		if err := os.Mkdir(filepath.Join(ws, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, dir, "key.txt"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, dir, "only-"+dir+".txt"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("open", filepath.Join(ws, "public")); err != nil {
		t.Fatal(err)
	}
	p, err := policy.NewPolicy(policy.PolicySpec{Rules: []policy.Rule{{ID: "no-secret", Args: []policy.ArgCondition{{Field: "path", PathPrefix: "secret"}}, Decision: approval.Deny, Reason: "secret is off limits"}}})
	if err != nil {
		t.Fatal(err)
	}
	if p, err = p.WithWorkdir(ws); err != nil {
		t.Fatal(err)
	}
	pol = p.WithPaths("apply_patch", builtin.PatchPaths)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tmp := filepath.Join(ws, ".swap")
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			target := "open"
			if i%2 == 1 {
				target = "secret"
			}
			_ = os.Remove(tmp)
			if os.Symlink(target, tmp) == nil {
				_ = os.Rename(tmp, filepath.Join(ws, "public")) // atomic: public always exists
			}
		}
	}()
	return ws, pol, func() { close(done); wg.Wait() }
}

// A symbolic link swapped between a call's authorization and its execution
// led the file tools to a denied directory (6 escapes in 300 tries). Each
// tool now judges the file it has opened (builtin.Options.CheckFile with
// approval.CheckFile): across many raced calls of every file tool, none
// reads, lists or changes anything under secret.
func TestLinkSwapRaceNeverEscapes(t *testing.T) {
	ws, pol, stop := raceWorkspace(t)
	defer stop()
	tools, err := builtin.New(ws, &builtin.Options{CheckFile: func(ctx context.Context, u builtin.FileUse) error {
		return approval.CheckFile(ctx, approval.Call{Tool: u.Tool, Args: u.Args, Hints: u.Hints}, u.Links, pol)
	}})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]tool.Tool{}
	for _, tl := range tools {
		byName[tl.Spec().Name] = tl
	}
	secret := filepath.Join(ws, "secret")
	type attempt struct {
		tool string
		args func(i int) any
	}
	attempts := []attempt{
		{"read", func(int) any { return map[string]any{"path": "public/key.txt"} }},
		{"grep", func(int) any { return map[string]any{"pattern": "KEY|public", "path": "public"} }},
		{"glob", func(int) any { return map[string]any{"pattern": "*", "path": "public"} }},
		{"write", func(i int) any { return map[string]any{"path": fmt.Sprintf("public/w%d.txt", i), "content": "x"} }},
		{"edit", func(int) any {
			return map[string]any{"path": "public/key.txt", "oldString": "KEY", "newString": "PWNED"}
		}},
		{"apply_patch", func(i int) any {
			return map[string]any{"patchText": fmt.Sprintf("*** Begin Patch\n*** Add File: public/p%d.txt\n+x\n*** End Patch\n", i)}
		}},
	}
	const tries = 400 // per tool
	ctx := context.Background()
	for _, a := range attempts {
		allowed, refused := 0, 0
		for i := range tries {
			args, _ := json.Marshal(a.args(i))
			hints := byName[a.tool].Spec().Hints
			// The decision, as the agent makes it before the tool runs.
			if pol.Evaluate(approval.Call{Tool: a.tool, Args: args, Hints: hints}).Verdict.Decision != approval.Allow {
				continue
			}
			allowed++
			res, err := byName[a.tool].Call(ctx, args)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(res.Output, "denied by rule:no-secret") {
				refused++
			}
			if strings.Contains(res.Output, "SECRET") || strings.Contains(res.Output, "only-secret") {
				t.Fatalf("%s %s escaped to secret: %q", a.tool, args, res.Output)
			}
		}
		t.Logf("%s: %d calls allowed, %d refused at the file", a.tool, allowed, refused)
	}
	entries, err := os.ReadDir(secret)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 2 {
		t.Errorf("files were created under secret: %v", names)
	}
	if b, _ := os.ReadFile(filepath.Join(secret, "key.txt")); string(b) != "SECRET-KEY\n" {
		t.Errorf("secret/key.txt changed: %q", b)
	}
}

// A hard link inside the workspace to a file under a denied pathPrefix was
// readable: no path shows the file's other name. Under a policy that judges
// the tool by path, a file with more than one link is refused; without such
// a rule it is read as before.
func TestHardLinkToDeniedFileIsRefused(t *testing.T) {
	ws := t.TempDir()
	if err := os.Mkdir(filepath.Join(ws, "secret"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "secret", "key.txt"), []byte("SECRET-KEY\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(ws, "secret", "key.txt"), filepath.Join(ws, "copy.txt")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		rule    policy.Rule
		refused bool
	}{
		{"path rule", policy.Rule{ID: "no-secret", Args: []policy.ArgCondition{{Field: "path", PathPrefix: "secret"}}, Decision: approval.Deny}, true},
		{"path rule for another tool", policy.Rule{ID: "no-secret", Tools: []string{"write"}, Args: []policy.ArgCondition{{Field: "path", PathPrefix: "secret"}}, Decision: approval.Deny}, false},
		{"no path rule", policy.Rule{ID: "no-bash", Tools: []string{"bash"}, Decision: approval.Deny}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol, err := policy.NewPolicy(policy.PolicySpec{Rules: []policy.Rule{tc.rule}})
			if err != nil {
				t.Fatal(err)
			}
			if pol, err = pol.WithWorkdir(ws); err != nil {
				t.Fatal(err)
			}
			tools, err := builtin.New(ws, &builtin.Options{CheckFile: func(ctx context.Context, u builtin.FileUse) error {
				return approval.CheckFile(ctx, approval.Call{Tool: u.Tool, Args: u.Args, Hints: u.Hints}, u.Links, pol)
			}})
			if err != nil {
				t.Fatal(err)
			}
			read, grep := tools[1], tools[4]
			res, err := read.Call(context.Background(), json.RawMessage(`{"path":"copy.txt"}`))
			if err != nil {
				t.Fatal(err)
			}
			if got := res.IsError && strings.Contains(res.Output, "2 hard links"); got != tc.refused || (tc.refused && strings.Contains(res.Output, "SECRET")) {
				t.Errorf("read copy.txt: %q, want refused=%v", res.Output, tc.refused)
			}
			res, err = grep.Call(context.Background(), json.RawMessage(`{"pattern":"KEY","include":"copy.txt"}`))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(res.Output, "SECRET"); got == tc.refused {
				t.Errorf("grep: %q, want refused=%v", res.Output, tc.refused)
			}
		})
	}
}

// apply_patch's files were not judged by path rules: its paths are inside
// the patch. With WithPaths(apply_patch, builtin.PatchPaths) each file the
// patch adds, updates, deletes or moves to is a "path" the rules see.
func TestApplyPatchPathsAreJudged(t *testing.T) {
	ws := t.TempDir()
	pol, err := policy.NewPolicy(policy.PolicySpec{Rules: []policy.Rule{
		{ID: "no-secret", Args: []policy.ArgCondition{{Field: "path", PathPrefix: "secret"}}, Decision: approval.Deny},
		{ID: "ask-docs", Args: []policy.ArgCondition{{Field: "path", PathGlob: "docs/**"}}, Decision: approval.Ask},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if pol, err = pol.WithWorkdir(ws); err != nil {
		t.Fatal(err)
	}
	without := pol
	pol = pol.WithPaths("apply_patch", builtin.PatchPaths)
	patch := func(body string) json.RawMessage {
		b, _ := json.Marshal(map[string]string{"patchText": "*** Begin Patch\n" + body + "*** End Patch\n"})
		return b
	}
	for _, tc := range []struct {
		args json.RawMessage
		want approval.Effect
		by   string
	}{
		{patch("*** Add File: ok.txt\n+x\n"), approval.Allow, "runtime:default"},
		{patch("*** Add File: ok.txt\n+x\n*** Add File: secret/k.txt\n+x\n"), approval.Deny, "rule:no-secret"},
		{patch("*** Delete File: ./secret/../secret/k.txt\n"), approval.Deny, "rule:no-secret"},
		{patch("*** Update File: a.txt\n*** Move to: secret/a.txt\n@@\n-a\n+b\n"), approval.Deny, "rule:no-secret"},
		{patch("*** Add File: docs/x.md\n+x\n"), approval.Ask, "rule:ask-docs"},
		{patch("*** Add File: docs/x.md\n+x\n*** Add File: secret/x\n+x\n"), approval.Deny, "rule:no-secret"},
		{json.RawMessage(`{"patchText":"not a patch"}`), approval.Allow, "runtime:default"},
	} {
		c := approval.Call{Tool: "apply_patch", Args: tc.args}
		if v := pol.Evaluate(c).Verdict; v.Decision != tc.want || v.By.String() != tc.by {
			t.Errorf("%s: %s by %s, want %s by %s", tc.args, v.Decision, v.By, tc.want, tc.by)
		}
		if tc.want != approval.Allow {
			if v := without.Evaluate(c).Verdict; v.Decision != approval.Allow {
				t.Errorf("%s without WithPaths: %s; the test shows nothing", tc.args, v.Decision)
			}
		}
	}
	if v := pol.Evaluate(approval.Call{Tool: "write", Args: json.RawMessage(`{"path":"secret/x"}`)}).Verdict; v.Decision != approval.Deny {
		t.Errorf("write secret/x: %s", v.Decision)
	}
}

type failingAuthorizer struct{}

func (failingAuthorizer) Authorize(context.Context, approval.Call) (approval.Verdict, error) {
	return approval.Verdict{By: tool.Principal{Kind: tool.PrincipalRule, Name: "broken"}}, fmt.Errorf("no verdict")
}

// CheckFile lets an ask through only for a call a person approved, refuses a
// deny and an authorizer's failure, and allows with no authorizer.
func TestCheckFileVerdicts(t *testing.T) {
	pol, err := policy.NewPolicy(policy.PolicySpec{Rules: []policy.Rule{
		{ID: "ask-docs", Args: []policy.ArgCondition{{Field: "path", PathPrefix: "/ws/docs"}}, Decision: approval.Ask, Reason: "docs need a person"},
		{ID: "no-secret", Args: []policy.ArgCondition{{Field: "path", PathPrefix: "/ws/secret"}}, Decision: approval.Deny, Reason: "off limits"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	call := func(p string) approval.Call {
		return approval.Call{Tool: "read", Args: json.RawMessage(`{"path":"` + p + `"}`)}
	}
	ctx := context.Background()
	approved := toolcall.WithAnswer(ctx, tool.Answer{ID: "req_1", OK: true, By: "ann"})
	declined := toolcall.WithAnswer(ctx, tool.Answer{ID: "req_1", OK: false})
	for _, tc := range []struct {
		ctx  context.Context
		path string
		azs  []approval.Authorizer
		want string // "" for nil
	}{
		{ctx, "/ws/a.txt", []approval.Authorizer{pol}, ""},
		{ctx, "/ws/docs/a.md", []approval.Authorizer{pol}, "rule:ask-docs asks a person about this file (docs need a person), and no one approved this call for it"},
		{declined, "/ws/docs/a.md", []approval.Authorizer{pol}, "no one approved"},
		{approved, "/ws/docs/a.md", []approval.Authorizer{pol}, ""},
		{approved, "/ws/secret/k", []approval.Authorizer{pol}, "denied by rule:no-secret: off limits"},
		{ctx, "/ws/a.txt", []approval.Authorizer{pol, failingAuthorizer{}}, "broken failed: no verdict"},
		{ctx, "/ws/secret/k", nil, ""},
	} {
		err := approval.CheckFile(tc.ctx, call(tc.path), 1, tc.azs...)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.path, err, tc.want)
		}
	}
}
