package runcore

import (
	"context"
	"fmt"
	"sync"

	"github.com/tollgate-dev/tollgate/internal/layer"
	"github.com/tollgate-dev/tollgate/internal/layerstore"
)

// maxCachedLayers bounds the compiled layers a [LayerSource] keeps; past
// it, it starts again.
const maxCachedLayers = 256

// WithLayer returns a builder that builds with b and adds the rule layer
// of the run's tenant ([BuildTenant]), kept in ls (package internal/layer,
// docs/approvals.md): its deny rules as one more authorizer, its allow
// rules as the last Permission hook, which answers the asks they cover.
// Both read the store's latest version at every decision, so that an
// accepted rule applies from the next one; a layer that cannot be read
// denies (and asks no hook). The hooks of the built options are copied
// before the hook is added: a built agent that b shares between runs
// never gets another tenant's layer. A nil ls returns b.
func WithLayer(b Builder, ls layerstore.Layers) Builder {
	if ls == nil {
		return b
	}
	src := NewLayerSource(ls)
	return BuilderFunc(func(ctx context.Context, cfg RunConfig) (*Built, error) {
		built, err := b.Build(ctx, cfg)
		if err != nil {
			return nil, err
		}
		get := src.Getter(BuildTenant(ctx), cfg.Workdir)
		out := *built
		out.Options.Authorizers, out.Options.Hooks = LayerVotes(out.Options.Authorizers, out.Options.Hooks, get)
		return &out, nil
	})
}

// LayerSource reads the tenants' rule layers from a store. At each call
// a getter reads the layer's version (one cheap read) and reads and
// compiles the layer again only when it changed. It is safe for
// concurrent use.
type LayerSource struct {
	ls layerstore.Layers

	mu    sync.Mutex
	cache map[string]cachedLayer // by tenant and workdir
}

// cachedLayer is a tenant's layer compiled at a version.
type cachedLayer struct {
	version int64
	l       *layer.Layer
}

// NewLayerSource returns a source over ls.
func NewLayerSource(ls layerstore.Layers) *LayerSource {
	return &LayerSource{ls: ls, cache: map[string]cachedLayer{}}
}

// Getter returns the getter of tenant's layer for calls working in workdir
// (relative path prefixes resolve against it; "" compares paths as
// written): the store's latest version at every call.
func (src *LayerSource) Getter(tenant, workdir string) layer.Getter {
	key := fmt.Sprintf("%q\x00%q", tenant, workdir)
	return func(ctx context.Context) (*layer.Layer, error) {
		v, err := src.ls.LayerVersion(ctx, tenant)
		if err != nil {
			return nil, err
		}
		src.mu.Lock()
		c, ok := src.cache[key]
		src.mu.Unlock()
		if ok && c.version == v {
			return c.l, nil
		}
		l, err := src.ls.GetLayer(ctx, tenant)
		if err != nil {
			return nil, err
		}
		// l.Rules holds only the sealed rules: the store reports the
		// others in l.Unsealed, and they apply to nothing.
		rules := make([]layer.Rule, len(l.Rules))
		for i, r := range l.Rules {
			rules[i] = layer.Rule{ID: r.ID, Text: r.Text, AcceptedBy: r.AcceptedBy}
		}
		compiled, err := layer.Compile(l.Version, rules)
		if err == nil {
			compiled, err = compiled.WithWorkdir(workdir)
		}
		if err != nil {
			return nil, err
		}
		src.mu.Lock()
		if len(src.cache) >= maxCachedLayers {
			src.cache = map[string]cachedLayer{}
		}
		src.cache[key] = cachedLayer{version: l.Version, l: compiled}
		src.mu.Unlock()
		return compiled, nil
	}
}
