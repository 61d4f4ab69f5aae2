package inbox

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// Errors of [Inbox.Find] and [Inbox.Decide]. Find's "not found" is
// [store.ErrNotFound] and Decide's expiry [store.ErrExpired], wrapped with
// the request's ID.
var (
	// ErrNoID: the request ID is empty. A filter with no ID selects every
	// request, so it is refused rather than matched.
	ErrNoID = errors.New("inbox: no request ID")
	// ErrAmbiguous: the request ID names requests of several runs of the
	// tenant; name the run too.
	ErrAmbiguous = errors.New("inbox: the request ID is in several runs")
	// errNoPrincipal: the decision names nobody who decided.
	errNoPrincipal = errors.New("inbox: a decision needs the principal who made it")
	// ErrNotPerson: one who acts for another (an Actor) acts for a named
	// person only, never for a rule, a hook or a flag.
	ErrNotPerson = errors.New("inbox: an answer on another's behalf names a person (NAME or person:NAME)")
	// ErrDataOnDeny: a denial carries no edited arguments nor answer.
	ErrDataOnDeny = errors.New("inbox: only an approval carries data (edited arguments or an answer)")
	// ErrDigestMismatch: the digest sent is not the digest of the request's
	// arguments: reload the request and decide on what it shows.
	ErrDigestMismatch = errors.New("inbox: the digest is not the digest of this request's arguments")
)

// DecidedError is the error of a decision on a request that another
// decision (or a cancelled run) already settled. It wraps
// [store.ErrDecided]; Approval is the request as stored, with who decided
// (DecidedBy, and Actor when someone acted on their behalf) and why.
type DecidedError struct {
	Approval store.Approval
}

// Error says what the request is, who decided it and why, as the store
// does: "store: approval already decided: approval req_1 of run run_1 is
// approved (by person:alice; recorded by person:root: reason)".
func (e *DecidedError) Error() string {
	a := e.Approval
	s := fmt.Sprintf("%s: approval %s of run %s is %s", store.ErrDecided, a.ID, a.RunID, a.Status)
	if a.DecidedBy.IsZero() {
		return s
	}
	s += " (by " + a.DecidedBy.String()
	if !a.Actor.IsZero() {
		s += "; recorded by " + a.Actor.String()
	}
	if a.Reason != "" {
		s += ": " + a.Reason
	}
	return s + ")"
}

// Unwrap returns [store.ErrDecided].
func (e *DecidedError) Unwrap() error { return store.ErrDecided }

// DataError is the error of data that does not fit a request (see
// [CheckData]); test for it with errors.As.
type DataError struct {
	// Kind is the request's kind.
	Kind tool.Kind
	// What names the data: "the arguments of bash", "the answer".
	What string
	// Problems are the reasons, one a line of the validator's report.
	Problems []string
}

// Error says what does not fit and why, the problems joined with "; ".
func (e *DataError) Error() string {
	return e.What + ": " + strings.Join(e.Problems, "; ")
}
