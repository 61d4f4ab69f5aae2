// Package mcptool makes the tools of MCP servers tollgate tools, on the official
// MCP Go SDK (github.com/modelcontextprotocol/go-sdk).
//
// [Load] or [Parse] reads an mcp.json in the common format (an "mcpServers"
// map; "command", "args", "env", "cwd" for a stdio server; "url", "headers" for
// a streamable HTTP server; "disabled", "timeout", "callTimeout", "trusted";
// "sandbox", "sandboxRead", "sandboxConnect" for a stdio server).
// [Open] connects every enabled server, lists its tools, and returns a [Set]
// whose [Set.Tools] go into a tool registry like any other tool; [Set.Servers]
// says how each server fared, and [Set.Close] stops them all.
//
// A stdio server gets tollgate's environment scrubbed to an allowlist (PATH,
// HOME, LANG, LC_*, TERM, TMPDIR, ...) plus its "env": provider keys and other
// secrets reach it only when "env" names them ("GITHUB_TOKEN": "${GITHUB_TOKEN}").
// With [Options].Sandbox set (the tollgate command sets it), a stdio server
// runs confined as its "sandbox" says ("off", "workspace" or "read-only"; the
// command's default is "workspace"), with "sandboxRead" naming further
// paths it may read (its installation outside the system directories, a
// cache) and "sandboxConnect" the TCP ports it may connect to.
//
// ${NAME} and ${NAME:-default} in "args", "cwd", "env" and "headers" values are
// expanded from the environment ([Options].LookupEnv) when a server starts, and
// never logged; "command" is taken as written. A relative "cwd" is resolved
// against the directory of the file (after expansion, when it uses ${...}),
// and a relative "command" with a path separator against the cwd, so that
//
//	{"mcpServers": {"fs": {"command": "node_modules/.bin/mcp-server-filesystem",
//	                       "cwd": ".", "args": ["${WORKSPACE}"]}}}
//
// runs the server installed next to the file on the directory $WORKSPACE names,
// wherever tollgate runs from.
//
// # OAuth
//
// A streamable-HTTP server behind OAuth 2.1 (MCP specification 2025-11-25,
// "Authorization") is authorized by the handler [Options].OAuth returns;
// [NewOAuthHandler] gives the go-sdk's authorization code handler: RFC 9728
// discovery from the 401's WWW-Authenticate, RFC 8414 metadata, client ID
// metadata document, pre-registered client ("oauth" in mcp.json, see
// [OAuthConfig]) or dynamic registration, PKCE S256, the server's URL as
// RFC 8707 resource, scope step-up on 403 insufficient_scope. Its logins
// are kept in [OAuthOptions].Dir (0600 files, one per server URL) and used from
// the start by later handlers, refreshed before they expire. Without a
// person to log in ([OAuthOptions].Fetch nil) a 401 fails the server with
// [ErrLoginRequired]. The token goes to the server's URL only; a redirect
// to another origin is not followed.
//
// # Elicitation
//
// The client declares elicitation, form and URL mode. A server's
// elicitation/create is checked (at most 50 fields and 32 KiB of schema, a
// message of at most 4 KiB, an http or https URL of at most 2 KiB; a form
// field that asks for
// a password, token, key or other secret is refused, as the specification
// requires) and becomes a [tool.Request] for [Options].Elicit, whose answer
// accepts, declines or cancels; the SDK checks the accepted content
// against the schema and fills in its defaults. With no Elicit (or one
// returning [ErrAskLater]: nobody at a terminal) the call during which the
// server asked halts on a pending request, the form's fields as questions,
// and the call taken up again with a person's answer gives it to the
// server's identical elicitation, once (see [Tool.Call]).
//
// # Names
//
// A tool appears as mcp__<server>__<tool> ([ToolName]), so that matchers such
// as mcp__fs__* select one server's tools in hooks and policies. Two tools that
// end up with the same name are an error naming both ([CollisionError]), never
// a silent shadow.
//
// # Hints and trust
//
// Seed 002 gates permissions on hints, so that one rule covers MCP tools,
// builtins and functions alike. MCP tool annotations (MCP specification
// 2025-06-18, "Tools: Tool annotations") map onto [tool.Hints]:
//
//	readOnlyHint    -> ReadOnly     default false
//	destructiveHint -> Destructive  default true
//	idempotentHint  -> Idempotent   default false
//	openWorldHint   -> OpenWorld    default true
//
// The annotations come from the server and the specification calls them
// untrusted unless the server is. A server is untrusted unless its
// configuration says "trusted": true. For a trusted server the annotations are
// taken as given, with the defaults for the missing ones. For an untrusted
// server the annotations may only make a gate stricter; since each default is
// already the strictest value, every tool of an untrusted server gets exactly
// the defaults (not read-only, destructive, not idempotent, open world),
// whatever it claims ([HintsFor]). What the server claimed stays visible in
// the annotations of [Tool.Listed]; HintsFor(annotations, true) gives the
// hints it claims.
//
// # Results
//
// [Tool.Call] passes the arguments through and turns the MCP result into the
// [tool.Result] the model sees: text joined with newlines, other content kinds
// described by type, MIME type and size, structuredContent as JSON when there is
// no text, and isError as an error result. Cancelling the call's context
// cancels the request on the server.
//
// Every result's Metadata says where it came from, for records and events:
//
//	mcpServer             the server's name (a string)
//	mcpTool               the tool's name on the server (a string)
//	mcpStructuredContent  the structuredContent, when the server sent one (JSON;
//	                      its text, a string, when nested deeper than
//	                      100 levels)
//	mcpContent            every content item that is not text, each
//	                      {type, mimeType?, size (bytes, -1 unknown), uri?, name?}
//	mcpCutFrom            the size in bytes (an int64) of a server's message
//	                      over [Options].MaxMessageBytes, whose result was cut
//	mcpElicitations       the elicitations the server made during the call,
//	                      each {server, mode (form|url), outcome (accept,
//	                      decline, cancel, refused), by?, reason?}; never the
//	                      person's answer
//
// # Progress, list changes and restarts
//
// Every tools/call carries a progress token; the server's
// notifications/progress for it reach the call's [tool.Invocation].Reporter (the agent
// makes them progress events of the call; MCP specification 2025-06-18,
// "Utilities: Progress"). Reports for a token no call holds are dropped.
//
// A server's notifications/tools/list_changed marks it; [Set.Refresh], which
// the agent calls before every model turn ([Set] is an
// agent.RefreshingToolset), lists its tools again with the rules of [Open]
// (names, schemas, hints and trust), so that a new tool is offered from the
// next turn and a removed one is gone (a call to it is an unknown tool). A
// server that got a new session is listed again the same way.
//
// A renewal during a call (below) is reported to the call's reporter as a
// "restart" notice (an agent notice event), beside
// [ServerStatus].Renewals.
//
// # Servers that misbehave
//
// One bad tool or line never takes a server down:
//
//   - A tool whose input schema cannot be used (a $ref to a definition the
//     schema lacks, a type other than object) or whose name is empty, not
//     UTF-8, over 1024 bytes or holds control characters is skipped alone:
//     [ServerStatus].Skipped names it with the reason; its siblings are
//     offered. Refs that resolve, to $defs or draft-07 definitions, work.
//   - Lines on a stdio server's stdout that are not JSON-RPC messages (a
//     banner, "[info] ..." or JSON log records) are dropped; the first 20 are
//     logged, quoted and cut to 200 bytes.
//   - A streamable-HTTP server that answers 404 for the session (it
//     restarted) gets a new session, and the call is sent again, since the
//     server never ran it (MCP specification 2025-06-18, "Transports: Session
//     management"). A call in flight when a stdio server exits fails at once
//     with an error; the next call starts the server again. A renewal tries at
//     most 3 times, 200 ms and then 400 ms apart, each try bounded by the
//     server's "timeout"; [ServerStatus].Renewals counts them.
//   - A message from a stdio server over [Options].MaxMessageBytes (4 MiB by
//     default) never reaches the SDK, whose own limit (16 MiB) would close
//     the connection: it is read to its end in bounded memory and replaced.
//     A tool result keeps the first 256 KiB of its text with a note saying
//     it was cut ("mcpCutFrom" in the metadata); another
//     answer becomes an error for its request; a request or notification is
//     dropped. The session and the process stay, and later calls use them.
//   - A streamable-HTTP server's JSON response body, or one event of its SSE
//     stream, over [Options].MaxMessageBytes is not read further: the body is
//     closed at the limit and the request fails ([ErrHTTPMessageTooLarge]),
//     so that memory holds at most the limit, not what the server sends.
//   - A streamable-HTTP server with "headers" that redirects to another
//     scheme, host or port is not followed ([ErrCrossHostRedirect]): its
//     headers (Authorization, API keys) would go there.
//
// What a recovery costs: a skipped tool or line, nothing measurable; a new
// HTTP session, one initialize round trip before the call (about 4 ms
// against a local server in the tests); a stdio restart, the server's start
// and initialize (about 9 ms for a small Go server in the tests; a Node.js
// server takes its own start-up time); giving up on a server that cannot
// start again, about 0.6 s of backoff plus three failed starts. A call in
// flight when its stdio server exits fails as soon as stdout closes (about
// 1 ms in the tests). Cutting an oversized message costs reading it to its
// end, in bounded memory: about 0.2 s for a 16 MiB result in the tests;
// the session goes on at once.
// Refreshing a server's tools costs one tools/list round trip before the next
// model turn, and only after the server announced a change.
//
// # Processes
//
// A stdio server runs in its own process group. Closing it follows the MCP
// shutdown sequence (close stdin, wait, SIGTERM, wait, SIGKILL), sends the
// signals to the whole group, and kills whatever is left of the group at the
// end, so neither the server nor a child it started stays behind; each wait is
// bounded by [Options].ShutdownGrace.
//
// Unix only (process groups). mcptool never writes to stdout or stderr; it logs
// through [Options].Logger, and never logs header or environment values.
package mcptool
