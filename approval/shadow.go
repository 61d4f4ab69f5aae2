package approval

import "context"

// ShadowAuthorizer is an [Authorizer] that also says what its shadow rules
// would have voted. The agent's gate records those votes beside the real
// decision (gate.Decision.Shadow); they decide nothing.
type ShadowAuthorizer interface {
	Authorizer
	// AuthorizeShadow returns the verdict Authorize would, and the
	// would-be votes of the shadow rules that match c.
	AuthorizeShadow(ctx context.Context, c Call) (Verdict, []Verdict, error)
}
