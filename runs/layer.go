package runs

import (
	"context"
	"fmt"
	"sync"

	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/policy/layer"
	"github.com/tollgate-dev/tollgate/store"
)

// maxCachedLayers bounds the compiled layers a [WithLayer] builder keeps;
// past it, it starts again.
const maxCachedLayers = 256

// WithLayer returns a builder that builds with b and adds the rule layer
// of the run's tenant ([BuildTenant]), kept in ls (package policy/layer,
// docs/approvals.md): its deny rules as one more authorizer, its allow
// rules as the last Permission hook, which answers the asks they cover.
// Both read the store's latest version at every decision, so that an
// accepted rule applies from the next one; a layer that cannot be read
// denies (and asks no hook). The hooks of the built options are copied
// before the hook is added: a built agent that b shares between runs
// never gets another tenant's layer. A nil ls returns b.
func WithLayer(b Builder, ls store.Layers) Builder {
	if ls == nil {
		return b
	}
	lb := &layerBuilder{b: b, ls: ls, cache: map[string]*layer.Layer{}}
	return BuilderFunc(lb.build)
}

type layerBuilder struct {
	b  Builder
	ls store.Layers

	mu    sync.Mutex
	cache map[string]*layer.Layer // by tenant, version and workdir
}

func (lb *layerBuilder) build(ctx context.Context, cfg RunConfig) (*Built, error) {
	built, err := lb.b.Build(ctx, cfg)
	if err != nil {
		return nil, err
	}
	get := lb.getter(BuildTenant(ctx), cfg.Workdir)
	out := *built
	out.Options.Authorizers = append(out.Options.Authorizers[:len(out.Options.Authorizers):len(out.Options.Authorizers)], layer.Authorizer(get))
	h := (&hooks.Hooks{}).Merge(out.Options.Hooks)
	out.Options.Hooks = h.Permission(layer.HookName, layer.PermissionHook(get))
	return &out, nil
}

// getter returns the getter of tenant's layer for runs working in workdir:
// the store's version at every call, compiled once per version.
func (lb *layerBuilder) getter(tenant, workdir string) layer.Getter {
	return func(ctx context.Context) (*layer.Layer, error) {
		l, err := lb.ls.GetLayer(ctx, tenant)
		if err != nil {
			return nil, err
		}
		key := fmt.Sprintf("%q\x00%d\x00%q", tenant, l.Version, workdir)
		lb.mu.Lock()
		compiled, ok := lb.cache[key]
		lb.mu.Unlock()
		if ok {
			return compiled, nil
		}
		rules := make([]layer.Rule, len(l.Rules))
		for i, r := range l.Rules {
			rules[i] = layer.Rule{ID: r.ID, Text: r.Text, AcceptedBy: r.AcceptedBy}
		}
		if compiled, err = layer.Compile(l.Version, rules); err == nil {
			compiled, err = compiled.WithWorkdir(workdir)
		}
		if err != nil {
			return nil, err
		}
		lb.mu.Lock()
		if len(lb.cache) >= maxCachedLayers {
			lb.cache = map[string]*layer.Layer{}
		}
		lb.cache[key] = compiled
		lb.mu.Unlock()
		return compiled, nil
	}
}
