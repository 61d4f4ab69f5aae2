package memory

import (
	"github.com/tollgate-dev/tollgate/internal/layerstore"
	"github.com/tollgate-dev/tollgate/store"
)

// ForgeLayer writes into s's layer as a writer without its key would: it
// sets the text of tenant's rule alterID and appends rule r, accepted at
// r.Version, with a change for it.
func ForgeLayer(s store.Store, tenant, alterID, text string, r layerstore.LayerRule) {
	l := &s.(*memStore).layers
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, x := range l.rules[tenant] {
		if x.ID == alterID {
			l.rules[tenant][i].Text = text
		}
	}
	l.rules[tenant] = append(l.rules[tenant], r)
	l.changes[tenant] = append(l.changes[tenant], layerstore.LayerChange{Tenant: tenant, Version: r.Version, Action: layerstore.LayerAccept, RuleID: r.ID, Text: r.Text, Effect: r.Effect, By: r.AcceptedBy})
}
