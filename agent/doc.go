// Package agent is tollgate's one agent loop: system prompt, user prompt, model
// turn, the model's tool calls through the governed pipeline, repeat, until the
// model answers without tool calls.
//
// # The tool-call pipeline
//
// Every tool call passes these steps in this order (docs/architecture.md):
//
//  1. Resolve the tool by name; an unknown name is an error result naming it.
//  2. Validate the arguments against the tool's input schema; invalid arguments
//     are an error result listing the problems.
//  3. The BeforeTool chain (seed 002, package hooks). A result short-circuits; a
//     pending request suspends; rewritten arguments are validated again.
//  4. Authorization: every [approval.Authorizer] on the final tool and
//     arguments, with the hooks' allow votes, combined deny > ask > allow. A
//     denial is an error result carrying the reason; ask suspends the call on
//     an approval request bound to the arguments' digest.
//  5. The tool call listener's PreToolUse (seed 000), on the call's goroutine.
//  6. Execute with the call's context; an error or a panic is an error result.
//  7. The listener's PostToolUse, then OnError when the call failed.
//  8. The AfterTool chain; its final result is what the model, the transcript,
//     the events, the records and the logs see.
//  9. Record: a [gate.Record] with both argument forms, the result, timings
//     and the [Decision] with every vote and who decided.
//
// Steps 5 to 8 happen only when the tool really runs. A short-circuit, a
// validation failure or a denial goes straight to step 9. A pending request is
// not a result: nothing after it runs until it is answered.
//
// # Arguments: asked versus executed
//
// The transcript always keeps the model's original call. The tool, the
// AfterTool hooks, the listener, events and records see the executed
// arguments; the record keeps both ([gate.Record].RequestedArgs and Args).
// Hooks receive private copies: changing an event's Args in place has no
// effect; only a returned override rewrites.
//
// # Concurrency
//
// One turn may ask for at most Options.MaxToolCalls tool calls (default
// 128); a turn that asks for more runs none of them and ends
// the run with a [*TooManyToolCallsError], so that a model cannot make a run
// carry (and checkpoint) an unbounded batch. A call's arguments nested
// deeper than argcheck.MaxDepth are kept as the model's text (a JSON
// string) in the transcript and the records, and the call is invalid: the
// run's state must read back from a store, which refuses documents nested
// 1,000 deep.
//
// The tool calls of one turn are started in the model's call order and run
// concurrently, at most Options.MaxParallel at a time; with more than one at a
// time their hooks and events interleave in whatever order they happen, and
// with 1 they run one after another, in order. Their results always enter the
// transcript in the model's call order. Hooks, authorizers, WaitFor, OnRecord and the listener may therefore
// be called from several goroutines at once. A hook error fails the run once
// the turn's other calls have finished (they are not cancelled, so none is
// left half done); the partial result records every call that ran.
//
// Each call runs on a goroutine of its own, and its tool on another (so that
// a tool that ignores its context can be abandoned after 5 seconds more; it
// keeps its goroutine until it returns). An idle agent holds no goroutine.
//
// # Suspension
//
// A call that needs an answer (a BeforeTool hook's or a tool's
// [tool.Pending], or an authorization "ask") suspends on a [tool.Request]. With
// Options.WaitFor the call waits for the answer and is retried once with it
// (hooks see it in the event and tools as [tool.Invocation].Answer); a second
// pending request, or a declined answer, is an error result, but for the
// request a tool raises while it runs on an approval: the call waits for
// it too, with the approval carried ([gate.Pending].Approved), and is
// retried once more with its answer, the approval covering the arguments
// it was given for. An approved
// request of a BeforeTool hook resolves that hook's ask (seed 002: "ask = a
// pending(...) result, which wait_for / wait_for_ctx resolves"): on the retry,
// when the same hook asks again for the arguments it asked about (their
// digest), its ask counts as answered and the chain goes on, so a gate need not
// check [hooks.BeforeToolEvent].Answer. Every other hook and the authorizers are
// heard as on any call, so a deny still wins; a hook's ask for other arguments,
// or another hook's ask, is a second request. A hook's approval request
// without Data gets the call's [approval.RequestData] (tool, call ID,
// arguments, digest, the prompt as reason, the hook as who asked), so that
// the person is shown what the approval lets run; an approval of it with
// edited arguments stops the call unless a hook applied them (rewrote the
// arguments into the answer's), since the call would otherwise run with
// arguments the person did not approve. Without WaitFor the
// run halts with [StatusPending] once every call of the turn has finished or
// suspended; the calls that were allowed have run and are not run again.
// [Result].State serializes to JSON (versioned: [StateVersion]), and
// [Agent.Resume] continues the run with answers, here or in another process.
// A [State] is opaque: a host reads it through its methods ([State.Waiting],
// [State.PendingRequests], [State.Messages], ...), never its encoding. An approval answer covers the call only
// for the arguments it was given for (their digest); an answer may carry edited
// arguments, which are validated and authorized again (a deny still wins).
//
// # Streaming
//
// [Agent.Run] and [Agent.Stream] are the same loop. Stream asks a model that
// implements [model.Streamer] for each turn as a stream and yields its text
// deltas as they arrive; Run and [Agent.Resume], which nobody reads deltas
// from, ask with one Generate call per turn, so that they pay for no
// streaming; they build no event but the last either, though they number the
// events Stream would yield, so that states and checkpoints carry the same
// sequence numbers either way. A BeforeLLM hook
// that supplies a response means the model is not called, on Run, Stream and
// Resume alike.
package agent
