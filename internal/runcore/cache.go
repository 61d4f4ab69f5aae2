package runcore

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/tollgate-dev/tollgate/tool"
)

// maxIdleAgents bounds the built agents a [BuildCache] keeps that no run
// uses: past it, the idle ones are closed when another is built.
const maxIdleAgents = 64

// BuildCache is a [Builder] that builds each agent once per tenant and
// configuration and hands the built agent to every run and resume of it
// (the tenant is [BuildTenant]'s): the builder's work (the model, the
// sandbox, the policy, hooks and tools) is done once, not per run. What a
// run keeps (its transcript, its tools' run state, its hooks' per-run
// values) is in the agent a host makes from the options for each part of
// the run and in its state, never in the options; the builder it wraps
// must make options that several agents may use at once.
//
// A configuration is its JSON with its pins (so a governing file that
// changed is a new configuration, built anew when a run first needs it) and,
// for a script model, the script file's size and time; the request's
// digest is not part of it. One with MCP servers or Claude Code project
// settings is built for each run, as without the cache: a run's MCP servers
// are its own, and the user's settings files are not pinned. A build that
// fails is not kept. It is safe for concurrent use.
type BuildCache struct {
	b Builder

	mu      sync.Mutex
	entries map[string]*cachedAgent
	closed  bool
}

// cachedAgent is one built agent; ready is closed once built or err is set.
type cachedAgent struct {
	ready chan struct{}
	built *Built
	err   error
	// users counts the runs using it; an evicted one is closed when the
	// last of them is done.
	users   int
	evicted bool
}

// isReady reports whether e's build has ended; only then may built and
// err be read.
func (e *cachedAgent) isReady() bool {
	select {
	case <-e.ready:
		return true
	default:
		return false
	}
}

// NewBuildCache returns a cache of the agents b builds.
func NewBuildCache(b Builder) *BuildCache {
	return &BuildCache{b: b, entries: map[string]*cachedAgent{}}
}

// Build implements [Builder]: it returns the agent of cfg for the tenant
// of ctx ([BuildTenant]), building it when the cache has none. The
// returned Built's Close ends this run's use of it.
func (c *BuildCache) Build(ctx context.Context, cfg RunConfig) (*Built, error) {
	key, ok := agentKey(BuildTenant(ctx), cfg)
	if !ok {
		return c.b.Build(ctx, cfg)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return c.b.Build(ctx, cfg)
	}
	e, found := c.entries[key]
	if !found {
		e = &cachedAgent{ready: make(chan struct{})}
		c.entries[key] = e
	}
	e.users++
	c.mu.Unlock()
	if !found {
		// Built for every run that waits on it: one run's cancelled
		// request does not fail the others.
		e.built, e.err = c.b.Build(context.WithoutCancel(ctx), cfg)
		close(e.ready)
		if e.err == nil {
			c.evictIdle(key)
		}
	}
	select {
	case <-e.ready:
	case <-ctx.Done():
		c.release(key, e)
		return nil, ctx.Err()
	}
	if e.err != nil {
		c.release(key, e)
		return nil, e.err
	}
	b := c.share(key, e)
	if found {
		// The logins made while the agent was built belong to the run
		// that built it.
		b.MCPLogins = nil
	}
	return b, nil
}

// Warm builds the agent of cfg for the runs of tenant ahead of the first
// of them, as that run would (cfg's governing files pinned as a run's
// start pins them), and keeps it for them: the first run does not wait for
// the build. A configuration the cache builds for each run (MCP servers,
// Claude Code project settings) is not built. Errors: pinning cfg's files
// ([PinFiles]) and the builder's.
func (c *BuildCache) Warm(ctx context.Context, tenant string, cfg RunConfig) error {
	pinned, err := PinFiles(cfg)
	if err != nil {
		return err
	}
	if _, ok := agentKey(tenant, pinned); !ok {
		return nil
	}
	b, err := BuildPinned(WithBuildTenant(ctx, tenant), c, pinned)
	if err != nil {
		return err
	}
	CloseBuilt(b) // idle, kept for the runs
	return nil
}

// Len is how many agents the cache holds: built, being built, or idle (a
// build that failed is not held).
func (c *BuildCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// share is e's agent for one run: its options are the cached agent's, with
// slices clipped so that appending to them never writes into another run's,
// and its Close releases the run's use.
func (c *BuildCache) share(key string, e *cachedAgent) *Built {
	b := *e.built
	o := &b.Options
	o.Middleware = slices.Clip(o.Middleware)
	o.Authorizers = slices.Clip(o.Authorizers)
	var once sync.Once
	b.Close = func() error {
		once.Do(func() { c.release(key, e) })
		return nil
	}
	return &b
}

// release ends a run's use of e. An entry whose build failed leaves the
// cache, and an evicted one is closed by its last user.
func (c *BuildCache) release(key string, e *cachedAgent) {
	c.mu.Lock()
	e.users--
	done := e.isReady()
	if done && e.err != nil && c.entries[key] == e {
		delete(c.entries, key)
	}
	closeNow := done && e.err == nil && e.evicted && e.users == 0
	c.mu.Unlock()
	if closeNow {
		CloseBuilt(e.built)
	}
}

// evictIdle closes the agents no run uses, other than keep's, once more
// than maxIdleAgents are kept.
func (c *BuildCache) evictIdle(keep string) {
	c.mu.Lock()
	var idle []*cachedAgent
	if len(c.entries) > maxIdleAgents {
		for k, e := range c.entries {
			if k != keep && e.users == 0 && e.isReady() && e.err == nil {
				delete(c.entries, k)
				idle = append(idle, e)
			}
		}
	}
	c.mu.Unlock()
	for _, e := range idle {
		CloseBuilt(e.built)
	}
}

// Close closes every kept agent, each once no run uses it; builds after it
// are not kept.
func (c *BuildCache) Close() {
	c.mu.Lock()
	c.closed = true
	var idle []*cachedAgent
	for k, e := range c.entries {
		delete(c.entries, k)
		if !e.isReady() {
			e.evicted = true // closed by its last user
			continue
		}
		if e.err != nil {
			continue
		}
		if e.users == 0 {
			idle = append(idle, e)
		} else {
			e.evicted = true
		}
	}
	c.mu.Unlock()
	for _, e := range idle {
		CloseBuilt(e.built)
	}
}

// agentKey is the cache key of cfg for tenant, or false when cfg's agent is
// built for each run.
func agentKey(tenant string, cfg RunConfig) (string, bool) {
	if len(cfg.MCPFiles) > 0 || (cfg.Claude != nil && cfg.Claude.Project) {
		return "", false
	}
	cfg.RequestDigest = "" // the request's, not the agent's
	b, err := json.Marshal(cfg)
	if err != nil {
		return "", false
	}
	key := fmt.Sprintf("%q\x00%s", tenant, b)
	if cfg.Model.Provider == "script" {
		if fi, err := os.Stat(cfg.Model.Name); err == nil {
			key += fmt.Sprintf("\x00%d\x00%d", fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return key, true
}

type buildTenantKey struct{}

// WithBuildTenant puts the tenant of the run being built on ctx.
func WithBuildTenant(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, buildTenantKey{}, tenant)
}

type buildRunKey struct{}

// buildRun is the run whose agent is being built.
type buildRun struct {
	id    string
	owner tool.Principal
}

// WithBuildRun puts the ID and owner of the run being built on ctx
// ([BuildRun] reads them).
func WithBuildRun(ctx context.Context, id string, owner tool.Principal) context.Context {
	return context.WithValue(ctx, buildRunKey{}, buildRun{id, owner})
}

// BuildRun returns the ID and owner of the run whose agent is being built,
// as a [Host] puts them on the context it gives its [Builder] (a builder
// writes them on what it records while it builds, such as an OAuth login);
// empty when the context has none.
func BuildRun(ctx context.Context) (id string, owner tool.Principal) {
	r, _ := ctx.Value(buildRunKey{}).(buildRun)
	return r.id, r.owner
}

// BuildTenant returns the tenant of the run whose agent is being built:
// [Host] and [Durable] put it on the context they give their [Builder].
func BuildTenant(ctx context.Context) string {
	t, _ := ctx.Value(buildTenantKey{}).(string)
	return t
}
