package serveconfig_test

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/configfile"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/internal/serveconfig"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/server"
)

func writeFile(t testing.TB, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "server.yaml", `addr: 127.0.0.1:8080
tokens: tokens.yaml
storeKeyFile: decision.key
leaseTtl: 10s
agents:
  payer:
    model: script:script.yaml
    workdir: ws
    policy: policy.yaml
    autonomy: cautious
    approvalTtl: 1h
    sandbox: {bash: "off"}
  open:
    model: script:script.yaml
    workdir: ws2
  shared:
    tenants: [acme, globex]
    model: script:script.yaml
    workdir: ws3
`)
	c, err := serveconfig.LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	a := c.Agents["payer"]
	if c.Addr != "127.0.0.1:8080" || c.Store != "sqlite" || c.TokensFile != filepath.Join(dir, "tokens.yaml") || c.StoreKeyFile != filepath.Join(dir, "decision.key") || c.LeaseTTL != 10*time.Second ||
		a.Agent != "payer" || a.Model.Name != filepath.Join(dir, "script.yaml") || a.Workdir != filepath.Join(dir, "ws") ||
		a.PolicyFile != filepath.Join(dir, "policy.yaml") || a.Autonomy != "cautious" || time.Duration(a.ApprovalTTL) != time.Hour || a.Sandbox.Bash != "off" {
		t.Fatalf("config %+v, agent %+v", c, a)
	}
	if err := runcore.CheckConfig(a); err != nil {
		t.Fatal(err)
	}
	if len(c.AgentTenants) != 1 || strings.Join(c.AgentTenants["shared"], ",") != "acme,globex" {
		t.Fatalf("agent tenants %q", c.AgentTenants)
	}
}

// The durable: section: the URL from the variable databaseEnv names, or a
// sqlite: path relative to the file; zero concurrency enqueues only.
func TestLoadConfigDurable(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TOLLGATE_TEST_DBOS_URL", "postgres://tollgate@db:5432/tollgate")
	p := writeFile(t, dir, "server.yaml", "store: postgres\nagents:\n  a:\n    model: script:s\n    workdir: w\ndurable:\n  databaseEnv: TOLLGATE_TEST_DBOS_URL\n  deadAfter: 20s\n")
	c, err := serveconfig.LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if d := c.Durable; d == nil || d.DatabaseURL != "postgres://tollgate@db:5432/tollgate" || d.Concurrency != 0 || d.DeadAfter != 20*time.Second {
		t.Fatalf("durable %+v", c.Durable)
	}
	p = writeFile(t, dir, "server.yaml", "agents:\n  a:\n    model: script:s\n    workdir: w\ndurable:\n  database: sqlite:dbos.db\n  concurrency: 8\n  queue: q\n  queuePoll: 20ms\n")
	if c, err = serveconfig.LoadConfig(p); err != nil {
		t.Fatal(err)
	}
	if d := c.Durable; d == nil || d.DatabaseURL != "sqlite:"+filepath.Join(dir, "dbos.db") || d.Concurrency != 8 || d.Queue != "q" || d.QueuePoll != 20*time.Millisecond {
		t.Fatalf("durable %+v", c.Durable)
	}
	p = writeFile(t, dir, "server.yaml", "agents:\n  a:\n    model: script:s\n    workdir: w\n")
	if c, err = serveconfig.LoadConfig(p); err != nil || c.Durable != nil {
		t.Fatalf("without durable: %+v %v", c, err)
	}
}

// Every problem says file, line, column and field.
func TestLoadConfigErrors(t *testing.T) {
	t.Setenv("TOLLGATE_TEST_SECRET", "whsec_"+base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef")))
	cases := []struct{ name, body, want string }{
		{"unknown key", "agents:\n  a:\n    model: script:s\n    workdir: w\n    modle: x\n", `:5:5: agents.a.modle: unknown key "modle"; did you mean "model"?`},
		{"unknown sandbox key", "agents:\n  a:\n    model: script:s\n    workdir: w\n    sandbox:\n      bsh: \"off\"\n", `:6:7: agents.a.sandbox.bsh: unknown key "bsh"; did you mean "bash"?`},
		{"sandbox port", "agents:\n  a:\n    model: script:s\n    workdir: w\n    sandbox: {connect: [70000]}\n", `:5:25: agents.a.sandbox.connect[0]: `},
		{"bad model", "agents:\n  a:\n    model: gpt\n    workdir: w\n", ":3:12: agents.a.model: want openai:MODEL"},
		{"no workdir", "agents:\n  a:\n    model: script:s\n", ": agents.a.workdir: required"},
		{"empty tenants", "agents:\n  a:\n    model: script:s\n    workdir: w\n    tenants: []\n", ":5:14: agents.a.tenants: an empty list"},
		{"bad tenant", "agents:\n  a:\n    model: script:s\n    workdir: w\n    tenants: [\"a b\"]\n", ":5:15: agents.a.tenants: tenant \"a b\""},
		{"bad autonomy", "agents:\n  a:\n    model: script:s\n    workdir: w\n    autonomy: yolo\n", ":5:15: agents.a.autonomy:"},
		{"bad duration", "leaseTtl: soon\nagents:\n  a:\n    model: script:s\n    workdir: w\n", ":1:11: leaseTtl: want a duration"},
		{"bad store", "store: redis\nagents:\n  a:\n    model: script:s\n    workdir: w\n", ":1:8: store: want sqlite, postgres or memory"},
		{"no agents", "addr: 127.0.0.1:1\n", "agents: the configuration names no agent"},
		{"wrong type", "agents:\n  a:\n    model: script:s\n    workdir: w\n    maxTurns: many\n", ":5:15: agents.a.maxTurns: "},
		{"alias", "x: &a [1]\ny: *a\n", "alias"},
		{"too deep", strings.Repeat("[", 40) + strings.Repeat("]", 40), "nest"},
		{"webhook secret unset", "agents:\n  a:\n    model: script:s\n    workdir: w\nwebhooks:\n  - url: https://x\n    secretEnv: TOLLGATE_TEST_UNSET_SECRET\n", ":7:16: webhooks[0].secretEnv: the environment variable TOLLGATE_TEST_UNSET_SECRET is not set"},
		{"durable no database", "agents:\n  a:\n    model: script:s\n    workdir: w\ndurable:\n  concurrency: 2\n", ":6:3: durable.database: required"},
		{"durable env unset", "agents:\n  a:\n    model: script:s\n    workdir: w\ndurable:\n  databaseEnv: TOLLGATE_TEST_UNSET_DBOS\n", ":6:16: durable.databaseEnv: the environment variable TOLLGATE_TEST_UNSET_DBOS is not set"},
		{"durable both", "agents:\n  a:\n    model: script:s\n    workdir: w\ndurable:\n  database: sqlite:d.db\n  databaseEnv: X\n", "durable.database: database and databaseEnv are both set"},
		{"durable bad url", "agents:\n  a:\n    model: script:s\n    workdir: w\ndurable:\n  database: mysql://x\n", "durable.database: want postgres://"},
		{"durable negative", "agents:\n  a:\n    model: script:s\n    workdir: w\ndurable:\n  database: sqlite:d.db\n  concurrency: -1\n", ":7:16: durable.concurrency: must not be negative"},
		{"durable bad duration", "agents:\n  a:\n    model: script:s\n    workdir: w\ndurable:\n  database: sqlite:d.db\n  deadAfter: later\n", ":7:14: durable.deadAfter: want a duration"},
		{"durable memory store", "store: memory\nagents:\n  a:\n    model: script:s\n    workdir: w\ndurable:\n  database: sqlite:d.db\n", "store: memory cannot hold durable runs"},
		{"tag over a list", "agents:\n  a:\n    model: script:s\n    workdir: w\n    tenants: !x 0\n", ": the YAML decoder failed on this document"},
		{"webhook bad url", "agents:\n  a:\n    model: script:s\n    workdir: w\nwebhooks:\n  - url: ftp://x\n    secretEnv: TOLLGATE_TEST_SECRET\n", "webhooks[0]: webhook URL"},
		{"claudeCode bad autonomy", "claudeCode:\n  autonomy: yolo\n", ":2:13: claudeCode.autonomy:"},
		{"claudeCode bad ttl", "claudeCode:\n  approvalTtl: soon\n", ":2:16: claudeCode.approvalTtl: want a duration"},
		{"claudeCode bad hooksSandbox", "claudeCode:\n  hooksSandbox: none\n", `:2:17: claudeCode.hooksSandbox: sandbox mode "none": want off, workspace or read-only`},
		{"codex bad hooksSandbox", "codex:\n  hooksSandbox: Off\n", `:2:17: codex.hooksSandbox: sandbox mode "Off": want off, workspace or read-only`},
		{"bad timeout", "agents:\n  a:\n    model: script:s\n    workdir: w\n    timeout: soon\n", `:5:14: agents.a.timeout: want a duration such as 30s or 10m, got "soon"`},
		{"negative approvalTtl", "agents:\n  a:\n    model: script:s\n    workdir: w\n    approvalTtl: -1h\n", `:5:18: agents.a.approvalTtl: want a duration such as 30s or 10m, got "-1h"`},
		{"model not text", "agents:\n  a:\n    model: [x]\n    workdir: w\n", `:3:12: agents.a.model: want openai:MODEL, anthropic:MODEL or script:PATH, got a list`},
		{"no model", "agents:\n  a:\n    workdir: w\n", `: agents.a.model: want openai:MODEL, anthropic:MODEL or script:PATH, got ""`},
		{"model typo", "agents:\n  a:\n    model: opnai:gpt\n    workdir: w\n", `:3:12: agents.a.model: "opnai:gpt": unknown provider "opnai"; did you mean "openai"?`},
		{"baseUrl not text", "agents:\n  a:\n    model: openai:x\n    baseUrl: [u]\n    workdir: w\n", `:4:14: agents.a.baseUrl: want text, got a list`},
		{"version", "agents:\n  a:\n    model: script:s\n    workdir: w\n    version: 1\n", `:5:5: agents.a.version: a run sets its version when it starts; a configuration file does not`},
		{"pins", "agents:\n  a:\n    model: script:s\n    workdir: w\n    pins: 3\n", `:5:5: agents.a.pins: a run sets its pins when it starts; a configuration file does not`},
		{"answer", "agents:\n  a:\n    model: script:s\n    workdir: w\n    answer: yes\n", `:5:5: agents.a.answer: a run sets its answer when it starts`},
		{"requestDigest", "agents:\n  a:\n    model: script:s\n    workdir: w\n    requestDigest: sha256:x\n", `:5:5: agents.a.requestDigest: a run sets its requestDigest when it starts`},
		{"agent", "agents:\n  a:\n    model: script:s\n    workdir: w\n    agent: b\n", `:5:5: agents.a.agent: a run sets its agent when it starts`},
		{"claudeCode unknown key", "claudeCode:\n  polcy: p.yaml\n", `:2:3: claudeCode.polcy: unknown key "polcy"; did you mean "policy"?`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), "server.yaml", c.body)
			_, err := serveconfig.LoadConfig(p)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("error %v, want one naming %s with %q", err, p, c.want)
			}
		})
	}
}

func TestLoadTokens(t *testing.T) {
	dir := t.TempDir()
	tok, hash, err := serveconfig.NewToken()
	if err != nil || !strings.HasPrefix(tok, serveconfig.TokenPrefix) || hash != serveconfig.HashToken(tok) {
		t.Fatalf("NewToken: %q %q %v", tok, hash, err)
	}
	p := writeFile(t, dir, "tokens.yaml", "tokens:\n  - name: alice\n    tenant: acme\n    roles: [approver]\n    sha256: "+hash+"\n")
	tk, err := serveconfig.LoadTokens(p)
	if err != nil {
		t.Fatal(err)
	}
	if pr, ok := tk.Lookup(tok); !ok || pr.Name != "alice" || pr.Tenant != "acme" || !pr.Has(server.RoleApprover) || pr.Has(server.RoleOperator) {
		t.Fatalf("lookup: %+v %v", pr, ok)
	}
	if _, ok := tk.Lookup(hash); ok {
		t.Fatal("the hash itself authenticates")
	}
	// The entries alone, as appended to an empty file, load the same; a bad
	// one is reported at its line.
	p = writeFile(t, dir, "list.yaml", "  - name: alice\n    tenant: acme\n    roles: [approver]\n    sha256: "+hash+"\n")
	if tk, err := serveconfig.LoadTokens(p); err != nil {
		t.Fatal(err)
	} else if pr, ok := tk.Lookup(tok); !ok || pr.Name != "alice" || pr.Tenant != "acme" {
		t.Fatalf("list lookup: %+v %v", pr, ok)
	}
	p = writeFile(t, dir, "badlist.yaml", "- name: a\n  roles: [viewer]\n  sha256: "+hash+"\n- name: b\n  roles: [root]\n  sha256: "+hash+"\n")
	if _, err := serveconfig.LoadTokens(p); err == nil || !strings.Contains(err.Error(), p+":4:") || !strings.Contains(err.Error(), ": tokens[1]: ") {
		t.Errorf("bad list: %v", err)
	}
	p = writeFile(t, dir, "typo.yaml", "tokens:\n  - name: a\n    tenat: acme\n    roles: [viewer]\n    sha256: "+hash+"\n")
	if _, err := serveconfig.LoadTokens(p); err == nil || err.Error() != p+`:3:5: tokens[0].tenat: unknown key "tenat"; did you mean "tenant"?` {
		t.Errorf("misspelt key: %v", err)
	}
	for name, body := range map[string]string{
		"short hash":   "tokens:\n  - name: a\n    roles: [viewer]\n    sha256: abc\n",
		"unknown role": "tokens:\n  - name: a\n    roles: [root]\n    sha256: " + hash + "\n",
		"no name":      "tokens:\n  - roles: [viewer]\n    sha256: " + hash + "\n",
	} {
		p := writeFile(t, dir, "bad.yaml", body)
		if _, err := serveconfig.LoadTokens(p); err == nil || !strings.Contains(err.Error(), p+":2:") || !strings.Contains(err.Error(), ": tokens[0]: ") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:7777": true, "[::1]:80": true, "localhost:1": true, ":7777": false, "0.0.0.0:1": false, "10.0.0.1:1": false, "bad": false} {
		if got := serveconfig.Loopback(addr); got != want {
			t.Errorf("Loopback(%q) = %v", addr, got)
		}
	}
}

// FuzzLoadConfig: no input panics or hangs the loader; a config that loads
// has every agent's paths absolute.
func FuzzLoadConfig(f *testing.F) {
	f.Add("agents:\n  a:\n    model: script:s\n    workdir: w\n")
	f.Add("addr: 127.0.0.1:1\nstore: memory\nagents: {a: {model: 'openai:x', workdir: /w, sandbox: {connect: [80]}}}\n")
	f.Add("tokens:\n  - {name: a, roles: [viewer], sha256: x}\n")
	f.Add("gateway:\n  mcp: [m.json]\n  pageUrl: https://tg.example/\n  approvalTtl: 5m\n")
	f.Add("agents:\n  a:\n    model: openai:x\n    baseUrl: http://h\n    apiKeyEnv: K\n    workdir: w\n    timeout: 10m\n    approvalTtl: 1h\n    claude: {files: [c.json], timeout: 5s}\n")
	f.Add("agents:\n  a:\n    model: script:s\n    workdir: w\n    pins: [{path: /p}]\n    requestDigest: x\n")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, body string) {
		p := writeFile(t, dir, "server.yaml", body)
		c, err := serveconfig.LoadConfig(p)
		if err != nil {
			return
		}
		for _, a := range c.Agents {
			if err := runcore.CheckConfig(a); err != nil {
				t.Fatalf("loaded agent fails its check: %v", err)
			}
			if a.RequestDigest != "" || len(a.Pins) > 0 || a.Answer != "wait" || a.Model.Provider == "" {
				t.Fatalf("loaded agent %+v: a key a run binds was set, or no model", a)
			}
		}
		if g := c.Gateway; g != nil {
			for _, p := range append(append([]string{g.Workdir}, g.MCPFiles...), g.HooksFiles...) {
				if !filepath.IsAbs(p) {
					t.Fatalf("the gateway's path %q is not absolute", p)
				}
			}
		}
		_, _ = serveconfig.LoadTokens(p)
	})
}

// failingBuilder fails to build the agents it names, with its error.
type failingBuilder map[string]error

func (b failingBuilder) Build(ctx context.Context, cfg runs.RunConfig) (*runs.Built, error) {
	if err := b[cfg.Agent]; err != nil {
		return nil, err
	}
	return &runs.Built{Applied: runcore.GovernanceFields()}, nil
}

// CheckAgents finds a missing workspace and an agent that does not build at
// start, each at its line: at the field a builder's FieldError names, else
// at the agent.
func TestCheckAgents(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := writeFile(t, dir, "server.yaml", `agents:
  good:
    model: script:s.yaml
    workdir: ws
  nows:
    model: script:s.yaml
    workdir: missing
  badpolicy:
    model: script:s.yaml
    workdir: ws
    policy: policy.yaml
  other:
    model: script:s.yaml
    workdir: ws
`)
	c, err := serveconfig.LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	err = c.CheckAgents(t.Context(), failingBuilder{
		"badpolicy": &runs.FieldError{Field: "policy", Err: errors.New("open policy.yaml: no such file")},
		"other":     errors.New("no API key"),
	})
	var ce *configfile.Error
	if !errors.As(err, &ce) || len(ce.Problems) != 3 {
		t.Fatalf("CheckAgents: %v", err)
	}
	for i, want := range []string{
		p + ":11:13: agents.badpolicy.policy: open policy.yaml: no such file",
		p + ":7:14: agents.nows.workdir: the workspace " + filepath.Join(dir, "missing") + ": ",
		p + ":13:5: agents.other: the agent does not build: no API key",
	} {
		if !strings.HasPrefix(ce.Problems[i].Error(), want) {
			t.Errorf("problem %d: %q, want %q...", i, ce.Problems[i].Error(), want)
		}
	}
	delete(c.Agents, "nows")
	if err := c.CheckAgents(t.Context(), failingBuilder{}); err != nil {
		t.Fatalf("good agents: %v", err)
	}
}

// A builder that makes the agent from its model and tools alone is refused
// at start when an agent sets deny, policy or hooks: each is reported at its
// key, instead of the server running the calls they were written to stop.
func TestCheckAgentsRefusesUnappliedGovernance(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := writeFile(t, dir, "server.yaml", `agents:
  denier:
    model: script:s.yaml
    workdir: ws
    deny: [save_note]
  governed:
    model: script:s.yaml
    workdir: ws
    policy: policy.yaml
  plain:
    model: script:s.yaml
    workdir: ws
`)
	c, err := serveconfig.LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	modelOnly := runs.BuilderFunc(func(ctx context.Context, cfg runs.RunConfig) (*runs.Built, error) {
		return &runs.Built{}, nil
	})
	err = c.CheckAgents(t.Context(), modelOnly)
	var ce *configfile.Error
	if !errors.As(err, &ce) || len(ce.Problems) != 2 {
		t.Fatalf("CheckAgents: %v, want two problems", err)
	}
	for i, want := range []string{
		p + ":5:11: agents.denier.deny: set to [\"save_note\"], but the builder did not apply it",
		p + ":9:13: agents.governed.policy: set to \"" + filepath.Join(dir, "policy.yaml") + "\", but the builder did not apply it",
	} {
		if !strings.HasPrefix(ce.Problems[i].Error(), want) {
			t.Errorf("problem %d: %q, want %q...", i, ce.Problems[i].Error(), want)
		}
	}
	// A builder that lists what it applied passes.
	applied := runs.BuilderFunc(func(ctx context.Context, cfg runs.RunConfig) (*runs.Built, error) {
		return &runs.Built{Applied: []string{runcore.FieldDeny, runcore.FieldPolicyFile}}, nil
	})
	if err := c.CheckAgents(t.Context(), applied); err != nil {
		t.Fatalf("CheckAgents with Applied: %v", err)
	}
}

// A claudeCode: section alone is a configuration: its paths are resolved
// against the file's directory.
func TestLoadConfigClaudeCode(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "server.yaml", "claudeCode:\n  policy: team.yaml\n  hooks: [audit.yaml]\n  hooksSandbox: read-only\n  workdir: hooks\n  autonomy: supervised\n  approvalTtl: 1h\n  tenants: [acme]\n")
	c, err := serveconfig.LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	cc := c.ClaudeCode
	if cc == nil || cc.PolicyFile != filepath.Join(dir, "team.yaml") || len(cc.HooksFiles) != 1 || cc.HooksFiles[0] != filepath.Join(dir, "audit.yaml") ||
		cc.Autonomy != "supervised" || cc.ApprovalTTL != time.Hour || len(cc.Tenants) != 1 || cc.Tenants[0] != "acme" || len(c.Agents) != 0 || cc.HooksSandbox != "read-only" || cc.Workdir != filepath.Join(dir, "hooks") {
		t.Fatalf("claudeCode %+v, agents %v", cc, c.Agents)
	}
}

// A codex: section alone is a configuration too, with the fields of
// claudeCode:, and its errors name it.
func TestLoadConfigCodex(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "server.yaml", "codex:\n  policy: team.yaml\n  hooks: [audit.yaml]\n  autonomy: supervised\n  approvalTtl: 1h\n  tenants: [acme]\n")
	c, err := serveconfig.LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	cx := c.Codex
	if cx == nil || c.ClaudeCode != nil || cx.Workdir != dir || cx.PolicyFile != filepath.Join(dir, "team.yaml") || len(cx.HooksFiles) != 1 || cx.HooksFiles[0] != filepath.Join(dir, "audit.yaml") ||
		cx.Autonomy != "supervised" || cx.ApprovalTTL != time.Hour || len(cx.Tenants) != 1 || cx.Tenants[0] != "acme" {
		t.Fatalf("codex %+v", cx)
	}
	p = writeFile(t, dir, "bad.yaml", "codex:\n  approvalTtl: soon\n")
	if _, err := serveconfig.LoadConfig(p); err == nil || !strings.Contains(err.Error(), "codex.approvalTtl: want a duration") {
		t.Errorf("bad ttl: %v", err)
	}
}
