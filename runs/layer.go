package runs

import (
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/store"
)

// WithLayer returns a builder that builds with b and adds the rule layer
// of the run's tenant, kept in ls (rules accepted from decisions,
// docs/approvals.md): its deny rules as one more authorizer, its allow
// rules as the last Permission hook, which answers the asks they cover.
// Both read the store's latest version at every decision, so that an
// accepted rule applies from the next one; a layer that cannot be read
// denies (and asks no hook). The hooks of the built options are copied
// before the hook is added: a built agent that b shares between runs
// never gets another tenant's layer. A nil ls returns b.
func WithLayer(b Builder, ls store.Layers) Builder { return runcore.WithLayer(b, ls) }
