package runs

import "github.com/tollgate-dev/tollgate/internal/runcore"

// RunConfig is everything needed to build a run's agent again, in this
// process or another, from any directory: the model, the workspace, the
// system prompt, limits, and the governance (deny globs, policy file and
// autonomy, hooks files, MCP files, records file, sandbox, Claude Code
// settings), with every path absolute once [RunConfig.Resolve] made it so.
// It is stored with the run as JSON (its version 1), and a [Builder] turns
// it into an agent. Each field is documented where the type is defined
// (internal/runcore/config.go).
type RunConfig = runcore.RunConfig

// AgentConfig is what a configuration file sets for an agent's runs (an
// agent's section of server.yaml, `tollgate run`'s flags): the
// [RunConfig] but for what a run binds when it starts (its version, agent
// name, answer, request digest and pins).
type AgentConfig = runcore.AgentConfig

// ModelRef names the model of a run without holding a secret
// (Provider "script", "openai" or "anthropic", and Name); the key is read
// from the environment variable APIKeyEnv, or the provider's default, each
// time the agent is built, and is never stored.
type ModelRef = runcore.ModelRef

// SandboxConfig says how package sandbox confines the commands of a run
// (the bash tool, command hooks, stdio MCP servers): modes, further paths
// to read, ports to connect to, environment variables passed by name.
type SandboxConfig = runcore.SandboxConfig

// ClaudeConfig says which Claude Code settings files' hooks a run runs.
type ClaudeConfig = runcore.ClaudeConfig

// Duration is a time.Duration that encodes in JSON as Go's text form
// ("1m30s") and decodes from it or from a number of nanoseconds.
type Duration = runcore.Duration

// Pin is the SHA-256 of a file that governs a run (or its absence), taken
// when the run started; every later build of the run's agent refuses a
// file that changed ([ErrGoverningFileChanged]).
type Pin = runcore.Pin

// Builder builds a run's agent from its configuration; it must not depend
// on the current directory. A builder lists in [Built.Applied] the
// governance fields of the configuration it applied (their JSON names:
// "deny", "policyFile", "autonomy", "approvalTtl", "hooksFiles", "claude",
// "mcpFiles", "recordsFile", "sandbox"); a run whose configuration sets
// another is refused with a [*FieldError] naming it, rather than run
// without the governance it asks for. The command line's builder
// (`tollgate run`, `serve`, `worker`) applies them all.
type Builder = runcore.Builder

// BuilderFunc adapts a function to [Builder].
type BuilderFunc = runcore.BuilderFunc

// Built is an agent's options built from a [RunConfig] by a [Builder],
// with what must happen around it: Attach once the agent exists, OnStop
// when a part of the run ends (ON_STOP of seed 000), Close to release what
// the builder opened, Applied (the governance fields applied) and the
// MCP logins made while it built.
type Built = runcore.Built

// MCPLogin is an OAuth login to an MCP server made while a run's agent
// was built: the server's name and when. Never a token.
type MCPLogin = runcore.MCPLogin

// FieldError is a problem with one field of a [RunConfig]: Field is the
// field's JSON name ("policyFile", "sandbox.bash"), Err what is wrong with
// it. A builder returns it for a field that does not load; a host returns
// it for a governance field its builder did not apply. Test with
// errors.As.
type FieldError = runcore.FieldError

// Errors of a run's configuration; test with errors.Is.
var (
	// ErrGoverningFileChanged is returned (wrapped, with the file's path)
	// when a file that governs a run (its policy, hooks files, MCP
	// configuration files, Claude Code settings files) is not what it was
	// when the run started: it changed, appeared or vanished. The run's
	// agent is then not built and nothing of the run runs.
	ErrGoverningFileChanged = runcore.ErrGoverningFileChanged
	// ErrConfigVersion is returned for a stored [RunConfig] of a version
	// this build cannot read.
	ErrConfigVersion = runcore.ErrConfigVersion
)
