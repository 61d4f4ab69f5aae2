package tool

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/tollgate-dev/tollgate/internal/toolctx"
)

// Progress is how far a running tool call has come, as the tool reports it
// (MCP specification 2025-06-18, "Utilities: Progress": progress, total,
// message).
type Progress struct {
	// Progress is the amount done so far; it grows with every report, even
	// when the total is unknown.
	Progress float64 `json:"progress"`
	// Total is the amount to do; 0 when unknown.
	Total float64 `json:"total,omitempty"`
	// Message says what the tool is doing, in its own words: untrusted text,
	// at most [MaxReportMessage] bytes; a host escapes it before printing.
	Message string `json:"message,omitempty"`
}

// Notice kinds.
const (
	// NoticeRestart: what the tool relies on was started again during the
	// call (an MCP stdio server that exited was restarted, or a streamable-
	// HTTP server that lost the session was given a new one).
	NoticeRestart = "restart"
	// NoticeElicitation: the MCP server behind the tool asked the person
	// for input during the call (MCP elicitation), and what became of it
	// (accepted, declined, cancelled or refused); never the answer itself.
	NoticeElicitation = "elicitation"
	// NoticeLogin: the MCP server behind the tool asked for an OAuth login
	// during the call (its token was revoked, or it wants more scopes) and
	// nobody could log in there and then; never the token.
	NoticeLogin = "login"
)

// Notice is something that happened, during a call, to what a tool relies
// on, for the people and hosts that watch the run (the model does not see
// it): an MCP server restarted, say.
type Notice struct {
	// Kind names what happened, such as [NoticeRestart].
	Kind string `json:"kind"`
	// Source names what it happened to, as [Spec].Source does ("mcp:github").
	Source string `json:"source,omitempty"`
	// Message says what happened, in one sentence, at most
	// [MaxReportMessage] bytes.
	Message string `json:"message"`
}

// MaxReportMessage bounds the Message of a [Progress] or [Notice] handed to
// a [Reporter], in bytes; [ReportProgress] and [ReportNotice] cut longer
// ones at a character boundary.
const MaxReportMessage = 1024

// Reporter receives the progress and notices of one running call. The agent
// puts one on every call's context; it may be called from any goroutine
// until the call returns, and not after (reports after that are dropped).
type Reporter interface {
	Progress(Progress)
	Notice(Notice)
}

// WithReporter returns ctx carrying r for [ReportProgress] and [ReportNotice].
func WithReporter(ctx context.Context, r Reporter) context.Context {
	return context.WithValue(ctx, toolctx.ReporterKey{}, r)
}

// ReportProgress hands p, its message cut to [MaxReportMessage] bytes, to the
// reporter of ctx, and does nothing when ctx has none.
func ReportProgress(ctx context.Context, p Progress) {
	if r, ok := ctx.Value(toolctx.ReporterKey{}).(Reporter); ok && r != nil {
		p.Message = cutMessage(p.Message)
		r.Progress(p)
	}
}

// ReportNotice hands n, its message cut to [MaxReportMessage] bytes, to the
// reporter of ctx, and does nothing when ctx has none.
func ReportNotice(ctx context.Context, n Notice) {
	if r, ok := ctx.Value(toolctx.ReporterKey{}).(Reporter); ok && r != nil {
		n.Message = cutMessage(n.Message)
		r.Notice(n)
	}
}

func cutMessage(s string) string {
	if len(s) <= MaxReportMessage {
		return s
	}
	cut := MaxReportMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.ToValidUTF8(s[:cut], "") + "…"
}
