package runcore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// Built is an agent's options built from a [RunConfig] by a [Builder], with
// what must happen around it.
type Built struct {
	// Options are the agent's options. The host sets Checkpoint and appends its
	// middleware; everything else is the builder's.
	Options agent.Options
	// Attach, if set, runs once the agent exists (to apply a declarative
	// registry, which fires ON_START).
	Attach func(ctx context.Context, a *agent.Agent) error
	// OnStop, if set, runs when this part of the run ends (done, failed,
	// halted or cancelled), with the run's ID and status: ON_STOP of seed 000.
	OnStop func(ctx context.Context, runID string, status store.RunStatus)
	// Close, if set, releases what the builder opened (MCP servers, files).
	Close func() error
	// Applied lists the governance fields of the [RunConfig] the builder
	// turned into the agent's governance (their JSON names, the Field*
	// constants; [GovernanceFields] for all). A run whose configuration sets
	// a governance field missing here is refused ([CheckBuilt]), so that a
	// builder that knows only the model and the tools cannot silently run
	// without the deny globs, policy or hooks a configuration asks for.
	Applied []string
	// MCPLogins lists the OAuth logins to MCP servers the person made while
	// the builder started them: the host stores each as an
	// [EventMCPLogin] event of the run.
	MCPLogins []MCPLogin
}

// MCPLogin is an OAuth login to an MCP server made while a run's agent was
// built: the server's name and when the login was done. Never a token.
type MCPLogin struct {
	Server string    `json:"server"`
	Time   time.Time `json:"time"`
}

// LoginEvents are the [EventMCPLogin] events of b's logins, made by owner.
func LoginEvents(tenant, runID string, owner tool.Principal, b *Built) []store.Event {
	var out []store.Event
	for _, l := range b.MCPLogins {
		data, _ := json.Marshal(map[string]any{"server": l.Server, "time": l.Time, "by": owner.String()})
		out = append(out, store.Event{Tenant: tenant, RunID: runID, Type: EventMCPLogin, Data: data})
	}
	return out
}

// Builder builds a run's agent from its configuration; it must not depend on
// the current directory. Package internal/runbuild provides the one the command line
// and a server use, which applies every field of the configuration; a builder
// of one's own must list in [Built.Applied] the governance fields it applied,
// or runs whose configuration sets others are refused ([CheckBuilt]).
type Builder interface {
	Build(ctx context.Context, cfg RunConfig) (*Built, error)
}

// BuilderFunc adapts a function to [Builder].
type BuilderFunc func(ctx context.Context, cfg RunConfig) (*Built, error)

// Build implements [Builder].
func (f BuilderFunc) Build(ctx context.Context, cfg RunConfig) (*Built, error) { return f(ctx, cfg) }

// BuildPinned builds cfg's agent when its governing files are as pinned
// ([CheckPins]), checked before the build and again after it, so
// that a file swapped while the builder read it is refused too.
func BuildPinned(ctx context.Context, b Builder, cfg RunConfig) (*Built, error) {
	if err := CheckPins(cfg); err != nil {
		return nil, err
	}
	built, err := b.Build(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := CheckPins(cfg); err != nil {
		CloseBuilt(built)
		return nil, err
	}
	return built, nil
}

// CloseBuilt releases what the builder of b opened (b.Close), if anything;
// its error is dropped: nothing is left to do about it.
func CloseBuilt(b *Built) {
	if b != nil && b.Close != nil {
		_ = b.Close()
	}
}
