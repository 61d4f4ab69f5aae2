// Package hooks is the lifecycle middleware of seed 002: four hook stages around
// every model call and every tool call, to audit, redact, veto or rewrite.
//
//   - BeforeLLM sees the outgoing messages, tools, model and turn, and may replace
//     any of them, or supply a canned response so that the model is not called.
//   - AfterLLM observes each model response (with its usage).
//   - BeforeTool sees the call's tool name, arguments, call ID, turn and the tool's
//     [tool.Hints], and may rewrite the arguments, short-circuit with a result
//     (the real tool never runs), or return a pending request for an approval.
//   - AfterTool sees the result and may replace it; what it returns is what the
//     model, the transcript, the events and the logs see.
//
// Several hooks of each stage may be registered; they form a chain run in
// registration order ([Hooks.BeforeTool] etc.). Composition rules
// (docs/architecture.md, "The tool-call pipeline"):
//
//   - Each BeforeTool hook sees the arguments as rewritten by the hooks before it.
//     The first hook that returns a result (a denial, a cache hit, a dry run) or a
//     pending request ends the chain. A hook that returns nil has no opinion and
//     changes nothing, so a rewrite survives later hooks with no opinion.
//   - A pending request is resolved by its answer: once a person approves a
//     hook's request, package agent runs the chain again and that hook's ask,
//     for the same arguments, no longer ends it.
//     A gate may simply ask every time; the hooks after it are still heard.
//   - Each AfterTool hook sees the result as replaced by the hooks before it;
//     none is skipped.
//   - Each BeforeLLM hook sees the messages, tools and model as replaced by the
//     hooks before it; the first canned response ends the chain.
//   - Every AfterLLM hook runs.
//
// Arguments reach each hook as a private copy: changing the bytes of an event's
// Args in place has no effect on the call. The only way to rewrite arguments is
// to return them in [ToolOverride.Args]. The same holds for results: the event's
// Result is a copy (its Metadata map too), and only a returned override replaces it.
//
// A hook's returned error, or its panic, fails the run with an [*Error] that names
// the stage and the hook (seed 002: "an Err fails the run with ClientError::Hook").
// Hooks may be called from several goroutines at once, since the tool calls of
// one model turn run concurrently.
//
// The package also declares [ToolCallListener], the agent's single tool call
// listener of seed 000 (PRE_TOOL_USE, POST_TOOL_USE, ON_ERROR), which package
// hooks/declarative implements.
package hooks
