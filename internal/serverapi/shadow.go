package serverapi

import (
	"time"

	"github.com/tollgate-dev/tollgate/internal/replay"
)

// ShadowPage is GET /v1/shadow: how often each shadow rule (mode: shadow)
// would have voted on the calls recorded in the caller's tenant.
type ShadowPage struct {
	// Rules are the counts by rule and vote, sorted by rule then vote.
	Rules []replay.ShadowCount `json:"rules"`
	// Calls is the number of recorded calls counted.
	Calls int `json:"calls"`
	// Since, when set, is where the count starts (?since=DURATION ago).
	Since *time.Time `json:"since,omitempty"`
}
