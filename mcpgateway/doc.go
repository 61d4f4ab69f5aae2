// Package mcpgateway is an MCP server that governs every tool call an MCP
// client makes: it stands in front of the upstream servers of a
// [mcptool.Set] and decides each tools/call with a [gate.Gate], as the
// agent loop decides its own calls (docs/architecture.md, "The tool-call
// pipeline").
//
// # Names
//
// The client sees an upstream's own tool names when the set has one server
// (so that a client, or a test suite, sees that server as it is), and
// names prefixed by the server's ("fs__read_file", the tool's
// name (mcp__SERVER__TOOL, [mcptool.Tool]) without "mcp__") when it has several. The gate, its
// policies, hooks and records always see the names of the native runtime
// (mcp__SERVER__TOOL), so that one policy governs both.
//
// The gateway's own tools ([Options].Tools: the builtins of a workspace)
// are served beside the upstreams' under their own names, which the gate
// sees too; with them, the upstreams' tools are always prefixed.
//
// # A call
//
// Every tools/call is a [gate.Call] with source [gate.SourceMCP]: resolve,
// validate against the upstream's input schema, BeforeTool hooks, the
// authorizers (deny > ask > allow, hints as [mcptool.HintsFor] gives them:
// an untrusted server's are the strictest), then the upstream call as the
// runner of [gate.Gate.Complete], the AfterTool hooks, the cap and the
// record. The client gets the upstream's answer as it came (every content
// kind, structuredContent) when nothing changed it; when an AfterTool hook
// replaced the result, the cap cut it or a hook added notes, the client
// gets the final text alone, so that a redaction reaches it. A call that
// did not run is an isError result saying why.
//
// A call that needs a person is asked, when [Options].Elicit is set and the
// client declared form elicitation, through elicitation/create (MCP
// specification 2025-11-25, "Client: Elicitation"): accept with approve
// true approves it (the person named by [Options].Answerer), anything
// else declines it. Otherwise it is refused with an isError result saying
// that it needs an approval and that no one can give it here. Nothing the
// client sends in a tools/call approves a call.
//
// # Listing
//
// tools/list leaves out the tools the authorizers deny outright: those
// denied for a call with no arguments (a rule on the tool's name, hints or
// risk; a rule that needs an argument's value never holds there). A call
// to such a tool is still decided, denied and recorded. The upstreams'
// tool lists are read again ([mcptool.Set.Refresh]) before every
// tools/list and tools/call, and the client is told of a change
// (notifications/tools/list_changed).
package mcpgateway
