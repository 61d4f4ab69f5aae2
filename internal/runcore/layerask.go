package runcore

import (
	"context"
	"sync"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/layer"
	"github.com/tollgate-dev/tollgate/tool"
)

// LayerVotes returns azs with the layer's deny rules as one more
// authorizer, and a copy of h (nil: none) with the layer's Permission hook
// added last, named [layer.HookName]: what [WithLayer] adds to a built
// agent. The two read the layer once per decision: the gate hears a call's
// Permission hooks right after its authorizers, and the hook takes the
// layer the authorizer read for that call in the same pass, so that an ask
// reads the layer's version once, not twice. Each decision reads it again:
// a rule accepted between two asks applies from the next.
func LayerVotes(azs []approval.Authorizer, h *hooks.Hooks, get layer.Getter) ([]approval.Authorizer, *hooks.Hooks) {
	a := &askLayer{get: get}
	return append(azs[:len(azs):len(azs)], a), (&hooks.Hooks{}).Merge(h).Permission(layer.HookName, a.permission)
}

// askLayer is the layer's authorizer, keeping the layer it read for the
// call it last authorized until that call's Permission hook takes it. It
// keeps one call's layer: a hook of any other call (parallel calls, a
// call whose authorizer failed) reads the layer itself.
type askLayer struct {
	get layer.Getter

	mu   sync.Mutex
	call string
	l    *layer.Layer
}

// Authorize implements [approval.Authorizer]: [layer.Authorizer] on a
// fresh read of the layer, kept for the call's Permission hook.
func (a *askLayer) Authorize(ctx context.Context, c approval.Call) (approval.Verdict, error) {
	return layer.Authorizer(func(ctx context.Context) (*layer.Layer, error) {
		l, err := a.get(ctx)
		a.keep(c.CallID, l, err)
		return l, err
	}).Authorize(ctx, c)
}

// permission is [layer.PermissionHook] on the layer the call's authorizer
// read, or on a fresh read when it kept none for the call.
func (a *askLayer) permission(ctx context.Context, ev *hooks.PermissionEvent) (*tool.Answer, error) {
	return layer.PermissionHook(func(ctx context.Context) (*layer.Layer, error) {
		if l := a.take(ev.ID); l != nil {
			return l, nil
		}
		return a.get(ctx)
	})(ctx, ev)
}

// keep keeps l for call's Permission hook; a failed read, or a call
// without an ID, keeps nothing.
func (a *askLayer) keep(call string, l *layer.Layer, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.call, a.l = "", nil
	if err == nil && call != "" {
		a.call, a.l = call, l
	}
}

// take returns, once, the layer kept for call (nil when none is).
func (a *askLayer) take(call string) *layer.Layer {
	a.mu.Lock()
	defer a.mu.Unlock()
	if call == "" || a.call != call {
		return nil
	}
	l := a.l
	a.call, a.l = "", nil
	return l
}
