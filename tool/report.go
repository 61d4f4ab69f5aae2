package tool

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
	// at most 1,024 bytes; a host escapes it before printing.
	Message string `json:"message,omitempty"`
}

// Notice is something that happened, during a call, to what a tool relies
// on, for the people and hosts that watch the run (the model does not see
// it): an MCP server restarted, say.
type Notice struct {
	// Kind names what happened. Package mcptool gives three kinds:
	// "restart", what the tool relies on was started again during the call
	// (an MCP stdio server that exited was restarted, or a streamable-HTTP
	// server that lost the session was given a new one); "elicitation",
	// the MCP server behind the tool asked the person for input during the
	// call (MCP elicitation), and what became of it (accepted, declined,
	// cancelled or refused), never the answer itself; "login", the MCP
	// server asked for an OAuth login during the call (its token was
	// revoked, or it wants more scopes) and nobody could log in there and
	// then, never the token.
	Kind string `json:"kind"`
	// Source names what it happened to, as [Spec].Source does ("mcp:github").
	Source string `json:"source,omitempty"`
	// Message says what happened, in one sentence, at most 1,024 bytes.
	Message string `json:"message"`
}

// Reporter receives the progress and notices of one running call
// ([Invocation].Reporter). The agent gives every call one; it may be called
// from any goroutine until the call returns, and not after (reports after
// that are dropped).
type Reporter interface {
	Progress(Progress)
	Notice(Notice)
}
