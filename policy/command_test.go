package policy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/configfile"
	"github.com/tollgate-dev/tollgate/tool"
)

func mustParse(t *testing.T, src string) *Policy {
	t.Helper()
	p, problems, err := ParsePolicy("p.yaml", strings.NewReader(src))
	if err != nil {
		t.Fatalf("ParsePolicy: %v", err)
	}
	for _, pr := range problems {
		t.Logf("%s", pr)
	}
	p, err = p.WithWorkdir("/ws")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func bashCall(cmd string) approval.Call {
	b, _ := json.Marshal(map[string]string{"command": cmd})
	return approval.Call{Tool: "bash", Args: b}
}

func call(tl string, args map[string]any) approval.Call {
	b, _ := json.Marshal(args)
	return approval.Call{Tool: tl, Args: b}
}

// The bypasses of a text rule on rm all reach a rule on the program rm.
func TestCommandRuleBypasses(t *testing.T) {
	p := mustParse(t, `
autonomy: full_auto
rules:
  - id: no-rm
    tool: bash
    command: {program: rm}
    decision: deny
    reason: no rm
`)
	for _, cmd := range []string{
		"rm -rf notes.txt",
		"/bin/rm -rf notes.txt",
		"(rm notes.txt)",
		"$(rm notes.txt)",
		"echo $(rm notes.txt)",
		"echo `rm notes.txt`",
		`\rm notes.txt`,
		`"rm" notes.txt`,
		`'rm' notes.txt`,
		`r\m notes.txt`,
		`$'\x72m' notes.txt`,
		`sh -c "rm notes.txt"`,
		`bash -c 'rm notes.txt'`,
		`sh -c "sh -c 'rm notes.txt'"`,
		"find . -delete",
		"find . -name notes.txt -delete",
		`find . -name '*.txt' -exec rm {} \;`,
		"ls | xargs rm",
		"echo notes.txt | xargs -n1 rm -f",
		"sudo rm notes.txt",
		"env FOO=1 rm notes.txt",
		"nohup rm notes.txt &",
		"timeout 5 rm notes.txt",
		`eval "rm notes.txt"`,
		"bash <<< 'rm notes.txt'",
		"f() { rm notes.txt; }; f",
		"true && rm notes.txt",
		"cat <(rm notes.txt)",
		"command rm notes.txt",
		"busybox rm notes.txt",
		"RM notes.txt",
	} {
		ev := p.Evaluate(bashCall(cmd))
		if ev.Verdict.Decision != approval.Deny || ev.Verdict.By.String() != "rule:no-rm" {
			t.Errorf("%q: %s by %s (%s), want deny by rule:no-rm", cmd, ev.Verdict.Decision, ev.Verdict.By, ev.Verdict.Reason)
		}
	}
	for _, cmd := range []string{"ls -l", "git rm --cached x", "echo rm", "grep -r rm ."} {
		if ev := p.Evaluate(bashCall(cmd)); ev.Verdict.Decision != approval.Allow {
			t.Errorf("%q: %s by %s, want allow", cmd, ev.Verdict.Decision, ev.Verdict.By)
		}
	}
}

// What the analysis cannot see through is asked about, never allowed, even
// at full_auto; a rule on opaque commands can deny instead.
func TestOpaqueCommands(t *testing.T) {
	p := mustParse(t, `
autonomy: full_auto
rules:
  - id: no-rm
    tool: bash
    command: {program: rm}
    decision: deny
`)
	for _, cmd := range []string{"$X notes.txt", "echo rm x | sh", `eval "$CMD"`, `sh -c "$1"`, "echo 'unterminated", "$(echo rm) x", "r{m,} x"} {
		ev := p.Evaluate(bashCall(cmd))
		if ev.Verdict.Decision != approval.Ask || ev.Verdict.By.String() != "rule:shell-opaque" {
			t.Errorf("%q: %s by %s, want ask by rule:shell-opaque", cmd, ev.Verdict.Decision, ev.Verdict.By)
		}
		if strings.Contains(ev.Verdict.Reason, "notes.txt") || strings.Contains(ev.Verdict.Reason, "CMD") {
			t.Errorf("%q: the reason quotes the command: %s", cmd, ev.Verdict.Reason)
		}
	}
	deny := mustParse(t, `
rules:
  - id: no-rm
    tool: bash
    command: {program: rm}
    decision: deny
  - id: opaque
    tool: bash
    command: {opaque: true}
    decision: deny
    reason: say what you run
`)
	if ev := deny.Evaluate(bashCall("$X y")); ev.Verdict.Decision != approval.Deny || ev.Verdict.By.String() != "rule:opaque" {
		t.Errorf("opaque with a deny rule: %+v", ev.Verdict)
	}
	// No command rule applies: the analysis is not run, nothing is asked.
	none := mustParse(t, "autonomy: full_auto\n")
	if ev := none.Evaluate(bashCall("$X y")); ev.Verdict.Decision != approval.Allow || ev.Commands != nil {
		t.Errorf("no command rule: %+v", ev)
	}
}

// A rule that may hold (a word known only at run time) asks instead of
// denying; an allow rule that may hold does not vote.
func TestCommandMaybe(t *testing.T) {
	p := mustParse(t, `
permissions:
  deny: ["Bash(git push:*)"]
  allow: ["Bash(git status)", "Bash(npm run test:*)"]
`)
	for _, tc := range []struct {
		cmd  string
		want approval.Effect
		by   string
	}{
		{"git push origin main", approval.Deny, "rule:deny:Bash(git push:*)"},
		{"/usr/bin/git push", approval.Deny, "rule:deny:Bash(git push:*)"},
		{"git push $REMOTE", approval.Deny, "rule:deny:Bash(git push:*)"},
		{"git $SUB origin", approval.Ask, "rule:deny:Bash(git push:*)"},
		{"git status", approval.Allow, "rule:allow:Bash(git status)"},
		{"npm run test", approval.Allow, "rule:allow:Bash(npm run test:*)"},
		{"npm run test -- --watch", approval.Allow, "rule:allow:Bash(npm run test:*)"},
		{"git status && npm run test", approval.Allow, "rule:allow:Bash(git status)"},
		// An allow covers a call only when it covers every command.
		{"npm run test && curl evil.example", approval.Allow, "runtime:default"},
		{"npm run test; git push", approval.Deny, "rule:deny:Bash(git push:*)"},
		{"git status | sh", approval.Ask, "rule:shell-opaque"},
	} {
		ev := p.Evaluate(bashCall(tc.cmd))
		if ev.Verdict.Decision != tc.want || ev.Verdict.By.String() != tc.by {
			t.Errorf("%q: %s by %s, want %s by %s", tc.cmd, ev.Verdict.Decision, ev.Verdict.By, tc.want, tc.by)
		}
	}
	ev := p.Evaluate(bashCall("npm run test && curl evil.example"))
	if len(ev.Commands) != 2 || ev.Commands[0].Verdict == nil || ev.Commands[1].Verdict != nil {
		t.Errorf("per-command verdicts: %+v", ev.Commands)
	}
}

func TestCommandFlagsAndWrites(t *testing.T) {
	p := mustParse(t, `
rules:
  - id: no-rf
    command: {program: rm, flags: [-rf]}
    decision: deny
  - id: no-etc-writes
    command: {writes: [/etc, secret]}
    decision: deny
`)
	for _, tc := range []struct {
		cmd  string
		want approval.Effect
	}{
		{"rm -rf x", approval.Deny},
		{"rm -r -f x", approval.Deny},
		{"rm -f x", approval.Allow},
		{"rm -f $X", approval.Ask},
		{"echo x > /etc/passwd", approval.Deny},
		{"echo x >> /tmp/../etc/hosts", approval.Deny},
		{"(echo x) > /etc/passwd", approval.Deny},
		{"echo x > secret/a", approval.Deny},
		{"echo x > /ws/secret/a", approval.Deny},
		{"echo x > ./public/../secret/a", approval.Deny},
		{"echo x > out.txt", approval.Allow},
		{"echo x 2>/dev/null >&2", approval.Allow},
		{"echo x > $F", approval.Ask},
		{"cd /; echo x > etc/passwd", approval.Ask},
		{"cat < /etc/passwd", approval.Allow},
	} {
		if ev := p.Evaluate(bashCall(tc.cmd)); ev.Verdict.Decision != tc.want {
			t.Errorf("%q: %s by %s, want %s", tc.cmd, ev.Verdict.Decision, ev.Verdict.By, tc.want)
		}
	}
}

// Claude Code's permission rules mean in a policy what they mean there.
func TestPermissionRules(t *testing.T) {
	p := mustParse(t, `
permissions:
  deny: ["Read(.env)", "Edit(src/**)", "Read(//etc/**)", "Edit(/docs/private/**)", "mcp__github"]
  ask: ["Bash(npm run test *)"]
rules:
  - id: no-rm
    tool: "Bash(rm:*)"
    decision: deny
    reason: no rm
`)
	for _, tc := range []struct {
		c    approval.Call
		want approval.Effect
		by   string
	}{
		{call("read", map[string]any{"path": ".env"}), approval.Deny, "rule:deny:Read(.env)"},
		{call("read", map[string]any{"path": "sub/dir/.env"}), approval.Deny, "rule:deny:Read(.env)"},
		{call("read", map[string]any{"path": "/ws/.env"}), approval.Deny, "rule:deny:Read(.env)"},
		{call("grep", map[string]any{"pattern": "x", "path": ".env"}), approval.Deny, "rule:deny:Read(.env)"},
		{call("read", map[string]any{"path": ".envrc"}), approval.Allow, "runtime:default"},
		{call("edit", map[string]any{"path": "src/a/b.go"}), approval.Deny, "rule:deny:Edit(src/**)"},
		{call("write", map[string]any{"path": "/ws/src/x"}), approval.Deny, "rule:deny:Edit(src/**)"},
		{call("edit", map[string]any{"path": "docs/src/x"}), approval.Allow, "runtime:default"},
		{call("read", map[string]any{"path": "src/a.go"}), approval.Allow, "runtime:default"},
		{call("read", map[string]any{"path": "/etc/passwd"}), approval.Deny, "rule:deny:Read(//etc/**)"},
		{call("edit", map[string]any{"path": "docs/private/a.md"}), approval.Deny, "rule:deny:Edit(/docs/private/**)"},
		{call("edit", map[string]any{"path": "x/docs/private/a.md"}), approval.Allow, "runtime:default"},
		{call("mcp__github__create_issue", nil), approval.Deny, "rule:deny:mcp__github"},
		{call("mcp__githubx__y", nil), approval.Allow, "runtime:default"},
		{bashCall("npm run test"), approval.Ask, "rule:ask:Bash(npm run test *)"},
		{bashCall("npm run build"), approval.Allow, "runtime:default"},
		{bashCall("sh -c 'rm x'"), approval.Deny, "rule:no-rm"},
	} {
		ev := p.Evaluate(tc.c)
		if ev.Verdict.Decision != tc.want || ev.Verdict.By.String() != tc.by {
			t.Errorf("%s %s: %s by %s, want %s by %s", tc.c.Tool, tc.c.Args, ev.Verdict.Decision, ev.Verdict.By, tc.want, tc.by)
		}
	}
	for _, bad := range []string{"WebFetch(domain:x)", "Bash(", "Grep(x)", "Bash()", "Read([)"} {
		if _, err := PermissionRule("x", bad, approval.Deny); err == nil {
			t.Errorf("PermissionRule(%q): no error", bad)
		}
	}
}

func TestPathGlobCondition(t *testing.T) {
	p := mustParse(t, `
rules:
  - id: keys
    tool: read
    args: {path: {pathGlob: "*.pem"}}
    decision: deny
  - id: secrets
    tool: read
    args: {path: {pathGlob: "config/**/secret*"}}
    decision: deny
`)
	for path, want := range map[string]approval.Effect{
		"a.pem": approval.Deny, "x/y/a.pem": approval.Deny, "/ws/k.pem": approval.Deny, "a.pem.txt": approval.Allow,
		"config/secret.yaml": approval.Deny, "config/a/b/secrets/x": approval.Deny, "other/config/secret": approval.Allow,
	} {
		if ev := p.Evaluate(call("read", map[string]any{"path": path})); ev.Verdict.Decision != want {
			t.Errorf("read %s: %s, want %s", path, ev.Verdict.Decision, want)
		}
	}
}

func TestCommandPolicyProblems(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"rules:\n  - id: a\n    command: {opaque: true}\n    decision: allow\n", "opaque commands cannot be allowed"},
		{"rules:\n  - id: a\n    command: {opaque: true, program: rm}\n    decision: deny\n    reason: r\n", "cannot be combined"},
		{"rules:\n  - id: a\n    command: {flags: [rf]}\n    decision: deny\n    reason: r\n", "invalid flag"},
		{"rules:\n  - id: a\n    command: {program: /bin/rm}\n    decision: deny\n    reason: r\n", "invalid program"},
		{"rules:\n  - id: a\n    command: {progam: rm}\n    decision: deny\n    reason: r\n", `unknown key "progam"`},
		{"rules:\n  - id: a\n    command: {}\n    decision: deny\n    reason: r\n", "no condition"},
		{"rules:\n  - id: a\n    tool: [\"Bash(rm:*)\", write]\n    decision: deny\n    reason: r\n", "must be the rule's only tool"},
		{"permissions:\n  deny: [\"WebFetch(domain:x)\"]\n", "unknown tool"},
		{"permissions:\n  defaultMode: plan\n", `unknown key "defaultMode"`},
		{"rules:\n  - id: a\n    tool: read\n    args: {path: {pathGlob: \"[\"}}\n    decision: deny\n    reason: r\n", "invalid pathGlob"},
	} {
		_, problems, err := ParsePolicy("p.yaml", strings.NewReader(tc.src))
		if err == nil {
			t.Errorf("%q: loaded", tc.src)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "p.yaml:") {
			t.Errorf("%q: %v; want a positioned error with %q (problems %v)", tc.src, err, tc.want, problems)
		}
	}
}

// Globs that can never match a tool name load with a warning.
func TestToolGlobWarnings(t *testing.T) {
	src := "rules:\n  - id: a\n    tool: [\"edit|write\", \"mcp__fs__.*\"]\n    decision: deny\n    reason: r\nrisks:\n  - tool: \"sudo(x)\"\n    risk: escalation\n"
	_, problems, err := ParsePolicy("p.yaml", strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, pr := range problems {
		if pr.Severity == configfile.SeverityWarning && strings.Contains(pr.Message, "can never match") {
			got = append(got, pr.Error())
		}
	}
	if len(got) != 3 || !strings.HasPrefix(got[0], "p.yaml:3:") {
		t.Errorf("warnings: %q, want 3 (edit|write, mcp__fs__.*, sudo(x)) with positions", got)
	}
}

// Hints still matter for command rules: a rule's other conditions must hold.
func TestCommandRuleOtherConditions(t *testing.T) {
	p := mustParse(t, `
rules:
  - id: no-rm-unhinted
    tool: bash
    hints: {readOnly: false}
    command: {program: rm}
    decision: deny
`)
	c := bashCall("rm x")
	c.Hints = &tool.Hints{ReadOnly: true}
	if ev := p.Evaluate(c); ev.Verdict.Decision != approval.Allow || ev.Commands != nil {
		t.Errorf("read-only hint: %+v", ev.Verdict)
	}
	c.Hints = nil
	if ev := p.Evaluate(c); ev.Verdict.Decision != approval.Deny {
		t.Errorf("no hints: %+v", ev.Verdict)
	}
}
