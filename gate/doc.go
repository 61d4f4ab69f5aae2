// Package gate is the governed tool call as a service: it decides and
// completes one call for any caller, with the hooks, policies and approvals
// of docs/architecture.md's pipeline.
//
// A call is decided in two halves with values between them that serialize,
// so that the halves may run in different processes, or days apart:
//
//   - [Gate.Decide]: resolve the tool, validate the arguments against its
//     schema, the BeforeTool hooks (rewrite, short-circuit, ask), the
//     authorizers (deny > ask > allow), the Permission hooks, and, when
//     the answer is ask, a [Pending] request bound to the arguments'
//     digest. Called again with the request's answer, it checks the
//     answer (expiry, digest, edits validated and authorized again) and
//     hears every source again. Its [Ruling] is Allowed, a Record (the
//     call ended without running), Pending, or Err.
//   - [Gate.Complete]: for an Allowed call, the tool call listener's
//     PRE_TOOL_USE, POST_TOOL_USE and ON_ERROR (seed 000), the tool, or
//     the result the caller reports for a tool it ran elsewhere
//     ([Reported]), the AfterTool hooks (which may replace the result),
//     the cap, and the [Record].
//
// A [Call] says who asks ([Source], a principal), for which run or
// session, in which workspace. Its users are the agent loop (package
// agent), the durable engine's decide and execute steps (package runs),
// and agents tollgate does not run, which run their tools themselves and
// report the results. Each passes the conformance suite of package
// gate/gatetest.
package gate
