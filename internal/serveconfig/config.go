package serveconfig

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/internal/bounded"
	"github.com/tollgate-dev/tollgate/internal/configread"
	"github.com/tollgate-dev/tollgate/internal/glob"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/sandbox"
	"github.com/tollgate-dev/tollgate/server"
)

// Limits of the configuration and tokens files, checked before they are
// parsed.
const (
	MaxConfigBytes = 1 << 20 // bytes
	MaxConfigDepth = 16      // nested lists and mappings, the top level counting 1
)

// Config is a server configuration file (server.yaml), as read by
// [LoadConfig]:
//
//	addr: 127.0.0.1:7777          # default; a non-loopback address needs tokens
//	stateDir: /var/lib/tollgate   # the store's directory (default: the command's state directory)
//	store: sqlite                 # sqlite (default, in stateDir), postgres (the command's --store or
//	                              # $TOLLGATE_STORE_URL, shared by several servers) or memory (nothing survives a restart)
//	tokens: tokens.yaml           # bearer tokens by SHA-256 (see LoadTokens)
//	storeKeyFile: /etc/tollgate/decision.key  # the store's decision key (default: decision.key in stateDir);
//	                              # every server and worker of one PostgreSQL store needs the same
//	leaseTtl: 30s                 # a run's lease without a heartbeat
//	shutdownGrace: 30s            # how long running runs get to finish or halt on SIGTERM
//	agents:
//	  payer:                      # POST /v1/runs {"agent": "payer", ...}
//	    tenants: [acme]           # the tenants that may see and start it (default: every tenant)
//	    model: openai:gpt-4.1-mini  # or anthropic:MODEL, script:PATH
//	    baseUrl: ""               # the model API's root, default the vendor's
//	    apiKeyEnv: ""             # the variable holding the key, default the provider's
//	    workdir: /srv/ws          # the workspace of the builtin tools (required)
//	    system: "..."
//	    maxTurns: 20
//	    timeout: 10m
//	    deny: [webfetch]
//	    hooks: [hooks.yaml]       # seed 000's declarative hooks
//	    policy: policy.yaml
//	    autonomy: supervised      # full_auto | supervised | cautious | manual
//	    approvalTtl: 1h
//	    mcp: [mcp.json]
//	    records: records.jsonl
//	    sandbox: {bash: workspace, hooks: workspace, read: [], connect: [], passEnv: []}
//	    claude: {files: [settings.json], project: false, failModes: [], timeout: 30s}
//	durable:                      # durable runs, driven by workers (see DurableConfig)
//	  databaseEnv: TOLLGATE_DBOS_URL  # DBOS's system database URL (postgres://… or sqlite:FILE); or database: URL
//	  concurrency: 0              # runs this server drives itself; 0: it only enqueues and answers
//	webhooks:                     # Standard Webhooks, signed; see Webhook
//	  - url: https://hooks.example.com/tollgate
//	    secretEnv: TOLLGATE_WEBHOOK_SECRET   # the variable holding the whsec_ secret (never the secret itself)
//	    tenant: acme
//	    events: ["approval.*", "run.finished"]
//
// An agent's workspace, files and keys serve every run of it: an agent
// with tenants: exists only for principals of those tenants (to another
// tenant GET /v1/agents leaves it out and POST /v1/runs answers 404, as
// for an unknown agent). An agent without tenants: is open to every
// tenant; `tollgate serve` warns when the tokens file has several.
//
// An agent's keys (but tenants:) are those of its run configuration
// that a configuration file sets ([runs.AgentConfig]'s yaml tags), decoded
// into it; the keys a run sets when it starts ([runcore.BoundKeys]:
// version, agent, answer, requestDigest, pins) are refused.
//
// Relative paths are relative to the configuration file's directory. Unknown
// keys, values of the wrong type, an agent without model or workdir, an
// unknown autonomy level and durations that do not parse are errors, each
// reported as FILE:LINE:COL: field: message; a file with any error does not
// load.
type Config struct {
	// File is the configuration's path, absolute.
	File string
	// Addr is the address to listen on.
	Addr string
	// StateDir is the store's directory, absolute, or empty for the caller's default.
	StateDir string
	// Store is "sqlite", "postgres" or "memory".
	Store string
	// TokensFile is the tokens file, absolute, or empty.
	// StoreKeyFile is the file of the store's decision key
	// (storeimpl.LoadDecisionKey), absolute, or empty for the caller's default.
	StoreKeyFile string
	TokensFile   string
	// LeaseTTL and ShutdownGrace are zero for the defaults.
	LeaseTTL      time.Duration
	ShutdownGrace time.Duration
	// Agents are the agents' run configurations, resolved (every path
	// absolute), by name.
	Agents map[string]runs.RunConfig
	// AgentTenants are the tenants: of the agents that have them, by name
	// (see server.Options.AgentTenants); an agent absent is open to every tenant.
	AgentTenants map[string][]string
	// Webhooks are the outbound webhooks, their secrets read from the
	// environment variables the file names.
	Webhooks []server.Webhook
	// Durable is the durable: section, or nil for runs driven by the
	// server itself.
	Durable *DurableConfig
	// ClaudeCode is the claudeCode: section, or nil when the server does
	// not govern Claude Code.
	ClaudeCode *ClaudeCodeConfig
	// Codex is the codex: section, with the same fields, or nil when the
	// server does not govern Codex (POST /v1/hooks/codex, `tollgate codex
	// hook --server`).
	Codex *ClaudeCodeConfig
	// Gateway is the gateway: section, or nil when the server serves no
	// MCP clients.
	Gateway *GatewayConfig

	// syntax is the file's syntax tree, for the positions of later problems.
	syntax *ast.File
}

// configKeys maps the JSON names of [runs.RunConfig] fields that differ
// from their keys in server.yaml to those keys.
var configKeys = map[string]string{
	runcore.FieldPolicyFile: "policy", runcore.FieldHooksFiles: "hooks", runcore.FieldMCPFiles: "mcp",
	runcore.FieldRecordsFile: "records", "model.baseUrl": "baseUrl", "model.apiKeyEnv": "apiKeyEnv",
	"model.name": "model", "model.provider": "model",
}

// configKey returns the server.yaml key of a [runs.FieldError]'s field
// ("policyFile" is at policy:, "sandbox.bash" at sandbox.bash:).
func configKey(field string) string {
	if k, ok := configKeys[field]; ok {
		return k
	}
	return field
}

// CheckAgents checks every agent before the server starts, so that a
// missing workspace or policy file, or a policy, hooks or MCP file that
// does not load, stops the start rather than failing the first run: each
// agent's workdir must be a directory, and each agent is built once with b
// and closed. Problems are a [*configfile.Error], each FILE:LINE:COL:
// agents.NAME.FIELD: message (the field's position when b's error is a
// [*runs.FieldError], the agent's otherwise).
func (c *Config) CheckAgents(ctx context.Context, b runs.Builder) error {
	ps := &problems{path: c.File, f: c.syntax}
	for _, name := range slices.Sorted(maps.Keys(c.Agents)) {
		cfg := c.Agents[name]
		base := "$.agents." + name
		if fi, err := os.Stat(cfg.Workdir); err != nil || !fi.IsDir() {
			msg := "not a directory"
			if err != nil {
				msg = err.Error()
			}
			ps.add(base+".workdir", "agents."+name+".workdir", "the workspace %s: %s", cfg.Workdir, msg)
			continue
		}
		built, err := b.Build(ctx, cfg)
		if err == nil {
			// An agent built without the governance its keys ask for
			// (deny, policy, hooks, mcp, records, sandbox) is refused here,
			// at its key, not at its first run.
			if err = runcore.CheckBuilt(cfg, built); err != nil && built.Close != nil {
				_ = built.Close()
			}
		}
		if err != nil {
			if key, msg := buildErrorKey(err); key != "" {
				ps.add(base+"."+key, "agents."+name+"."+key, "%s", msg)
			} else {
				ps.add(base, "agents."+name, "the agent does not build: %v", err)
			}
			continue
		}
		if built != nil && built.Close != nil {
			if err := built.Close(); err != nil {
				ps.add(base, "agents."+name, "closing the agent built to check it: %v", err)
			}
		}
	}
	return ps.err()
}

// buildErrorKey returns the server.yaml key of an agent's build error and
// what is wrong with it: the key a [*runs.FieldError]'s field is read from
// (configKey: "policy" for "policyFile"; a server.yaml key is itself). It
// returns "" for an error about no one field.
func buildErrorKey(err error) (key, msg string) {
	if rfe, ok := errors.AsType[*runs.FieldError](err); ok {
		return configKey(rfe.Field), rfe.Err.Error()
	}
	return "", ""
}

// AgentProblem returns an error of building agent name's run
// configuration as the user wrote it: "FILE:LINE:COL: agents.NAME.KEY:
// MESSAGE", KEY the server.yaml key of the field it is about, as
// [Config.CheckAgents] reports it (server.Options.AgentProblem). Without c
// (an agent not loaded from a file) it is "KEY: MESSAGE"; an error about
// no one field is its text.
func (c *Config) AgentProblem(name string, err error) string {
	key, msg := buildErrorKey(err)
	switch {
	case key == "":
		return err.Error()
	case c == nil || c.syntax == nil:
		return key + ": " + msg
	}
	ps := &problems{path: c.File, f: c.syntax}
	ps.add("$.agents."+name+"."+key, "agents."+name+"."+key, "%s", msg)
	return ps.list.List()[0].Error()
}

// DurableConfig is the durable: section of a server configuration: the
// runs the server starts are durable runs (runcore.Durable) on a DBOS queue,
// driven by `tollgate worker` processes and, when Concurrency is above
// zero, by the server's own process too. The command wires it
// (server.Options.Durable); the keys mirror `tollgate worker`'s:
//
//	durable:
//	  database: postgres://…      # DBOS's system database, or sqlite:FILE on one machine
//	  databaseEnv: TOLLGATE_DBOS_URL  # instead of database: the variable holding the URL
//	  queue: tollgate-runs        # the workers' queue (default)
//	  concurrency: 0              # runs this process drives at once; 0 (default): none, it
//	                              # enqueues, answers and cancels, and workers drive the runs
//	  executorId: server-a        # this process's name to DBOS (default: hostname, PID, random)
//	  heartbeat: 5s               # with concurrency above 0, as for a worker
//	  deadAfter: 30s
//	  answerPoll: 30s
//	  queuePoll: 50ms             # how often an idle worker with SQLite looks for runs
//
// The store must be one the workers share (sqlite in the same state
// directory on one machine, postgres for many); store: memory is refused.
type DurableConfig struct {
	// DatabaseURL is DBOS's system database: the value of database, or of
	// the variable databaseEnv names (a relative sqlite: path is resolved
	// against the configuration's directory). It may hold a password: it
	// is never logged.
	DatabaseURL string
	// Queue is the queue's name, "" for the engine's default.
	Queue string
	// Concurrency is how many runs this process drives at once; 0 makes
	// the server enqueue only.
	Concurrency int
	// ExecutorID names this process to DBOS, "" for the engine's default.
	ExecutorID string
	// Heartbeat, DeadAfter, AnswerPoll and QueuePoll are zero for the
	// engine's defaults.
	Heartbeat, DeadAfter, AnswerPoll, QueuePoll time.Duration
}

// DefaultAddr is the address a configuration without addr listens on.
const DefaultAddr = "127.0.0.1:7777"

type configYAML struct {
	Addr          string               `yaml:"addr"`
	StateDir      string               `yaml:"stateDir"`
	Store         string               `yaml:"store"`
	Tokens        string               `yaml:"tokens"`
	StoreKeyFile  string               `yaml:"storeKeyFile"`
	LeaseTTL      string               `yaml:"leaseTtl"`
	ShutdownGrace string               `yaml:"shutdownGrace"`
	Agents        map[string]agentYAML `yaml:"agents"`
	Webhooks      []webhookYAML        `yaml:"webhooks"`
	Durable       *durableYAML         `yaml:"durable"`
	ClaudeCode    *claudeCodeYAML      `yaml:"claudeCode"`
	Codex         *claudeCodeYAML      `yaml:"codex"`
	Gateway       *gatewayYAML         `yaml:"gateway"`
}

type gatewayYAML struct {
	MCP          []string `yaml:"mcp"`
	Policy       string   `yaml:"policy"`
	Hooks        []string `yaml:"hooks"`
	HooksSandbox string   `yaml:"hooksSandbox"`
	Records      string   `yaml:"records"`
	Pins         string   `yaml:"pins"`
	Workdir      string   `yaml:"workdir"`
	ApprovalTTL  string   `yaml:"approvalTtl"`
	PageURL      string   `yaml:"pageUrl"`
	Tenants      []string `yaml:"tenants"`
}

// GatewayConfig is the gateway: section of server.yaml: the MCP gateway
// mounted at /mcp (when it names mcp files), and the asks of external
// gateways (`tollgate gateway --server`), each client session a run on
// the approvals page (docs/gateway.md).
//
//	gateway:
//	  mcp: [mcp.json]             # the upstream servers; none: external gateways only
//	  policy: gateway-policy.yaml # decides every tools/call
//	  hooks: [audit.yaml]         # seed 000's declarative hooks
//	  hooksSandbox: workspace     # their commands' sandbox: workspace (default), read-only, off
//	  records: mcp-calls.jsonl    # one JSON line per call
//	  pins: mcp-pins.json         # the rug-pull pins, across starts
//	  workdir: /srv/work          # relative paths in the policy; the sandbox of stdio servers
//	  approvalTtl: 10m            # how long a call waits for a person (default 10m)
//	  pageUrl: https://tg.example/ # the page's URL in the links sent to clients
//	  tenants: [acme]             # the tenants whose agent tokens may use it (default: all)
type GatewayConfig struct {
	// MCPFiles, PolicyFile, HooksFiles, RecordsFile, PinsFile and Workdir
	// are absolute paths (or empty); Workdir defaults to the directory of
	// server.yaml.
	MCPFiles    []string
	PolicyFile  string
	HooksFiles  []string
	RecordsFile string
	PinsFile    string
	Workdir     string
	// HooksSandbox confines the hooks' commands as a run's sandbox.hooks
	// does (workspace, read-only, off); empty means workspace.
	HooksSandbox string
	// ApprovalTTL is zero for the gateway's default.
	ApprovalTTL time.Duration
	PageURL     string
	Tenants     []string
}

type claudeCodeYAML struct {
	Policy       string   `yaml:"policy"`
	Hooks        []string `yaml:"hooks"`
	HooksSandbox string   `yaml:"hooksSandbox"`
	Workdir      string   `yaml:"workdir"`
	Autonomy     string   `yaml:"autonomy"`
	ApprovalTTL  string   `yaml:"approvalTtl"`
	Tenants      []string `yaml:"tenants"`
}

// ClaudeCodeConfig is the claudeCode: section of server.yaml: how the
// server decides the calls of the Claude Code sessions whose hooks it
// answers (POST /v1/hooks/claude-code, `tollgate claude-code hook
// --server`), so that the team's policy lives where the agent cannot
// edit it.
//
//	claudeCode:
//	  policy: team-policy.yaml    # the team's policy (rules, permissions, autonomy)
//	  hooks: [audit.yaml]         # seed 000's declarative hooks
//	  hooksSandbox: workspace     # their commands' sandbox: workspace (default), read-only, off
//	  workdir: /srv/hooks         # their working directory, the tree they write (default: the directory of server.yaml)
//	  autonomy: supervised        # overrides the policy's level
//	  approvalTtl: 1h             # how long a request stays answerable
//	  tenants: [acme]             # the tenants whose agent tokens may use it (default: all)
type ClaudeCodeConfig struct {
	// PolicyFile and HooksFiles are absolute paths (or empty).
	PolicyFile string
	HooksFiles []string
	// HooksSandbox confines the hooks' commands as a run's sandbox.hooks
	// does (workspace: they write only in Workdir; read-only; off); empty
	// means workspace.
	HooksSandbox string
	// Workdir is the hooks' commands' working directory and workspace,
	// absolute (default: the directory of server.yaml).
	Workdir  string
	Autonomy string
	// ApprovalTTL is zero for none.
	ApprovalTTL time.Duration
	Tenants     []string
}

type durableYAML struct {
	Database    string `yaml:"database"`
	DatabaseEnv string `yaml:"databaseEnv"`
	Queue       string `yaml:"queue"`
	Concurrency int    `yaml:"concurrency"`
	ExecutorID  string `yaml:"executorId"`
	Heartbeat   string `yaml:"heartbeat"`
	DeadAfter   string `yaml:"deadAfter"`
	AnswerPoll  string `yaml:"answerPoll"`
	QueuePoll   string `yaml:"queuePoll"`
}

type webhookYAML struct {
	URL       string   `yaml:"url"`
	SecretEnv string   `yaml:"secretEnv"`
	Tenant    string   `yaml:"tenant"`
	Events    []string `yaml:"events"`
}

// agentYAML is an agent's section of server.yaml: the tenants that may
// use it and what a configuration file sets of its run configuration,
// whose yaml tags are the section's keys (the keys a run binds,
// [runcore.BoundKeys], are refused before).
type agentYAML struct {
	Tenants          []string `yaml:"tenants"`
	runs.AgentConfig `yaml:",inline"`
	// decodeErr is the decoder's error about one of the agent's values,
	// reported with the file's other problems.
	decodeErr error
}

// UnmarshalYAML decodes an agent's section, keeping the decoder's error
// in decodeErr rather than stopping the file's decoding at it.
func (a *agentYAML) UnmarshalYAML(n ast.Node) error {
	type plain agentYAML // its fields without this method
	var p plain
	if err := yaml.NodeToValue(n, &p, yaml.DisallowUnknownField()); err != nil {
		*a = agentYAML{decodeErr: err}
		return nil
	}
	*a = agentYAML(p)
	return nil
}

// decodeStrict reads a bounded YAML file into v, refusing unknown keys
// (each with the key probably meant), aliases and duplicate keys; errors
// are a *configfile.Error with FILE:LINE:COL.
func decodeStrict(path string, v any) (*ast.File, error) {
	src, err := configread.ReadFile(path, bounded.Limits{MaxBytes: MaxConfigBytes})
	if err != nil {
		return nil, err
	}
	return configread.DecodeYAML(path, src, v, bounded.Limits{MaxBytes: MaxConfigBytes, MaxDepth: MaxConfigDepth})
}

// problems collects positioned problems of one file.
type problems struct {
	path string
	f    *ast.File
	list configread.Problems
}

// add records a problem about field at the node yamlPath names
// ("$.agents.NAME.model"), or about the whole file when f has no such node.
func (p *problems) add(yamlPath, field, format string, args ...any) {
	p.list.File = p.path
	p.list.Add(configread.PathPos(p.f, yamlPath), field, format, args...)
}

func (p *problems) err() error { return p.list.Err() }

// LoadConfig reads and checks a server configuration file (see [Config]).
func LoadConfig(path string) (*Config, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	var y configYAML
	f, err := decodeConfig(abs, &y)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(abs)
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	ps := &problems{path: abs, f: f}
	c := &Config{syntax: f, File: abs, Addr: y.Addr, StateDir: rel(y.StateDir), Store: y.Store, TokensFile: rel(y.Tokens), StoreKeyFile: rel(y.StoreKeyFile), Agents: map[string]runs.RunConfig{}, AgentTenants: map[string][]string{}}
	if c.Addr == "" {
		c.Addr = DefaultAddr
	} else if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		ps.add("$.addr", "addr", "want HOST:PORT, e.g. 127.0.0.1:7777: %v", err)
	}
	switch c.Store {
	case "":
		c.Store = "sqlite"
	case "sqlite", "postgres", "memory":
	default:
		ps.add("$.store", "store", "want sqlite, postgres or memory, got %q", c.Store)
	}
	duration := func(yp, field, v string) time.Duration {
		if v == "" {
			return 0
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			ps.add(yp, field, "want a duration such as 30s or 10m, got %q", v)
			return 0
		}
		return d
	}
	c.LeaseTTL = duration("$.leaseTtl", "leaseTtl", y.LeaseTTL)
	c.ShutdownGrace = duration("$.shutdownGrace", "shutdownGrace", y.ShutdownGrace)
	if len(y.Agents) == 0 && y.ClaudeCode == nil && y.Codex == nil && y.Gateway == nil {
		ps.add("$", "agents", "the configuration names no agent; add one under agents: (or a claudeCode:, codex: or gateway: section)")
	}
	hookSection := func(name string, cc *claudeCodeYAML) *ClaudeCodeConfig {
		if cc == nil {
			return nil
		}
		out := &ClaudeCodeConfig{PolicyFile: rel(cc.Policy), Autonomy: cc.Autonomy, Tenants: cc.Tenants, HooksSandbox: cc.HooksSandbox,
			Workdir: rel(cmp.Or(cc.Workdir, ".")), ApprovalTTL: duration("$."+name+".approvalTtl", name+".approvalTtl", cc.ApprovalTTL)}
		for _, h := range cc.Hooks {
			out.HooksFiles = append(out.HooksFiles, rel(h))
		}
		checkHooksSandbox(ps, name, cc.HooksSandbox)
		if cc.Autonomy != "" {
			if _, err := approval.ParseAutonomy(cc.Autonomy); err != nil {
				ps.add("$."+name+".autonomy", name+".autonomy", "%v", err)
			}
		}
		return out
	}
	c.ClaudeCode = hookSection("claudeCode", y.ClaudeCode)
	c.Codex = hookSection("codex", y.Codex)
	if g := y.Gateway; g != nil {
		c.Gateway = &GatewayConfig{PolicyFile: rel(g.Policy), RecordsFile: rel(g.Records), PinsFile: rel(g.Pins),
			Workdir: rel(cmp.Or(g.Workdir, ".")), PageURL: g.PageURL, Tenants: g.Tenants, HooksSandbox: g.HooksSandbox,
			ApprovalTTL: duration("$.gateway.approvalTtl", "gateway.approvalTtl", g.ApprovalTTL)}
		for _, f := range g.MCP {
			c.Gateway.MCPFiles = append(c.Gateway.MCPFiles, rel(f))
		}
		for _, h := range g.Hooks {
			c.Gateway.HooksFiles = append(c.Gateway.HooksFiles, rel(h))
		}
		checkHooksSandbox(ps, "gateway", g.HooksSandbox)
		if u, err := url.Parse(g.PageURL); g.PageURL != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
			ps.add("$.gateway.pageUrl", "gateway.pageUrl", "want an http or https URL such as https://tollgate.example/, got %q", g.PageURL)
		}
	}
	names := make([]string, 0, len(y.Agents))
	for name := range y.Agents {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		a := y.Agents[name]
		base := "$.agents." + name
		field := func(f string) string { return "agents." + name + "." + f }
		if name == "" || strings.ContainsFunc(name, isControlOrSpace) {
			ps.add(base, "agents", "agent name %q: no spaces or control characters", name)
			continue
		}
		if a.decodeErr != nil {
			ps.decodeError(a.decodeErr)
			continue
		}
		if a.Tenants != nil && len(a.Tenants) == 0 {
			ps.add(base+".tenants", field("tenants"), "an empty list lets no tenant use the agent; list tenants, or leave tenants out to open it to all")
		}
		for i, tn := range a.Tenants {
			if strings.ContainsFunc(tn, isControlOrSpace) {
				ps.add(fmt.Sprintf("%s.tenants[%d]", base, i), field("tenants"), "tenant %q: no spaces or control characters", tn)
			}
		}
		if len(a.Tenants) > 0 {
			c.AgentTenants[name] = a.Tenants
		}
		cfg := runs.RunConfig{Agent: name, Answer: "wait", AgentConfig: a.AgentConfig}
		if cfg.Model.Provider == "" {
			_, err := runcore.ParseModelRef("")
			ps.add(base+".model", field("model"), "%v", err)
		}
		if cfg.Workdir == "" {
			ps.add(base, field("workdir"), "required: the workspace of the agent's tools")
		}
		if cfg.Autonomy != "" {
			if _, err := approval.ParseAutonomy(cfg.Autonomy); err != nil {
				ps.add(base+".autonomy", field("autonomy"), "%v", err)
			}
		}
		if cfg.MaxTurns < 0 {
			ps.add(base+".maxTurns", field("maxTurns"), "must not be negative")
		}
		for i, g := range cfg.Deny {
			if !glob.Valid(g) {
				ps.add(fmt.Sprintf("%s.deny[%d]", base, i), field("deny"), "%q: a glob must be non-empty and free of control characters", g)
			}
		}
		if cfg.Workdir == "" || cfg.Model.Provider == "" {
			continue
		}
		resolved, err := cfg.Resolve(dir)
		if err != nil {
			ps.add(base, "agents."+name, "%v", err)
			continue
		}
		c.Agents[name] = resolved
	}
	for i, w := range y.Webhooks {
		yp, field := fmt.Sprintf("$.webhooks[%d]", i), fmt.Sprintf("webhooks[%d]", i)
		secret := ""
		if w.SecretEnv == "" {
			ps.add(yp, field+".secretEnv", "required: the environment variable holding the signing secret (whsec_...)")
		} else if secret = os.Getenv(w.SecretEnv); secret == "" {
			ps.add(yp+".secretEnv", field+".secretEnv", "the environment variable %s is not set", w.SecretEnv)
		}
		wh := server.Webhook{URL: w.URL, Secret: secret, Tenant: w.Tenant, Types: w.Events}
		if secret != "" {
			if err := checkWebhook(wh); err != nil {
				ps.add(yp, field, "%v", err)
				continue
			}
		}
		c.Webhooks = append(c.Webhooks, wh)
	}
	if d := y.Durable; d != nil {
		c.Durable = loadDurable(ps, d, c.Store, rel, duration)
	}
	if err := ps.err(); err != nil {
		return nil, err
	}
	return c, nil
}

func loadDurable(ps *problems, d *durableYAML, storeKind string, rel func(string) string, duration func(yp, field, v string) time.Duration) *DurableConfig {
	c := &DurableConfig{Queue: d.Queue, Concurrency: d.Concurrency, ExecutorID: d.ExecutorID,
		Heartbeat:  duration("$.durable.heartbeat", "durable.heartbeat", d.Heartbeat),
		DeadAfter:  duration("$.durable.deadAfter", "durable.deadAfter", d.DeadAfter),
		AnswerPoll: duration("$.durable.answerPoll", "durable.answerPoll", d.AnswerPoll),
		QueuePoll:  duration("$.durable.queuePoll", "durable.queuePoll", d.QueuePoll),
	}
	switch {
	case d.Database != "" && d.DatabaseEnv != "":
		ps.add("$.durable", "durable.database", "database and databaseEnv are both set; give one")
	case d.DatabaseEnv != "":
		if c.DatabaseURL = os.Getenv(d.DatabaseEnv); c.DatabaseURL == "" {
			ps.add("$.durable.databaseEnv", "durable.databaseEnv", "the environment variable %s is not set", d.DatabaseEnv)
		}
	case d.Database != "":
		c.DatabaseURL = d.Database
	default:
		ps.add("$.durable", "durable.database", "required: DBOS's system database, postgres://… or sqlite:FILE (or databaseEnv: the variable holding it)")
	}
	if p, ok := strings.CutPrefix(c.DatabaseURL, "sqlite:"); ok && p != "" && p != ":memory:" {
		c.DatabaseURL = "sqlite:" + rel(strings.TrimPrefix(p, "//"))
	} else if c.DatabaseURL != "" && !strings.HasPrefix(c.DatabaseURL, "postgres://") && !strings.HasPrefix(c.DatabaseURL, "postgresql://") {
		ps.add("$.durable", "durable.database", "want postgres://USER@HOST:PORT/DATABASE or sqlite:FILE")
	}
	if d.Concurrency < 0 {
		ps.add("$.durable.concurrency", "durable.concurrency", "must not be negative, got %d", d.Concurrency)
	}
	if storeKind == "memory" {
		ps.add("$.store", "store", "memory cannot hold durable runs: the workers must share the store (sqlite or postgres)")
	}
	return c
}

// Loopback reports whether addr (HOST:PORT) listens on loopback only:
// localhost, 127.0.0.0/8 or ::1. An empty host (every interface) is not.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// tokensYAML is a tokens file.
type tokensYAML struct {
	Tokens []TokenEntry `yaml:"tokens"`
}

// LoadTokens reads a tokens file:
//
//	tokens:
//	  - name: alice                 # the principal: decisions record person:alice
//	    tenant: acme                # "" is the default tenant
//	    roles: [approver, operator] # viewer, approver, operator, admin
//	    sha256: 9f86d08...          # printf %s "$TOKEN" | sha256sum
//
// The list alone (no tokens: key, each entry "  - name: ...") is read the
// same: it is what `tollgate serve token >> tokens.yaml` builds from an
// empty file. Only hashes are stored; `tollgate serve token` makes a token
// (printed on stderr, once) and its entry (on stdout). Errors carry
// FILE:LINE:COL and the field.
func LoadTokens(path string) (*Tokens, error) {
	var root any
	if _, err := decodeStrict(path, &root); err != nil {
		return nil, err
	}
	var y tokensYAML
	var f *ast.File
	var err error
	yp := "$.tokens[%d]"
	if _, list := root.([]any); list {
		// The entries alone, as `tollgate serve token >> tokens.yaml`
		// appends them to an empty file.
		f, err = decodeStrict(path, &y.Tokens)
		yp = "$[%d]"
	} else {
		f, err = decodeStrict(path, &y)
	}
	if err != nil {
		return nil, err
	}
	ps := &problems{path: path, f: f}
	for i, e := range y.Tokens {
		if _, err := NewTokens([]TokenEntry{e}); err != nil {
			msg := strings.TrimPrefix(err.Error(), "tokens[0]: ")
			ps.add(fmt.Sprintf(yp, i), fmt.Sprintf("tokens[%d]", i), "%s", msg)
		}
	}
	if err := ps.err(); err != nil {
		return nil, err
	}
	t, err := NewTokens(y.Tokens)
	if err != nil {
		return nil, configread.Errorf(path, configread.Pos{}, "", "%v", err)
	}
	if t.Len() == 0 {
		return nil, configread.Errorf(path, configread.Pos{}, "", "the file lists no token")
	}
	return t, nil
}

// checkHooksSandbox adds a problem when mode, the hooksSandbox: of the
// section named section, is set and not one of package sandbox's modes
// (sandbox.ParseMode, whose error lists them).
func checkHooksSandbox(ps *problems, section, mode string) {
	if mode == "" {
		return
	}
	if _, err := sandbox.ParseMode(mode); err != nil {
		ps.add("$."+section+".hooksSandbox", section+".hooksSandbox", "%v", err)
	}
}
