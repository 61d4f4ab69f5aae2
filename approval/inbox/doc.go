// Package inbox answers the approval requests kept in a store: the one place
// where an approval is decided, for the command line, the HTTP API, the
// WebSocket and the approvals page alike.
//
// [Inbox.Find] finds a request by ID in one tenant (and one run, when
// given). [Inbox.Decide] records a decision on it after these checks, in
// this order:
//
//   - who decides: a principal is required; one who acts for another names
//     a person as By and is kept as Actor (the "act" claim of RFC 8693,
//     section 4.1), see [OnBehalf];
//   - a denial carries no data;
//   - the digest, when given, is the request's: what the person was shown is
//     what runs ([ErrDigestMismatch]);
//   - the same decision again by the same principals is answered with the
//     stored approval, as the first was (a retry);
//   - an expired request takes no decision ([store.ErrExpired]);
//   - a decided one takes no other ([DecidedError] says by whom);
//   - the data fits the request ([CheckData]): edited arguments of an
//     approval are a JSON object that fits the tool's input schema held in
//     the request; a question's answer fits its questions; an input's value
//     is JSON.
//
// Edited arguments are authorized again by the agent when the run goes on:
// the policy that asked is the run's, not the inbox's. Whether a caller may
// decide at all (a role, an --admin flag) is the caller's to check.
package inbox
