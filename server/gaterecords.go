package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/mcpgateway"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// errRecordedPerson is why a second record naming a person for one
// approval is refused: one decision backs one record.
var errRecordedPerson = errors.New("record.decision: it names a person as deciding, and this session's run has a record of this call naming a person already: one decision of a person backs one record")

// errUnsealedPerson is why a record of an external gateway that names a
// person as deciding is refused: no decision in the store backs it.
var errUnsealedPerson = errors.New("record.decision: it names a person as deciding, and no decision of that person in this session's run is for this call, tool, arguments and outcome: a gateway's record may name a person only for the person's decision on the approvals page")

// checkGateRecord reports why rec, a record of a call of the session run
// runID of tenant sent by an external gateway, may not be kept. The
// gateway decides with its own policy and its records are its word, but
// not for a person: every person the decision names (who decided, who
// acted for them, who voted) must have decided this call in the store,
// sealed (not written around tollgate), for the call's ID, tool and
// arguments, with the outcome the record claims. A gateway's token has
// the agent role, which the agent behind a client can read; it must not
// put a person's name on a call no person approved.
//
// The approval is found by the record's call ID (gatewayRuns.asked, which
// the asks fill; the session's approvals are read only when it does not
// know the call). That at most one record names a person per decision is
// [Server.keepGateRecord]'s to check, under the run's lock.
func (s *Server) checkGateRecord(ctx context.Context, tenant, runID string, rec gate.Record) error {
	persons := decidingPersons(rec.Decision)
	if len(persons) == 0 {
		return nil
	}
	if rec.ArgsDigest != approval.Digest(rec.Args) {
		return errors.New("record.argsDigest: not the digest of record.args")
	}
	if rec.RequestedDigest != approval.Digest(rec.RequestedArgs) {
		return errors.New("record.requestedDigest: not the digest of record.requestedArgs")
	}
	if id, ok := s.gate.askedFor(runID, rec.ID); ok {
		ap, err := s.store.GetApproval(ctx, runID, id)
		if err == nil && ap.RunID == runID && sealedDecision(ap, rec, persons) {
			return nil
		}
	}
	for ap, err := range store.AllApprovals(ctx, s.store, store.ApprovalFilter{Tenant: tenant, RunID: runID}) {
		if err != nil {
			return errUnsealedPerson
		}
		if sealedDecision(ap, rec, persons) {
			return nil
		}
	}
	return errUnsealedPerson
}

// keepGateRecord keeps rec, a record an external gateway sent of a call
// of its session sess, in the session's run: checked (checkGateRecord),
// its asker bound to the token's principal p (the gateway's word on its
// client is not the server's), and, when it names a person, refused if
// the run has a record of that call naming a person already. Errors:
// a *gateFullError (a session over the cap), a *recordError (422), or
// the store's.
func (s *Server) keepGateRecord(ctx context.Context, p Principal, sess mcpgateway.Session, rec gate.Record) error {
	rec.Principal = p.decider()
	if err := readsBack(rec); err != nil {
		return &recordError{err}
	}
	if err := s.checkGateRecord(ctx, p.Tenant, sessionRunID(gate.SourceMCP, p, sess.ID), rec); err != nil {
		return &recordError{err}
	}
	run, err := s.gate.recordRun(ctx, p, sess)
	if err != nil {
		return err
	}
	defer s.gate.cc.lock(run.ID)()
	if len(decidingPersons(rec.Decision)) > 0 {
		seen, err := s.sessionLogs.personRecorded(ctx, s.store, run, rec.ID)
		if err != nil {
			return err
		}
		if seen {
			return &recordError{errRecordedPerson}
		}
	}
	rec.RunID = run.ID
	s.gate.cc.record(ctx, run, rec)
	return nil
}

// readsBack reports why rec, as stored (encoding/json, which escapes "<",
// ">" and "&" as six bytes each), would not read back: a name within the
// bounds of a principal as sent may pass them as stored, and a record the
// session's index and the run's readers cannot read escapes the check that
// one decision of a person backs one record.
func readsBack(rec gate.Record) error {
	b, err := json.Marshal(rec)
	if err == nil {
		err = json.Unmarshal(b, &gate.Record{})
	}
	if err != nil {
		return fmt.Errorf("record: it does not read back as stored (%v)", err)
	}
	return nil
}

// recordError is why a record may not be kept (422).
type recordError struct{ err error }

func (e *recordError) Error() string { return e.err.Error() }

// decidingPersons returns the persons d names: who decided, who acted for
// them, and the sources and actors of its votes and shadow votes.
func decidingPersons(d gate.Decision) []tool.Principal {
	var ps []tool.Principal
	add := func(p tool.Principal) {
		if p.Kind == tool.PrincipalPerson && !slices.Contains(ps, p) {
			ps = append(ps, p)
		}
	}
	add(d.By)
	add(d.Actor)
	for _, v := range d.Votes {
		add(v.Source)
		add(v.Actor)
	}
	for _, v := range d.Shadow {
		add(v.Source)
		add(v.Actor)
	}
	return ps
}

// sealedDecision reports whether ap, an approval of the record's run, is
// the decision rec claims of the persons: a sealed decision on the same
// call and tool by those persons (and no others), asked about the
// arguments rec says were requested, for rec's arguments (the person's
// edit, when they edited), whose outcome is rec's (approved
// for an approval used, declined for a denial) and whose votes by a person
// say what the person decided (allow or deny; rewrite for an edit).
func sealedDecision(ap store.Approval, rec gate.Record, persons []tool.Principal) bool {
	if ap.Unverified || ap.Kind != tool.KindApproval || ap.CallID != rec.ID || ap.Tool != rec.Name {
		return false
	}
	if ap.Status != store.StatusUsed && ap.Status != store.StatusDenied {
		return false
	}
	for _, p := range persons {
		if p != ap.DecidedBy && (ap.Actor.IsZero() || p != ap.Actor) {
			return false
		}
	}
	d := rec.Decision
	want, vote := gate.OutcomeApproved, tool.VoteAllow
	if ap.Status == store.StatusDenied {
		want, vote = gate.OutcomeDeclined, tool.VoteDeny
	}
	if d.Outcome != want {
		return false // whoever the record says decided, a person's decision sets the outcome
	}
	if d.By.Kind == tool.PrincipalPerson && (d.By != ap.DecidedBy || d.Actor != ap.Actor) {
		return false
	}
	for _, v := range d.Votes {
		if (v.Source.Kind == tool.PrincipalPerson || v.Actor.Kind == tool.PrincipalPerson) && v.Decision != vote && v.Decision != tool.VoteRewrite {
			return false // a person's vote says what the person decided
		}
	}
	if rec.RequestedDigest != ap.Digest {
		return false // what the record says was asked for is what the person saw
	}
	args := ap.Digest
	if ap.Status == store.StatusUsed && len(ap.Data) > 0 {
		args = approval.Digest(ap.Data)
	}
	return approval.Digest(rec.Args) == args
}
