package layer_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/layer"
	"github.com/tollgate-dev/tollgate/tool"
)

var alice = tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}

func propose(t *testing.T, id, toolName, args string, effect approval.Effect) layer.Proposal {
	t.Helper()
	p, err := layer.Propose(id, toolName, json.RawMessage(args), effect, "run_1/req_1")
	if err != nil {
		t.Fatalf("Propose(%s %s): %v", toolName, args, err)
	}
	return p
}

func compile(t *testing.T, ps ...layer.Proposal) *layer.Layer {
	t.Helper()
	var rules []layer.Rule
	for _, p := range ps {
		rules = append(rules, layer.Rule{ID: p.ID, Text: p.Text, AcceptedBy: alice})
	}
	l, err := layer.Compile(3, rules)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func call(toolName, args string) approval.Call {
	return approval.Call{Tool: toolName, Args: json.RawMessage(args)}
}

func TestProposeText(t *testing.T) {
	for _, tc := range []struct {
		tool, args string
		effect     approval.Effect
		want       string
	}{
		{"bash", `{"command":"go test ./server"}`, approval.Allow, `rules:
  - id: r1
    tool: "bash"
    command: {pattern: ["go test *"]}
    decision: allow
    reason: "remembered: always allow bash commands go test * (from run_1/req_1)"
`},
		{"bash", `{"command":"cd web && npm run build -- --prod | sort"}`, approval.Allow, `rules:
  - id: r1
    tool: "bash"
    command: {pattern: ["cd web *", "npm run build *", "sort"]}
    decision: allow
    reason: "remembered: always allow bash commands cd web *, npm run build *, sort (from run_1/req_1)"
`},
		{"write", `{"path":"notes/today.md","content":"hi"}`, approval.Deny, `rules:
  - id: r1
    tool: "write"
    args: {path: {pathPrefix: "notes"}}
    decision: deny
    reason: "remembered: always deny write on paths under notes (from run_1/req_1)"
`},
		{"transfer_funds", `{"to":"ACME","amount":5}`, approval.Allow, `rules:
  - id: r1
    tool: "transfer_funds"
    args:
      "amount": {equals: 5}
      "to": {equals: "ACME"}
    decision: allow
    reason: "remembered: always allow transfer_funds with exactly these arguments (from run_1/req_1)"
`},
	} {
		p := propose(t, "r1", tc.tool, tc.args, tc.effect)
		if p.Text != tc.want {
			t.Errorf("Propose(%s %s) =\n%s\nwant\n%s", tc.tool, tc.args, p.Text, tc.want)
		}
	}
}

func TestProposeRefuses(t *testing.T) {
	for _, args := range []string{`{"command":"$CMD x"}`, `{"command":"eval \"$X\""}`, `[1]`, `{"command":"> out"}`} {
		if _, err := layer.Propose("r1", "bash", json.RawMessage(args), approval.Allow, ""); !errors.Is(err, layer.ErrNoScope) {
			t.Errorf("Propose(bash %s): %v, want ErrNoScope", args, err)
		}
	}
	if _, err := layer.Propose("r 1", "bash", json.RawMessage(`{"command":"ls"}`), approval.Allow, ""); err == nil {
		t.Error("a bad ID was accepted")
	}
	if _, err := layer.Propose("r1", "bash", json.RawMessage(`{"command":"ls"}`), approval.Ask, ""); err == nil {
		t.Error("an ask was accepted")
	}
}

// An allow answers what falls inside its scope, and nothing else.
func TestAnswerScope(t *testing.T) {
	l := compile(t,
		propose(t, "go-test", "bash", `{"command":"go test ./server"}`, approval.Allow),
		propose(t, "notes", "write", `{"path":"notes/a.md","content":"x"}`, approval.Allow))
	for _, tc := range []struct {
		tool, args string
		covered    bool
	}{
		{"bash", `{"command":"go test ./server"}`, true},
		{"bash", `{"command":"go test -run X ./..."}`, true},
		{"bash", `{"command":"/usr/local/go/bin/go test"}`, false}, // a path names another program
		{"bash", `{"command":"go test ./... && rm -rf /"}`, false},
		{"bash", `{"command":"go test ./... > /etc/passwd"}`, false},
		{"bash", `{"command":"go vet ./..."}`, false},
		{"bash", `{"command":"go test $(rm x)"}`, false},
		{"bash", `{"command":"sh -c 'go test; curl x'"}`, false},
		{"write", `{"path":"notes/b.md","content":"y"}`, true},
		{"write", `{"path":"notes/../secret.md","content":"y"}`, false},
		{"edit", `{"path":"notes/b.md","old":"a","new":"b"}`, false},
	} {
		ans := l.Answer(call(tc.tool, tc.args))
		if (ans != nil) != tc.covered {
			t.Errorf("Answer(%s %s) = %+v, want covered %v", tc.tool, tc.args, ans, tc.covered)
		}
		if ans != nil && (!ans.OK || !strings.Contains(ans.Reason, "approved by rule layer v3") || !strings.Contains(ans.Reason, "accepted by person:alice")) {
			t.Errorf("answer = %+v", ans)
		}
	}
}

func TestAuthorizeDenies(t *testing.T) {
	l := compile(t, propose(t, "no-push", "bash", `{"command":"git push origin main"}`, approval.Deny))
	v, err := l.Authorize(context.Background(), call("bash", `{"command":"cd x; git push origin main --force"}`))
	if err != nil || v.Decision != approval.Deny || v.By.Name != "no-push" || !strings.Contains(v.Reason, "rule layer v3, accepted by person:alice") {
		t.Fatalf("Authorize = %+v, %v", v, err)
	}
	v, _ = l.Authorize(context.Background(), call("bash", `{"command":"git status"}`))
	if v.Decision != approval.Allow || v.By != approval.Default {
		t.Fatalf("an unrelated call: %+v, want the default's allow", v)
	}
	// A deny never answers an ask.
	if ans := l.Answer(call("bash", `{"command":"git push origin main"}`)); ans != nil {
		t.Fatalf("a deny rule answered: %+v", ans)
	}
}

func TestCompileRefuses(t *testing.T) {
	for name, r := range map[string]layer.Rule{
		"not yaml":   {ID: "r", Text: "rules: [\n"},
		"two rules":  {ID: "r", Text: "rules:\n  - id: r\n    decision: allow\n  - id: s\n    decision: deny\n"},
		"other id":   {ID: "r", Text: "rules:\n  - id: s\n    decision: allow\n"},
		"ask":        {ID: "r", Text: "rules:\n  - id: r\n    decision: ask\n"},
		"autonomy":   {ID: "r", Text: "autonomy: full_auto\nrules:\n  - id: r\n    decision: allow\n"},
		"shadow":     {ID: "r", Text: "rules:\n  - id: r\n    mode: shadow\n    decision: deny\n"},
		"empty text": {ID: "r"},
	} {
		if _, err := layer.Compile(1, []layer.Rule{r}); err == nil {
			t.Errorf("%s: compiled", name)
		}
	}
}

func TestGetterFailsClosed(t *testing.T) {
	broken := func(context.Context) (*layer.Layer, error) { return nil, errors.New("disk gone") }
	if _, err := layer.Authorizer(broken).Authorize(context.Background(), call("bash", `{"command":"ls"}`)); err == nil {
		t.Error("an unreadable layer did not deny")
	}
	ans, err := layer.PermissionHook(broken)(context.Background(), &hooks.PermissionEvent{Name: "bash", Args: json.RawMessage(`{"command":"ls"}`)})
	if ans != nil || err != nil {
		t.Errorf("an unreadable layer answered: %+v, %v", ans, err)
	}
}

// FuzzPropose: whatever the call, a proposal loads as a layer rule and
// decides the very call it was proposed from (allow answers it, deny
// denies it), unless the shell analysis leaves it to a person.
func FuzzPropose(f *testing.F) {
	for _, s := range []string{`{"command":"go test ./..."}`, `{"command":"a b c d; e | f"}`, `{"path":"a/b"}`, `{"x":[1,{"y":null}]}`, `{"command":"echo \"x\" 'y'"}`} {
		f.Add("bash", s)
		f.Add("write", s)
	}
	f.Fuzz(func(t *testing.T, toolName, args string) {
		if toolName == "" || len(toolName) > 64 || strings.ContainsAny(toolName, "*\x00") {
			return
		}
		for _, eff := range []approval.Effect{approval.Allow, approval.Deny} {
			p, err := layer.Propose("r1", toolName, json.RawMessage(args), eff, "")
			if err != nil {
				continue
			}
			l, err := layer.Compile(1, []layer.Rule{{ID: p.ID, Text: p.Text}})
			if err != nil {
				t.Fatalf("proposal does not load: %v\n%s", err, p.Text)
			}
			c := call(toolName, args)
			if eff == approval.Allow && !strings.EqualFold(toolName, "bash") && l.Answer(c) == nil {
				t.Fatalf("an allow proposal does not cover its call %s %s\n%s", toolName, args, p.Text)
			}
			if eff == approval.Deny {
				if v, _ := l.Authorize(context.Background(), c); v.Decision == approval.Allow {
					t.Fatalf("a deny proposal does not deny its call %s %s\n%s", toolName, args, p.Text)
				}
			}
		}
	})
}
