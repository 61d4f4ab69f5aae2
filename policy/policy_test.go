package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/configfile"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/tool"
)

func TestRiskOf(t *testing.T) {
	tests := []struct {
		hints *tool.Hints
		want  approval.Risk
	}{
		{nil, approval.RiskUnknown},
		{&tool.Hints{ReadOnly: true}, approval.RiskReadOnly},
		{&tool.Hints{ReadOnly: true, Destructive: true}, approval.RiskReadOnly},
		{&tool.Hints{ReadOnly: true, OpenWorld: true}, approval.RiskNetwork},
		{&tool.Hints{Destructive: true, OpenWorld: true}, approval.RiskDestructive},
		{&tool.Hints{OpenWorld: true}, approval.RiskNetwork},
		{&tool.Hints{}, approval.RiskWrite},
		{&tool.Hints{Idempotent: true}, approval.RiskWrite},
	}
	for _, tt := range tests {
		if got := approval.RiskOf(tt.hints); got != tt.want {
			t.Errorf("RiskOf(%v) = %s, want %s", tt.hints, got, tt.want)
		}
	}
}

// The documented matrix, pinned cell by cell.
func TestAutonomyMatrix(t *testing.T) {
	want := map[approval.Risk][4]approval.Effect{
		approval.RiskReadOnly:    {"allow", "allow", "allow", "ask"},
		approval.RiskWrite:       {"allow", "allow", "ask", "ask"},
		approval.RiskNetwork:     {"allow", "ask", "ask", "ask"},
		approval.RiskDestructive: {"allow", "ask", "ask", "ask"},
		approval.RiskUnknown:     {"allow", "ask", "ask", "ask"},
		approval.RiskEscalation:  {"deny", "deny", "deny", "deny"},
	}
	got := map[approval.Risk][4]approval.Effect{}
	for _, r := range policy.Risks {
		var row [4]approval.Effect
		for i, a := range policy.Autonomies {
			row[i] = policy.AutonomyDecision(a, r)
		}
		got[r] = row
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("matrix (-want +got):\n%s", d)
	}
	// Monotone: no level is looser than the one before it.
	for _, r := range policy.Risks {
		for i := 1; i < len(policy.Autonomies); i++ {
			rank := map[approval.Effect]int{approval.Allow: 0, approval.Ask: 1, approval.Deny: 2}
			if rank[policy.AutonomyDecision(policy.Autonomies[i-1], r)] > rank[policy.AutonomyDecision(policy.Autonomies[i], r)] {
				t.Errorf("%s is looser than %s for %s", policy.Autonomies[i], policy.Autonomies[i-1], r)
			}
		}
	}
	if policy.AutonomyDecision("yolo", approval.RiskReadOnly) != approval.Deny || policy.AutonomyDecision(approval.FullAuto, "weird") != approval.Deny {
		t.Error("an invalid level or risk must fail closed")
	}
}

const testPolicy = `
autonomy: supervised
risks:
  - tool: "sudo*"
    risk: escalation
  - tool: "mcp__docs__*"
    risk: read_only
rules:
  - id: no-etc
    tool: ["read_file", "write_*"]
    args:
      path: {pathPrefix: /etc}
    decision: deny
    reason: /etc is off limits
  - id: no-rm-rf
    tool: bash
    args:
      cmd: {regex: 'rm\s+-(rf|fr)'}
    decision: deny
    reason: no recursive deletes
  - id: ask-destructive
    hints: {destructive: true}
    decision: ask
    reason: destructive tools need a person
  - id: prod-deploys
    tool: deploy
    args:
      options.env: {equals: prod}
      replicas: {equals: 3}
    decision: deny
    reason: no prod deploys with 3 replicas
  - id: allow-git
    tool: bash
    args:
      cmd: {prefix: "git "}
    decision: allow
    reason: git is fine
`

func mustPolicy(t testing.TB, src string) *policy.Policy {
	t.Helper()
	p, probs, err := policy.ParsePolicy("test.yaml", strings.NewReader(src))
	if err != nil {
		t.Fatalf("ParsePolicy: %v", err)
	}
	for _, pr := range probs {
		t.Logf("%s", pr)
	}
	return p
}

func TestPolicyEvaluate(t *testing.T) {
	p := mustPolicy(t, testPolicy)
	ro := &tool.Hints{ReadOnly: true}
	write := &tool.Hints{}
	destr := &tool.Hints{Destructive: true}
	tests := []struct {
		name  string
		call  approval.Call
		want  approval.Verdict
		risk  approval.Risk
		votes int
	}{
		{"read allowed", approval.Call{Tool: "read_file", Hints: ro, Args: json.RawMessage(`{"path":"notes.txt"}`)},
			approval.Verdict{Decision: approval.Allow, By: tool.Principal{Kind: "autonomy", Name: "supervised"}, Reason: "read_only risk at autonomy supervised: allow"}, approval.RiskReadOnly, 1},
		{"etc denied", approval.Call{Tool: "read_file", Hints: ro, Args: json.RawMessage(`{"path":"/etc/shadow"}`)},
			approval.Verdict{Decision: approval.Deny, By: tool.Principal{Kind: "rule", Name: "no-etc"}, Reason: "/etc is off limits"}, approval.RiskReadOnly, 2},
		{"etc via dot-dot denied", approval.Call{Tool: "READ_FILE", Hints: ro, Args: json.RawMessage(`{"path":"/tmp/../etc/passwd"}`)},
			approval.Verdict{Decision: approval.Deny, By: tool.Principal{Kind: "rule", Name: "no-etc"}, Reason: "/etc is off limits"}, approval.RiskReadOnly, 2},
		{"etcetera is not etc", approval.Call{Tool: "read_file", Hints: ro, Args: json.RawMessage(`{"path":"/etcetera"}`)},
			approval.Verdict{Decision: approval.Allow, By: tool.Principal{Kind: "autonomy", Name: "supervised"}, Reason: "read_only risk at autonomy supervised: allow"}, approval.RiskReadOnly, 1},
		{"rm -rf denied", approval.Call{Tool: "bash", Hints: destr, Args: json.RawMessage(`{"cmd":"cd / && rm  -fr x"}`)},
			approval.Verdict{Decision: approval.Deny, By: tool.Principal{Kind: "rule", Name: "no-rm-rf"}, Reason: "no recursive deletes"}, approval.RiskDestructive, 3},
		{"allow rule does not lower the ask", approval.Call{Tool: "bash", Hints: destr, Args: json.RawMessage(`{"cmd":"git status"}`)},
			approval.Verdict{Decision: approval.Ask, By: tool.Principal{Kind: "rule", Name: "ask-destructive"}, Reason: "destructive tools need a person"}, approval.RiskDestructive, 3},
		{"no hints: MCP defaults make it destructive", approval.Call{Tool: "mystery", Args: json.RawMessage(`{}`)},
			approval.Verdict{Decision: approval.Ask, By: tool.Principal{Kind: "rule", Name: "ask-destructive"}, Reason: "destructive tools need a person"}, approval.RiskUnknown, 2},
		{"declared read_only", approval.Call{Tool: "mcp__docs__search", Hints: &tool.Hints{ReadOnly: true}},
			approval.Verdict{Decision: approval.Allow, By: tool.Principal{Kind: "autonomy", Name: "supervised"}, Reason: "read_only risk at autonomy supervised: allow"}, approval.RiskReadOnly, 1},
		{"escalation always denied", approval.Call{Tool: "sudo_run", Hints: ro},
			approval.Verdict{Decision: approval.Deny, By: tool.Principal{Kind: "autonomy", Name: "supervised"}, Reason: "escalation is denied at every autonomy level"}, approval.RiskEscalation, 1},
		{"nested equals, numbers by value", approval.Call{Tool: "deploy", Hints: write, Args: json.RawMessage(`{"options":{"env":"prod"},"replicas":3.0}`)},
			approval.Verdict{Decision: approval.Deny, By: tool.Principal{Kind: "rule", Name: "prod-deploys"}, Reason: "no prod deploys with 3 replicas"}, approval.RiskWrite, 2},
		{"equals needs every condition", approval.Call{Tool: "deploy", Hints: write, Args: json.RawMessage(`{"options":{"env":"prod"},"replicas":2}`)},
			approval.Verdict{Decision: approval.Allow, By: tool.Principal{Kind: "autonomy", Name: "supervised"}, Reason: "write risk at autonomy supervised: allow"}, approval.RiskWrite, 1},
		{"regex on a non-string never holds", approval.Call{Tool: "bash", Hints: write, Args: json.RawMessage(`{"cmd":["rm","-rf","/"]}`)},
			approval.Verdict{Decision: approval.Allow, By: tool.Principal{Kind: "autonomy", Name: "supervised"}, Reason: "write risk at autonomy supervised: allow"}, approval.RiskWrite, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := p.Evaluate(tt.call)
			if d := cmp.Diff(tt.want, ev.Verdict); d != "" {
				t.Errorf("verdict (-want +got):\n%s", d)
			}
			if ev.Risk != tt.risk || len(ev.Verdicts) != tt.votes {
				t.Errorf("risk %s with %d verdicts %+v, want %s with %d", ev.Risk, len(ev.Verdicts), ev.Verdicts, tt.risk, tt.votes)
			}
			v, err := p.Authorize(context.Background(), tt.call)
			if err != nil || v != ev.Verdict {
				t.Errorf("Authorize = %+v, %v; want the evaluation's verdict", v, err)
			}
		})
	}
}

func TestPolicyWithoutAutonomy(t *testing.T) {
	p := mustPolicy(t, `
rules:
  - id: no-destructive
    hints: {destructive: true}
    decision: deny
    reason: destructive tools are denied
`)
	v := p.Evaluate(approval.Call{Tool: "t", Hints: &tool.Hints{ReadOnly: true}}).Verdict
	if v.Decision != approval.Allow || v.By.String() != "runtime:default" {
		t.Errorf("no rule and no autonomy: %+v, want allow by default", v)
	}
	q, err := p.WithAutonomy(approval.Manual)
	if err != nil {
		t.Fatal(err)
	}
	if v := q.Evaluate(approval.Call{Tool: "t", Hints: &tool.Hints{ReadOnly: true}}).Verdict; v.Decision != approval.Ask || v.By.String() != "autonomy:manual" {
		t.Errorf("with manual: %+v, want ask by autonomy:manual", v)
	}
	if p.Spec().Autonomy != "" {
		t.Error("WithAutonomy changed the original")
	}
	if _, err := p.WithAutonomy("yolo"); err == nil {
		t.Error("WithAutonomy accepted an unknown level")
	}
}

func TestNewPolicyErrors(t *testing.T) {
	_, err := policy.NewPolicy(policy.PolicySpec{
		Name:     "inline",
		Autonomy: "yolo",
		Rules: []policy.Rule{
			{ID: "a", Decision: "maybe"},
			{ID: "a", Decision: approval.Deny, Args: []policy.ArgCondition{{Field: "cmd", Regex: "("}}},
			{Decision: approval.Allow, Tools: []string{""}},
		},
	})
	if err == nil {
		t.Fatal("NewPolicy accepted a broken spec")
	}
	for _, want := range []string{"inline", `"yolo"`, `"maybe"`, `duplicate id "a"`, "bad regex", "missing id", "invalid tool glob"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

func TestParsePolicyProblems(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
		ok   bool
	}{
		{"syntax error", "rules: [\n  - id: x\n", []string{"p.yaml:1:8: error: sequence end token"}, false},
		{"duplicate key", "autonomy: manual\nautonomy: cautious\n", []string{"p.yaml:2:1: error: "}, false},
		{"unknown top key", "autonomy: manual\nrule: []\n", []string{`p.yaml:2:1: error: unknown key "rule"`}, false},
		{"unknown autonomy", "autonomy: yolo\n", []string{`p.yaml:1:11: error: unknown autonomy level "yolo"`}, false},
		{"rules not a list", "rules: {id: x}\n", []string{"p.yaml:1:8: error: rules must be a list, not a mapping"}, false},
		{"rule problems", `rules:
  - id: r1
    tool: bash
    decison: deny
  - id: r1
    tool: "*"
    decision: nope
    args:
      cmd: {regex: "a(", other: 1}
      "a..b": {equals: 1}
      path: {prefix: ""}
    hints: {readOnly: "yes"}
`, []string{
			`p.yaml:2:5: error: rule "r1" needs a decision`,
			`p.yaml:4:5: error: unknown key "decison" in a rule; did you mean "decision"?`,
			`p.yaml:5:9: error: duplicate rule id "r1" (first on line 2)`,
			`p.yaml:7:15: error: unknown decision "nope"`,
			`p.yaml:9:20: error: argument "cmd": bad regex`,
			`p.yaml:9:26: error: unknown condition "other" on argument "cmd"`,
			`p.yaml:10:7: error: argument field "a..b" has an empty path segment`,
			`p.yaml:11:22: error: prefix is empty`,
			`p.yaml:12:23: error: hint readOnly must be true or false, not a string`,
		}, false},
		{"risk problems", "risks:\n  - tool: x\n    risk: spicy\n  - risk: write\n", []string{
			`p.yaml:3:11: error: unknown risk "spicy"`,
			`p.yaml:4:5: error: a risk declaration needs tool and risk`,
		}, false},
		{"alias", "autonomy: &a manual\nrules:\n  - id: x\n    tool: *a\n    decision: deny\n    reason: r\n", []string{`p.yaml:4:11: error: YAML aliases are not supported`}, false},
		{"warnings only", `rules:
  - id: everything
    decision: deny
`, []string{
			`p.yaml:2:9: warning: rule "everything" has no condition`,
			`p.yaml:3:15: warning: rule "everything" denies without a reason`,
		}, true},
		{"empty", "# nothing\n", []string{"p.yaml: warning: empty policy"}, true},
		{"two documents", "autonomy: manual\n---\nautonomy: cautious\n", []string{"p.yaml:3:"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, probs, err := policy.ParsePolicy("p.yaml", strings.NewReader(tt.src))
			var got []string
			for _, pr := range probs {
				got = append(got, pr.Error())
			}
			if len(got) != len(tt.want) {
				t.Fatalf("problems:\n%s\nwant %d:\n%s", strings.Join(got, "\n"), len(tt.want), strings.Join(tt.want, "\n"))
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Errorf("problem %d = %q, want prefix %q", i, got[i], tt.want[i])
				}
			}
			if tt.ok != (err == nil) || tt.ok != (p != nil) {
				t.Fatalf("policy %v, err %v; want ok=%v", p, err, tt.ok)
			}
			var pe *configfile.Error
			if !tt.ok && (!errors.As(err, &pe) || len(pe.Problems) == 0) {
				t.Errorf("err %T does not carry the problems", err)
			}
		})
	}
}

func TestLoadPolicyMissingFile(t *testing.T) {
	_, _, err := policy.LoadPolicy(t.TempDir() + "/nope.yaml")
	var pe *configfile.Error
	if err == nil || errors.As(err, &pe) {
		t.Errorf("err = %v, want an I/O error", err)
	}
}

// FuzzParsePolicy: no input panics; a policy loads exactly when there is no
// error problem; every problem has a position inside the input or none; a
// loaded policy evaluates any call.
func FuzzParsePolicy(f *testing.F) {
	f.Add(testPolicy)
	f.Add("autonomy: manual\n")
	f.Add("rules:\n  - id: a\n    tool: x\n    decision: deny\n    reason: r\n")
	f.Add("rules:\n  - id: a\n    tool: bash\n    command: {program: rm, flags: [-rf], writes: [/etc]}\n    decision: deny\n    reason: r\npermissions:\n  deny: [\"Read(.env)\", \"Bash(git push:*)\"]\n")
	f.Add("elicitation:\n  - id: e\n    server: \"git*\"\n    trusted: false\n    decision: deny\n    reason: r\n")
	f.Fuzz(func(t *testing.T, src string) {
		p, probs, err := policy.ParsePolicy("f.yaml", strings.NewReader(src))
		hasErr := false
		lines := strings.Count(src, "\n") + 1
		for _, pr := range probs {
			if pr.Severity == configfile.SeverityError {
				hasErr = true
			}
			if pr.Line < 0 || pr.Line > lines+1 || pr.Col < 0 {
				t.Errorf("problem outside the input (%d lines): %s", lines, pr)
			}
		}
		if hasErr != (err != nil) || (p == nil) != (err != nil) {
			t.Fatalf("policy %v, err %v, error problems %v", p, err, hasErr)
		}
		if p != nil {
			for _, c := range []approval.Call{
				{Tool: "bash", Args: json.RawMessage(`{"cmd":"rm -rf /","path":"/etc/x","options":{"env":"prod"}}`)},
				{Tool: "read_file", Hints: &tool.Hints{ReadOnly: true}},
				{Tool: "bash", Args: json.RawMessage(`{"command":"sh -c 'rm x' | $X > /etc/y; git push $R"}`)},
				{Tool: "read", Args: json.RawMessage(`{"path":"a/.env"}`)},
			} {
				v := p.Evaluate(c).Verdict
				if !v.Decision.Valid() || v.By.String() == "" {
					t.Errorf("invalid verdict %+v", v)
				}
			}
		}
	})
}

// A read-only tool whose destructive hint is set (the MCP default fills it in
// when a read-only tool omits it) is not matched by `destructive: true`.
func TestDestructiveConditionIgnoresReadOnlyTools(t *testing.T) {
	pol, problems, err := policy.ParsePolicy("p.yaml", strings.NewReader("rules:\n  - id: ask-destructive\n    hints: {destructive: true}\n    decision: ask\n"))
	if err != nil {
		t.Fatal(err, problems)
	}
	for _, tc := range []struct {
		hints *tool.Hints
		want  approval.Effect
	}{
		{&tool.Hints{ReadOnly: true, Destructive: true}, approval.Allow},
		{&tool.Hints{Destructive: true}, approval.Ask},
		{nil, approval.Ask}, // unknown: the MCP defaults, destructive
	} {
		v, _ := pol.Authorize(context.Background(), approval.Call{Tool: "read_file", Hints: tc.hints, Args: []byte(`{}`)})
		if v.Decision != tc.want {
			t.Errorf("hints %v: %s, want %s", tc.hints, v.Decision, tc.want)
		}
	}
}

// With a working directory, a relative pathPrefix also covers absolute and
// dotted spellings of the same file, as the builtin tools resolve them.
func TestPathPrefixWithWorkdir(t *testing.T) {
	pol, problems, err := policy.ParsePolicy("p.yaml", strings.NewReader("rules:\n  - id: no-secret\n    args: {path: {pathPrefix: secret}}\n    decision: deny\n    reason: no\n"))
	if err != nil {
		t.Fatal(err, problems)
	}
	if _, err := pol.WithWorkdir("relative/dir"); err == nil {
		t.Error("a relative workdir was accepted")
	}
	ws, err := pol.WithWorkdir("/tmp/pp/ws")
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]approval.Effect{
		"secret/a.txt":               approval.Deny,
		"./secret/a.txt":             approval.Deny,
		"sub/../secret/a.txt":        approval.Deny,
		"/tmp/pp/ws/secret/a.txt":    approval.Deny,
		"/tmp/pp/ws/x/../secret/a":   approval.Deny,
		"/tmp/pp/ws/secrets/a.txt":   approval.Allow,
		"/tmp/pp/other/secret/a.txt": approval.Allow,
		"notes.txt":                  approval.Allow,
	} {
		args, _ := json.Marshal(map[string]string{"path": p})
		v, _ := ws.Authorize(context.Background(), approval.Call{Tool: "read", Args: args, Hints: &tool.Hints{ReadOnly: true}})
		if v.Decision != want {
			t.Errorf("path %q: %s, want %s", p, v.Decision, want)
		}
	}
	// Another spelling of the workspace (through a symbolic link) is covered too.
	aliased, err := pol.WithWorkdir("/tmp/pp/ws", "/tmp/pp/link")
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]approval.Effect{"/tmp/pp/link/secret/a.txt": approval.Deny, "/tmp/pp/link/notes": approval.Allow, "/tmp/pp/linked/secret": approval.Allow} {
		args, _ := json.Marshal(map[string]string{"path": p})
		if v, _ := aliased.Authorize(context.Background(), approval.Call{Tool: "read", Args: args}); v.Decision != want {
			t.Errorf("aliased path %q: %s, want %s", p, v.Decision, want)
		}
	}
	// Without a workdir the absolute spelling is not covered: paths compare as written.
	v, _ := pol.Authorize(context.Background(), approval.Call{Tool: "read", Args: json.RawMessage(`{"path":"/tmp/pp/ws/secret/a.txt"}`)})
	if v.Decision != approval.Allow {
		t.Errorf("without workdir: %s", v.Decision)
	}
}
