package tool

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/tollgate-dev/tollgate/internal/toolctx"
)

// Invocation is what one tool call carries for the tool that runs it, as
// go-sdk's CallToolRequest does: which run, which call of which turn, the
// answer to the call's earlier pending request if this is the retry after
// one (seed 002: a pending(...) result "which wait_for / wait_for_ctx
// resolves"), the run's storage, and where progress goes. The agent makes
// one for every call; a tool reads it with [InvocationFrom].
type Invocation struct {
	// RunID is the ID of the run the call belongs to.
	RunID string
	// AgentID is the ID of the agent that runs the call.
	AgentID string
	// CallID is the model's ID of the tool call (unique within the run's turn).
	CallID string
	// Turn is the 1-based model turn that asked for the call.
	Turn int
	// Answer is the answer to the call's earlier pending request, or nil
	// when the call is not a retry after one.
	Answer *Answer
	// State is the run's storage for tools ([RunState]), or nil when the
	// call is not part of a run that keeps one.
	State *RunState
	// Reporter receives the call's progress and notices, or is nil when
	// nobody listens; tools report through [Invocation.Progress] and
	// [Invocation.Notice].
	Reporter Reporter
}

// InvocationFrom returns the invocation of the tool call ctx belongs to, or
// the zero Invocation when ctx is not a tool call's (a test calling a tool
// directly): no answer, no state, and reports that go nowhere, so that
// tool.InvocationFrom(ctx).Answer and tool.InvocationFrom(ctx).Progress(p)
// need no check.
func InvocationFrom(ctx context.Context) Invocation {
	if inv, ok := ctx.Value(toolctx.InvocationKey{}).(*Invocation); ok && inv != nil {
		return *inv
	}
	return Invocation{}
}

// Progress hands p, its message cut to 1,024 bytes at a character boundary,
// to the call's Reporter; it does nothing when the Reporter is nil.
func (inv Invocation) Progress(p Progress) {
	if inv.Reporter != nil {
		p.Message = cutMessage(p.Message)
		inv.Reporter.Progress(p)
	}
}

// Notice hands n, its message cut to 1,024 bytes at a character boundary,
// to the call's Reporter; it does nothing when the Reporter is nil.
func (inv Invocation) Notice(n Notice) {
	if inv.Reporter != nil {
		n.Message = cutMessage(n.Message)
		inv.Reporter.Notice(n)
	}
}

// maxReportMessage bounds the Message of a [Progress] or [Notice], in bytes.
const maxReportMessage = 1024

func cutMessage(s string) string {
	if len(s) <= maxReportMessage {
		return s
	}
	cut := maxReportMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.ToValidUTF8(s[:cut], "") + "…"
}
