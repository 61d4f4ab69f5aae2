// Package runs owns a run's life from start to end, for every host: the
// command line, the server and a Go program. It starts a run from a typed, versioned
// [RunConfig] (every path absolute, recorded as resolved when the run
// started), stores it and its events in a [store.Store], checkpoints it after
// every model turn and every finished tool call, halts and stores it when a
// request waits for an answer, records answers with the principal who gave
// them, resumes it exactly once, expires and cancels it, and fires ON_START /
// ON_STOP (seed 000) around each part of it that runs.
//
// # Exactly once
//
// A run that is being driven holds a lease on its stored record (a holder, a
// fencing token, an expiry) and renews it with a heartbeat. Every checkpoint
// is written under the lease: a host that lost its lease (it stalled, another
// took the run over) can no longer write, and its run stops. Of two hosts
// claiming a run at once, exactly one wins ([store.ErrLeased] for the other).
// A run whose lease expired (its host died) is taken over by the next
// [Host.Resume] without any manual step, from its latest checkpoint:
//
//   - a tool call that finished before the checkpoint is never run again,
//     approved or not;
//   - an allowed call that was still running when the host died runs again
//     (at least once: its effect may have happened);
//   - an approved call whose approval was already used by the dead host is
//     never run again (at most once): the model is told it may or may not
//     have run.
//
// Approvals are single-use in the store ([store.Store.Consume]), bound to the
// arguments digest the person saw.
//
// A host that shuts down cancels its runs' context with the cause
// [ErrHostStopping]: a run then keeps its status and latest checkpoint (the
// call cut short is not checkpointed, so it runs again), its lease is
// released and a run.released event stored, and the next Resume takes
// it over at once instead of after the lease's expiry.
//
// The agent is rebuilt from the stored [RunConfig] by the host's [Builder],
// never from the current directory or command-line flags. The files that
// govern the run are pinned by SHA-256 when it starts ([Pin]), and
// every later build refuses one that changed, appeared or vanished
// ([ErrGoverningFileChanged]): a tool of the run cannot rewrite its policy
// while it waits and have the resume load it.
//
// # Stored events
//
// A host stores a run's events in the store's event log, typed (in the
// order a run passes them): run.started, run.resumed, tool.call,
// tool.decided, approval.requested, tool.finished, turn.usage,
// tool.notice, mcp.login, run.halted, run.finished, run.cancel_requested,
// run.cancelled, run.released. The data of tool and approval events is the
// agent's [agent.Event] as JSON; of run.halted, run.finished and
// run.cancelled, {"status", "reason"}.
//
// The command's hosts (`tollgate serve`, `tollgate worker`) also build each
// agent once per tenant and configuration and reuse it across runs, and
// drive runs as durable workflows on DBOS Transact, so that runs spread
// over many worker processes survive any of them dying (docs/durable.md).
package runs
