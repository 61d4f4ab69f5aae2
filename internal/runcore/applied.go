package runcore

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Governance fields of a [RunConfig], by their JSON names: what a [Builder]
// lists in [Built.Applied] for each of them it turned into the agent's
// governance. A configuration that sets one the builder did not apply is
// refused by [CheckBuilt], and so by [Host] and [Durable], rather than run
// without the deny globs, policy, hooks, MCP servers, records or confinement
// it asks for.
const (
	FieldDeny        = "deny"
	FieldHooksFiles  = "hooksFiles"
	FieldPolicyFile  = "policyFile"
	FieldAutonomy    = "autonomy"
	FieldApprovalTTL = "approvalTtl"
	FieldMCPFiles    = "mcpFiles"
	FieldRecordsFile = "recordsFile"
	FieldSandbox     = "sandbox"
	FieldClaude      = "claude"
)

// GovernanceFields returns every governance field of a [RunConfig] (the
// Field* constants), in the order [CheckBuilt] checks them, in a new slice.
// A builder that applies them all, as package internal/runbuild does, sets
// [Built.Applied] to it.
func GovernanceFields() []string {
	return []string{
		FieldDeny, FieldPolicyFile, FieldAutonomy, FieldApprovalTTL, FieldHooksFiles,
		FieldClaude, FieldMCPFiles, FieldRecordsFile, FieldSandbox,
	}
}

// FieldError is a problem with one field of a [RunConfig]: Field is the
// field's JSON name (a Field* constant or "model", "workdir", ...; a nested
// field as "sandbox.bash"), Err what is wrong with it. A builder returns it
// for a field whose value does not load; package server reports it at the
// field's line of server.yaml.
type FieldError struct {
	Field string
	Err   error
}

// Error returns "FIELD: ERR".
func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }

// Unwrap returns Err.
func (e *FieldError) Unwrap() error { return e.Err }

// setFields returns the governance fields of c that are set, each with its
// value as text for an error message.
func (c RunConfig) setFields() [][2]string {
	var out [][2]string
	add := func(field string, set bool, v any) {
		if set {
			out = append(out, [2]string{field, fmt.Sprintf("%q", v)})
		}
	}
	add(FieldDeny, len(c.Deny) > 0, c.Deny)
	add(FieldPolicyFile, c.PolicyFile != "", c.PolicyFile)
	add(FieldAutonomy, c.Autonomy != "", c.Autonomy)
	add(FieldApprovalTTL, c.ApprovalTTL != 0, c.ApprovalTTL)
	add(FieldHooksFiles, len(c.HooksFiles) > 0, c.HooksFiles)
	if cl := c.Claude; cl != nil {
		add(FieldClaude, len(cl.Files) > 0 || cl.Project || len(cl.FailModes) > 0 || cl.Timeout != 0, cl.Files)
	}
	add(FieldMCPFiles, len(c.MCPFiles) > 0, c.MCPFiles)
	add(FieldRecordsFile, c.RecordsFile != "", c.RecordsFile)
	if sb := c.Sandbox; sb != nil {
		add(FieldSandbox, sb.Bash != "" || sb.Hooks != "" || len(sb.Read) > 0 || len(sb.Connect) > 0 || len(sb.PassEnv) > 0, strings.TrimSpace(sb.Bash+" "+sb.Hooks))
	}
	return out
}

// CheckBuilt reports, as a [*FieldError], the first governance field that
// cfg sets and b does not list in [Built.Applied]: a builder that made an
// agent from the model and tools alone must not run a configuration whose
// deny globs, policy, hooks, MCP servers, records or sandbox it ignored.
// [Host] and [Durable] call it after every build, package server when it
// checks its agents.
func CheckBuilt(cfg RunConfig, b *Built) error {
	if b == nil {
		return fmt.Errorf("runs: the builder returned no agent for %s", cfg.Model)
	}
	for _, f := range cfg.setFields() {
		if !slices.Contains(b.Applied, f[0]) {
			return &FieldError{Field: f[0], Err: fmt.Errorf("set to %s, but the builder did not apply it (Built.Applied lists %q); refusing to run without it: build the agent with the command's builder (tollgate run, serve, worker), or apply the field and list it in Built.Applied", f[1], b.Applied)}
		}
	}
	return nil
}

// Checked returns b refusing what it built without applying the
// configuration's governance ([CheckBuilt]); hosts build through it.
func Checked(b Builder) Builder { return checkedBuilder{b} }

// checkedBuilder refuses what its builder built without applying the
// configuration's governance (CheckBuilt).
type checkedBuilder struct{ b Builder }

func (c checkedBuilder) Build(ctx context.Context, cfg RunConfig) (*Built, error) {
	built, err := c.b.Build(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := CheckBuilt(cfg, built); err != nil {
		CloseBuilt(built)
		return nil, fmt.Errorf("runs: run configuration %w", err)
	}
	return built, nil
}
