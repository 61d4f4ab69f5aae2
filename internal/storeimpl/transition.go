package storeimpl

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/tollgate-dev/tollgate/store"
)

// Transition is what Decide or Consume does to one approval: the step of
// the state machine and the outcomes that append the approval's event.
type Transition struct {
	step  func(store.Approval, time.Time) (store.Approval, error)
	event func(error) bool
}

// Decision is the transition of [store.Store.Decide] with answer d: its
// event is appended for a decision and for an expiry.
func Decision(d store.Answer) Transition {
	return Transition{
		step:  func(a store.Approval, now time.Time) (store.Approval, error) { return ApplyDecision(a, d, now) },
		event: Kept,
	}
}

// Consume is [store.Store.Consume] for a store whose transition runs t:
// the approval used for digest, carrying the answer's data, which the
// store no longer keeps once used ([RedactUsed]); an expiry appends its
// event.
func Consume(digest string, transition func(t Transition) (store.Approval, error)) (store.Approval, error) {
	var answer json.RawMessage
	a, err := transition(Transition{step: ConsumeStep(digest, &answer), event: isExpired})
	if err == nil {
		a.Data = answer // the one use of an input's answer
	}
	return a, err
}

// Apply runs t on a, as the store read it, at now: it checks a's seal,
// steps, and seals the result (see [Sealer.Seal]). It returns the
// approval to keep and to return, the event to append with it (none or
// one), and the step's error. Store the approval and the events when
// [Kept] says so, and nothing otherwise.
func (t Transition) Apply(seal *Sealer, a store.Approval, now time.Time) (store.Approval, []store.Event, error) {
	prev := seal.Check(a)
	next, err := t.step(prev, now)
	next = seal.Seal(prev, next)
	var evs []store.Event
	if t.event(err) {
		evs = []store.Event{ApprovalEventOf(next)}
	}
	return next, evs, err
}

// Kept reports whether a transition that ended with err is stored: when
// it succeeded, and when the approval expired (the expiry is recorded,
// and the caller still gets [store.ErrExpired]).
func Kept(err error) bool { return err == nil || isExpired(err) }

func isExpired(err error) bool { return err != nil && errors.Is(err, store.ErrExpired) }

// Commit marks an error with which a SQL store's transaction must still
// commit: an expiry recorded while the call fails (see [Kept]). A
// store's transaction commits when its function returns nil or a Commit,
// and then returns Commit.Err.
type Commit struct{ Err error }

// Error returns the marked error's text.
func (c Commit) Error() string { return c.Err.Error() }

// Outcome returns what a transaction's function returns after storing the
// result of a transition that ended with err ([Kept]): nil, or err marked
// with [Commit].
func Outcome(err error) error {
	if err == nil {
		return nil
	}
	return Commit{err}
}

// Expire returns a, as the store read it, recorded as expired at now and
// sealed ([ExpireApproval], [Sealer.Seal]): what ExpireApprovals stores
// for an approval whose expiry has passed.
func Expire(seal *Sealer, a store.Approval, now time.Time) store.Approval {
	prev := seal.Check(a)
	return seal.Seal(prev, ExpireApproval(prev, now))
}
