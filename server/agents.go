package server

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/tollgate-dev/tollgate/runs"
)

// maxIdleAgents bounds the built agents the server keeps that no run uses:
// past it, the idle ones are closed when another is built.
const maxIdleAgents = 64

// agentCache builds each agent once per tenant and configuration and hands
// the built agent to every run and resume of it: the builder's work (the
// model, the sandbox, the policy, hooks and tools) is done once, not per run.
// What a run keeps (its transcript, its tools' run state, its hooks' per-run
// values) is in the agent made from the options for each part of the run
// and in its state, never in the options.
//
// A configuration is its JSON with its pins (so a governing file that
// changed is a new configuration, built anew, as it is read today) and,
// for a script model, the script file's size and time. One with MCP servers
// or Claude Code project settings is built for each run as before: a run's
// MCP servers are its own, and the user's settings files are not pinned. A
// build that fails is not kept.
type agentCache struct {
	b runs.Builder

	mu      sync.Mutex
	entries map[string]*cachedAgent
	closed  bool
}

// cachedAgent is one built agent; ready is closed once built or err is set.
type cachedAgent struct {
	ready chan struct{}
	built *runs.Built
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

func newAgentCache(b runs.Builder) *agentCache {
	return &agentCache{b: b, entries: map[string]*cachedAgent{}}
}

// build returns the agent of cfg for tenant, building it when the cache
// has none. The returned Built's Close releases it.
func (c *agentCache) build(ctx context.Context, tenant string, cfg runs.RunConfig) (*runs.Built, error) {
	key, ok := agentKey(tenant, cfg)
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
	return c.share(key, e), nil
}

// share is e's agent for one run: its options are the cached agent's, with
// slices clipped so that appending to them never writes into another run's,
// and its Close releases the run's use.
func (c *agentCache) share(key string, e *cachedAgent) *runs.Built {
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
func (c *agentCache) release(key string, e *cachedAgent) {
	c.mu.Lock()
	e.users--
	done := e.isReady()
	if done && e.err != nil && c.entries[key] == e {
		delete(c.entries, key)
	}
	closeNow := done && e.err == nil && e.evicted && e.users == 0
	c.mu.Unlock()
	if closeNow {
		closeBuilt(e.built)
	}
}

// evictIdle closes the agents no run uses, other than keep's, once more
// than maxIdleAgents are kept.
func (c *agentCache) evictIdle(keep string) {
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
		closeBuilt(e.built)
	}
}

// close closes every kept agent once no run uses it; builds after it are
// not kept.
func (c *agentCache) close() {
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
		closeBuilt(e.built)
	}
}

func closeBuilt(b *runs.Built) {
	if b != nil && b.Close != nil {
		_ = b.Close()
	}
}

// agentKey is the cache key of cfg for tenant, or false when cfg's agent is
// built for each run.
func agentKey(tenant string, cfg runs.RunConfig) (string, bool) {
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
