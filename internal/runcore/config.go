package runcore

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/internal/configread"
)

// ConfigVersion is the version of the [RunConfig] encoding this package
// writes. A stored configuration of a later version is refused
// ([ErrConfigVersion]); earlier ones are read.
const ConfigVersion = 1

// ErrConfigVersion is returned for a stored [RunConfig] this build cannot read.
var ErrConfigVersion = errors.New("runs: unsupported run configuration version")

// ModelRef names the model of a run without holding a secret: the key is
// read from the environment variable APIKeyEnv (or the provider's default
// variable) each time the agent is built, and is never stored.
//
// In JSON it is an object of its fields. In YAML it is inline in its
// configuration ([ModelRef.UnmarshalYAML]): the key model: holds its text
// form (PROVIDER:NAME), with baseUrl: and apiKeyEnv: beside it.
type ModelRef struct {
	// Provider is "script", "openai" or "anthropic".
	Provider string `json:"provider" yaml:"model"`
	// Name is the model name (openai, anthropic) or the absolute path of the
	// script file (script).
	Name string `json:"name" yaml:"-"`
	// BaseURL is the API root, empty for the vendor's.
	BaseURL string `json:"baseUrl,omitempty" yaml:"baseUrl"`
	// APIKeyEnv names the environment variable holding the key, empty for the
	// provider's default.
	APIKeyEnv string `json:"apiKeyEnv,omitempty" yaml:"apiKeyEnv"`
	// KeyGiven records that the run was started with a key given directly
	// (the command line's --api-key), which is never stored: whoever resumes
	// the run must give it again. Only the fact is kept, never the key.
	KeyGiven bool `json:"keyGiven,omitempty" yaml:"-"`
}

// String renders the reference as the command line writes it
// ("openai:gpt-4.1", "script:/abs/script.yaml"); [ParseModelRef] reads it
// back.
func (m ModelRef) String() string { return m.Provider + ":" + m.Name }

// modelProviders are the providers a [ModelRef] names.
var modelProviders = []string{"script", "openai", "anthropic"}

// ParseModelRef reads a model reference as the command line's --model and
// server.yaml's model: write it, PROVIDER:NAME: "openai:gpt-4.1-mini",
// "anthropic:claude-sonnet-4-5", "script:PATH" (the name is everything
// after the first colon, so a path may hold colons). The result has
// Provider and Name set. Text without a colon or a name, and a provider
// other than script, openai and anthropic (with the one probably meant),
// are errors, whose text does not repeat the flag or key it came from.
func ParseModelRef(s string) (ModelRef, error) {
	provider, name, ok := strings.Cut(s, ":")
	if !ok || name == "" {
		return ModelRef{}, fmt.Errorf("want openai:MODEL, anthropic:MODEL or script:PATH, got %q", s)
	}
	if !slices.Contains(modelProviders, provider) {
		if m := configread.Suggest(provider, modelProviders); m != "" {
			return ModelRef{}, fmt.Errorf("%q: unknown provider %q; did you mean %q?", s, provider, m)
		}
		return ModelRef{}, fmt.Errorf("%q: unknown provider %q (known: script, openai, anthropic)", s, provider)
	}
	return ModelRef{Provider: provider, Name: name}, nil
}

// Duration is a time.Duration that encodes in JSON as Go's text form ("1m30s")
// and decodes from it or from a number of nanoseconds.
type Duration time.Duration

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n int64
		if err2 := json.Unmarshal(b, &n); err2 != nil {
			return fmt.Errorf("duration: want a string such as \"90s\" or a number of nanoseconds: %w", err)
		}
		*d = Duration(n)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	*d = Duration(v)
	return nil
}

// RunConfig is everything needed to build a run's agent again, in this
// process or another, from any directory: it is stored with the run, and a
// [Builder] turns it into an agent. Every path is absolute, resolved once when
// the run starts ([RunConfig.Resolve]); no field depends on the current
// directory or on command-line flag names.
//
// It is stored as JSON, its [AgentConfig]'s fields beside its own. A
// configuration file sets its AgentConfig; the others ([BoundKeys]) are
// bound when a run starts.
type RunConfig struct {
	// Version is [ConfigVersion] when written by this package.
	Version int `json:"version" yaml:"version"`
	// Agent names the agent (in records, hooks and traces); default "agent".
	Agent string `json:"agent,omitempty" yaml:"agent"`
	// AgentConfig is what a configuration file sets; its fields are
	// stored as the run configuration's own.
	AgentConfig `yaml:",inline"`
	// Answer says who answers pending requests when the run is driven from a
	// terminal: "prompt", "wait", "yes" or "no" (the command's --approve);
	// hosts without a terminal ignore it.
	Answer string `json:"answer,omitempty" yaml:"answer"`
	// RequestDigest identifies the request that started the run, for a
	// host that starts runs by idempotency key ("sha256:" and 64 hex digits
	// of what the request asked; package server's Idempotency-Key). The run
	// itself does not use it.
	RequestDigest string `json:"requestDigest,omitempty" yaml:"requestDigest"`
	// Pins hold the SHA-256 of every file that governs the run (or its
	// absence), taken when the run started ([PinFiles]); every later
	// build of the run's agent refuses a file that differs
	// ([CheckPins]). Empty in configurations stored before runs
	// pinned their files: those are not checked.
	Pins []Pin `json:"pins,omitempty" yaml:"pins"`
}

// AgentConfig is what a configuration file sets for an agent's runs (an
// agent's section of server.yaml, `tollgate run`'s flags): the part of a
// [RunConfig] that is not bound when a run starts. Its json tags are the
// names stored with every run; its yaml tags are server.yaml's keys
// (model: in its text form with baseUrl: and apiKeyEnv: beside it,
// hooks:, policy:, mcp:, records:, durations as text such as 10m).
type AgentConfig struct {
	Model ModelRef `json:"model" yaml:",inline"`
	// Workdir is the workspace root of the builtin tools (absolute).
	Workdir string `json:"workdir" yaml:"workdir"`
	// System is the system prompt.
	System string `json:"system,omitempty" yaml:"system"`
	// MaxTurns caps model turns (0: the agent's default).
	MaxTurns int `json:"maxTurns,omitempty" yaml:"maxTurns"`
	// Timeout limits each run or resume of the run as a whole (0: none).
	Timeout Duration `json:"timeout,omitempty" yaml:"timeout"`
	// Deny lists tool-name globs that are always denied.
	Deny []string `json:"deny,omitempty" yaml:"deny"`
	// HooksFiles are declarative hook files (seed 000), absolute.
	HooksFiles []string `json:"hooksFiles,omitempty" yaml:"hooks"`
	// PolicyFile is the authorization policy file, absolute, or empty.
	PolicyFile string `json:"policyFile,omitempty" yaml:"policy"`
	// Autonomy overrides the policy's autonomy level when not empty.
	Autonomy string `json:"autonomy,omitempty" yaml:"autonomy"`
	// ApprovalTTL makes approval requests expire this long after they are made.
	ApprovalTTL Duration `json:"approvalTtl,omitempty" yaml:"approvalTtl"`
	// MCPFiles are MCP server files (mcp.json), absolute.
	MCPFiles []string `json:"mcpFiles,omitempty" yaml:"mcp"`
	// RecordsFile receives one JSON line per tool call record, absolute, or empty.
	RecordsFile string `json:"recordsFile,omitempty" yaml:"records"`
	// Sandbox confines the commands a run starts (bash, command hooks, stdio
	// MCP servers); nil is the host's default.
	Sandbox *SandboxConfig `json:"sandbox,omitempty" yaml:"sandbox"`
	// Claude runs the hooks of Claude Code settings files; nil runs none.
	Claude *ClaudeConfig `json:"claude,omitempty" yaml:"claude"`
}

// SandboxConfig says how package sandbox confines the commands of a run.
type SandboxConfig struct {
	// Bash and Hooks are sandbox modes ("workspace", "read-only", "off") of
	// the bash tool and of command hooks; empty Hooks means as Bash.
	Bash  string `json:"bash,omitempty"`
	Hooks string `json:"hooks,omitempty"`
	// Read lists further files and directories commands may read (absolute).
	Read []string `json:"read,omitempty"`
	// Connect lists TCP ports commands may connect to.
	Connect []uint16 `json:"connect,omitempty"`
	// PassEnv names environment variables (or NAME* prefixes) passed to
	// commands beyond the allowlist. Only names are stored, never values.
	PassEnv []string `json:"passEnv,omitempty"`
}

// ClaudeConfig says which Claude Code settings files' hooks a run runs.
type ClaudeConfig struct {
	// Files are settings files (absolute).
	Files []string `json:"files,omitempty"`
	// Project adds the workspace's and the user's settings files.
	Project bool `json:"project,omitempty"`
	// FailModes are EVENT=open|closed values (EVENT * for all).
	FailModes []string `json:"failModes,omitempty"`
	// Timeout of a hook that sets none (0: the default).
	Timeout Duration `json:"timeout,omitempty"`
}

// Resolve returns a copy of c with its version set and every relative path made
// absolute against dir (the directory the run was started from), cleaned. It
// fails on an empty model or workdir.
func (c RunConfig) Resolve(dir string) (RunConfig, error) {
	if c.Model.Provider == "" || c.Model.Name == "" {
		return c, errors.New("runs: the run configuration names no model")
	}
	if c.Workdir == "" {
		return c, errors.New("runs: the run configuration names no workdir")
	}
	if !filepath.IsAbs(dir) {
		return c, fmt.Errorf("runs: resolving against %q: not an absolute directory", dir)
	}
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return filepath.Clean(p)
		}
		return filepath.Join(dir, p)
	}
	c.Version = ConfigVersion
	c.Workdir = abs(c.Workdir)
	if c.Model.Provider == "script" {
		c.Model.Name = abs(c.Model.Name)
	}
	c.PolicyFile = abs(c.PolicyFile)
	if c.PolicyFile == "." {
		c.PolicyFile = ""
	}
	if c.RecordsFile = abs(c.RecordsFile); c.RecordsFile == "." {
		c.RecordsFile = ""
	}
	c.HooksFiles = absAll(c.HooksFiles, abs)
	c.MCPFiles = absAll(c.MCPFiles, abs)
	c.Deny = append([]string(nil), c.Deny...)
	if c.Sandbox != nil {
		sb := *c.Sandbox
		sb.Read = absAll(sb.Read, abs)
		sb.Connect = append([]uint16(nil), sb.Connect...)
		sb.PassEnv = append([]string(nil), sb.PassEnv...)
		c.Sandbox = &sb
	}
	if c.Claude != nil {
		cl := *c.Claude
		cl.Files = absAll(cl.Files, abs)
		cl.FailModes = append([]string(nil), cl.FailModes...)
		c.Claude = &cl
	}
	return c, nil
}

func absAll(ps []string, abs func(string) string) []string {
	if len(ps) == 0 {
		return nil
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = abs(p)
	}
	return out
}

// CheckConfig reports the first problem of a stored configuration: a version this
// build cannot read, or a path that is not absolute (which would resolve
// against whatever directory the resuming process runs in).
func CheckConfig(c RunConfig) error {
	if c.Version < 1 || c.Version > ConfigVersion {
		return fmt.Errorf("%w: %d (this build reads 1 to %d)", ErrConfigVersion, c.Version, ConfigVersion)
	}
	paths := map[string]string{"workdir": c.Workdir, "policyFile": c.PolicyFile, "recordsFile": c.RecordsFile}
	if c.Model.Provider == "script" {
		paths["model.name"] = c.Model.Name
	}
	for i, p := range c.HooksFiles {
		paths[fmt.Sprintf("hooksFiles[%d]", i)] = p
	}
	for i, p := range c.MCPFiles {
		paths[fmt.Sprintf("mcpFiles[%d]", i)] = p
	}
	if c.Sandbox != nil {
		for i, p := range c.Sandbox.Read {
			paths[fmt.Sprintf("sandbox.read[%d]", i)] = p
		}
	}
	if c.Claude != nil {
		for i, p := range c.Claude.Files {
			paths[fmt.Sprintf("claude.files[%d]", i)] = p
		}
	}
	for i, p := range c.Pins {
		if p.Path == "" {
			return fmt.Errorf("runs: run configuration field pins[%d] has no path", i)
		}
		paths[fmt.Sprintf("pins[%d]", i)] = p.Path
	}
	for field, p := range paths {
		if p != "" && !filepath.IsAbs(p) {
			return fmt.Errorf("runs: run configuration field %s is the relative path %q; stored paths must be absolute", field, p)
		}
	}
	if strings.TrimSpace(c.Workdir) == "" {
		return errors.New("runs: run configuration has no workdir")
	}
	return nil
}
