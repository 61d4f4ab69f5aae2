package storeimpl

import (
	"fmt"
	"time"

	"github.com/tollgate-dev/tollgate/store"
)

// LeasedError is the error ClaimRun returns while another holder's lease
// lasts; errors.Is(err, [store.ErrLeased]) holds, and errors.As gives the holder
// and the expiry (after which a claim may take the run over).
type LeasedError struct {
	RunID, Holder string
	ExpiresAt     time.Time
}

// Error says who holds the run and until when.
func (e *LeasedError) Error() string {
	return fmt.Sprintf("%v: run %s is leased to %q until %s", store.ErrLeased, e.RunID, e.Holder, e.ExpiresAt.Format(time.RFC3339Nano))
}

// Unwrap returns [store.ErrLeased].
func (e *LeasedError) Unwrap() error { return store.ErrLeased }
