package tool

import (
	"context"
	"encoding/json"
	"time"
)

// Kind says what a [Request] asks for.
type Kind string

// The kinds of pending request. Hosts route them (an approval to an approver, a
// question to the user); the runtime treats all kinds alike.
const (
	// KindApproval asks a person to approve (or deny, or edit) a tool call.
	KindApproval Kind = "approval"
	// KindInput asks for a value the tool needs (a password, a choice).
	KindInput Kind = "input"
	// KindAuthorization asks the user to authorize access, usually at URL (OAuth).
	KindAuthorization Kind = "authorization"
	// KindQuestion asks the user a free-form question.
	KindQuestion Kind = "question"
)

// Request is a pending, out-of-band request made by a tool call (seed 002's
// pending). It is plain, serializable data; its JSON keys are exactly id, kind,
// prompt, url, data and expiresAt.
type Request struct {
	// ID is unique among the pending requests of a run; answers are routed by it.
	ID string `json:"id"`
	// Kind says what is asked.
	Kind Kind `json:"kind"`
	// Prompt is the human-readable question.
	Prompt string `json:"prompt"`
	// URL, if set, is where the person answers (an authorization page, say).
	URL string `json:"url,omitempty"`
	// Data carries structured details (for approvals: tool, call id, arguments, digest).
	Data json.RawMessage `json:"data,omitempty"`
	// ExpiresAt, if set, is when the request stops accepting answers.
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
}

// Expired reports whether the request has an expiry at or before now.
func (r Request) Expired(now time.Time) bool {
	return r.ExpiresAt != nil && !now.Before(*r.ExpiresAt)
}

// Answer answers a [Request]; its JSON keys are id, ok, data and reason, and
// by and actor (who answered, kept in the decision record).
type Answer struct {
	// ID is the ID of the request answered.
	ID string `json:"id"`
	// OK approves (or, for input, supplies) when true; declines when false.
	OK bool `json:"ok"`
	// Data carries the answer's value (a code, a choice) for the tool or hook
	// that asked, which reads it with [AnswerFrom] or the hook event's Answer.
	// For an approval request the agent itself made (a policy's ask), Data may
	// instead hold replacement arguments for the call: Data is then itself the
	// new arguments object ({"path": "b.txt"}, not wrapped in another key), and
	// the call runs with them after they are validated and authorized again.
	Data json.RawMessage `json:"data,omitempty"`
	// Reason explains a decline; the model sees it.
	Reason string `json:"reason,omitempty"`
	// By is who answered (a person, a Permission hook, a flag, the runtime);
	// the agent keeps it in the decision record. In JSON an object
	// {"kind": "person", "name": "alice"}; an answer written before it was
	// typed holds its text form ("alice", "hook:gate"), which is still read
	// ([PrincipalOf]).
	By Principal `json:"by,omitzero"`
	// Actor, when not zero, is who gave the answer on By's behalf: an
	// administrator answering for the person named in By (the "act" claim of
	// RFC 8693, section 4.1). The agent keeps both in the decision record.
	Actor Principal `json:"actor,omitzero"`
}

// WaitFunc blocks until req is answered or ctx ends (seed 002's wait_for /
// wait_for_ctx). It must honour ctx's deadline and return ctx.Err() then.
type WaitFunc func(ctx context.Context, req Request) (Answer, error)

type answerKey struct{}

// WithAnswer returns a context carrying the answer to the call's earlier pending
// request. The agent uses it when it retries a call after an answer.
func WithAnswer(ctx context.Context, a Answer) context.Context {
	return context.WithValue(ctx, answerKey{}, a)
}

// AnswerFrom returns the answer carried by ctx, if the current call is a retry
// after a pending request was answered.
func AnswerFrom(ctx context.Context) (Answer, bool) {
	a, ok := ctx.Value(answerKey{}).(Answer)
	return a, ok
}

// WithoutAnswer returns a context in which [AnswerFrom] finds no answer: for
// work that a call starts on its own behalf (a sub-agent), which must not
// mistake the call's approval for its own.
func WithoutAnswer(ctx context.Context) context.Context {
	return context.WithValue(ctx, answerKey{}, nil)
}
