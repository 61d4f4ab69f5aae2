// Package server serves runs and approvals over HTTP: the server teams run
// in front of their agents (`tollgate serve`), seed 000's TnsServer with
// durable approvals. A [Server] is an [net/http.Handler] (the caller owns
// the listener) over a [store.Store] and a [runs.Builder]; it starts runs,
// halts them on approvals, lets a person decide over the API, and resumes
// each answered run by itself, exactly once, even with several servers on
// one store.
//
// # API
//
// JSON, RFC 3339 times, opaque cursors (?cursor= from a page's next), errors
// as RFC 9457 problem details (application/problem+json; beyond the plain
// statuses their type is https://tollgate.dev/problems/ and one of
// already-decided, expired, digest-mismatch, invalid-edit, role,
// idempotency-key-reused, too-many-streams, too-many-runs,
// too-many-tickets, written .../NAME below):
//
//	POST /v1/runs?wait=                {agent, prompt}; Idempotency-Key header   operator
//	GET  /v1/runs?status=&order=oldest|newest&cursor=&limit=                     viewer
//	GET  /v1/runs/{id}                 status, transcript, tool calls, pending    viewer
//	POST /v1/runs/{id}/cancel                                                     operator
//	GET  /v1/approvals?status=&run=&cursor=&limit=                                viewer
//	GET  /v1/approvals/{id}            tool, arguments, digest, hints, risk,
//	                                   who asked and why, expiry, input schema,
//	                                   a question's questions, the run's context
//	                                   (source, prompt, intent, workspace,
//	                                   earlier decisions on the tool)             viewer
//	POST /v1/approvals/{id}/decision   {decision, reason?, editedArgs?, answer?,
//	                                   argsDigest}                                approver
//	GET  /v1/autonomy, PUT /v1/autonomy {level, run?}  (seed 000's set_autonomy)  viewer / approver (run) / admin (tenant)
//	POST /v1/events/ticket             a 60 s ticket for ?ticket= on the streams  viewer
//	GET  /v1/events?run=&after=        Server-Sent Events                         viewer
//	GET  /v1/ws?run=&after=            the same events on a WebSocket, and
//	                                   approve / deny / modify / answer /
//	                                   set_autonomy                               viewer (approver to decide)
//	GET  /v1/agents                    the agents the caller's tenant may start   viewer
//	GET  /v1/agents/{name}/policy      the policy file the configuration names
//	                                   for the agent (claude-code, codex: their
//	                                   section's), as text                        viewer
//	GET  /v1/shadow?since=             how often each shadow rule would have voted
//	                                   on the tenant's recorded calls             viewer
//	GET  /v1/audit?tool=&rule=&person=&source=&outcome=&since=&limit=&format=json|jsonl
//	                                   the tenant's decided calls, searched;
//	                                   jsonl exports one a line                   viewer
//	POST /v1/policy/replay             {policy, since?}: a candidate policy
//	                                   replayed on the tenant's recorded calls    approver
//	GET  /v1/me                        the token's principal                      viewer
//	GET  /healthz, /readyz, /metrics   no token (the store's counts in /metrics are read at most every 10 s)
//	GET  /, /assets/..., any other GET [Options.Page], when set
//
// POST /v1/runs answers once the run is stored (201, status running); with
// ?wait=30s (a Go duration; a longer one than 10m is cut to 10m) once it
// settled, that is ended (status done, incomplete, error or cancelled) or
// halted for a person's answer (status pending), or the wait is over: the
// run as stored then, in the same round trip, 201 (200 for a keyed start
// sent again) whatever its status. A wait on a run driven elsewhere (a
// worker, or a keyed request sent again) follows its events as a stream
// does (from where the log is when the wait starts)
// and takes one of the principal's stream places (none free: no wait);
// it ends, as a stream does, when the server shuts down.
// POST /v1/runs with an Idempotency-Key the same principal sent before is
// that run (200), however often it is sent; with another agent or prompt
// it is 422 (problem type .../idempotency-key-reused). Other errors: 404 an
// agent the caller's tenant may not use (as an unknown one), 422 an empty
// prompt or a run whose agent does not build (its detail names the key of
// server.yaml the problem is at, as the user wrote it, with the file and
// line by [Options.AgentProblem]: "server.yaml:12:13: agents.payer.policy:
// ..."; `tollgate serve` finds these at start), 429 (.../too-many-runs,
// with Retry-After) a start while the caller's tenant has
// [Options.MaxRunsPerTenant] runs running on the server. A request body
// that does not arrive within [Options.BodyReadTimeout] is 408, its
// connection closed. A path no endpoint has is 404; a method its endpoint
// does not answer is 405 with the methods it does in Allow (RFC 9110).
//
// Limits: a JSON request body is at most 1 MiB (413 over; POST /v1/runs 4
// MiB, a policy to replay 256 KiB) and nested at most 64 deep; an
// Idempotency-Key at most 255 bytes; GET /v1/audit gives 1,000 entries
// unless ?limit= says more, at most 100,000; at most 64 MCP logins are
// under way at once, 8 of one tenant; a webhook delivery is tried 5 times.
//
// A decision's argsDigest is required to approve; a deny needs none (a
// wrong one is still 412) but needs a reason, which the model is told. A
// question (kind question) is approved with an answer and only so: answer
// holds one list of choices per question ({"answers": [["Blue"], ["Mon",
// "my own words"]]}), an option's label or the person's own words. 400 a
// deny without a reason, a question approved without an answer, an answer
// on an approval, or both answer and editedArgs. Decision errors: 404 an unknown approval or
// another tenant's, 409 already decided (the same decision sent again by
// the same principal is answered 200, as the first), 410 expired, 412 argsDigest is not the digest of the
// arguments shown, 422 editedArgs that do not fit the tool's input schema
// (they are authorized again when the run goes on) or an answer that does
// not fit the questions, 403 a role that may
// not, 401 no or an unknown token.
//
// # Tokens, tenants, roles
//
// Every /v1 request carries Authorization: Bearer TOKEN; the server keeps
// only SHA-256 hashes of tokens (the tokens file of `tollgate serve`, or
// any [Options.Tokens] lookup), each mapped to a [Principal]: a name, a tenant and roles ([Role]). Every query is scoped by
// the principal's tenant, and another tenant's run or approval is 404. The
// principal recorded on a decision, a cancel or a started run is the
// token's ("person:NAME"), never a field of the body. Browsers' EventSource
// and WebSocket cannot send headers: POST /v1/events/ticket (with the
// header) returns a ticket that authenticates ?ticket= on the two stream
// endpoints for 60 seconds, with the viewer role only: a ticket travels in
// a URL, so a WebSocket that decides must send the Authorization header.
// A ticket may be used again until it expires; the tickets alive at once
// are capped per principal and in all ([Options.MaxTickets]), a mint over a
// cap being 429 (.../too-many-tickets) with Retry-After.
//
// An agent with tenants ([Options.AgentTenants], tenants: in the
// configuration) exists only for principals of those tenants: GET
// /v1/agents lists only the caller's agents, and POST /v1/runs naming
// another tenant's agent is 404, as for an unknown one. An agent without
// tenants is open to every tenant.
//
// # Events
//
// GET /v1/events streams the store's event log for the principal's tenant
// (or one run): each SSE event's id is the store's sequence number, its
// event name the type (run.started, run.halted, run.finished,
// approval.requested, approval.decided, approval.expired, tool.decided with
// its votes, tool.finished, autonomy.changed, ...) and its data a
// stream event ({seq, type, runId, time, data}, as webhooks post
// it); the data of run.halted holds the run's status and, as
// its reason, what it waits for ("waits for an answer: approval of
// transfer (req_…)"). A client that reconnects with Last-Event-ID (EventSource
// does) or ?after=SEQ gets every later event once: the store's numbers are
// never visible out of order. A comment line is sent every heartbeat. A
// client that stops reading is dropped once a write to it does not finish
// within [Options.StreamWriteTimeout], which frees its place among the
// capped streams. A stream of one run (?run=) ends once the run's end (run.finished or
// run.cancelled) was sent, and at once when the client had seen it (its
// Last-Event-ID or ?after= is past it); a tenant's stream stays open. The
// WebSocket stays open for decisions either way.
//
// [Options.Webhooks] (webhooks: in the configuration) post the same events
// of a tenant to URLs, signed per Standard Webhooks (webhook-id "evt_SEQ",
// webhook-timestamp, webhook-signature), retried with backoff.
//
// # Running runs
//
// [Server.Run] takes the stored runs up when the server starts (halted runs
// whose requests are all answered, runs whose host's lease expired or was
// released) and then follows the event log: a decision or an expiry resumes
// its run once every request of the run is answered. [Server.Shutdown]
// stops streams and new runs, lets running runs finish or halt within its
// context, and then stops them without ending them (runs.ErrHostStopping):
// their latest checkpoint stays, and the next server takes them over.
//
// With [Options.Durable] the runs the server starts are durable runs on a
// queue (runs.DurableQueue; `tollgate serve` wires DBOS from the durable:
// section of its configuration): workers drive them, a decision on one of
// their requests is recorded and then wakes the waiting run, and the
// server never resumes them itself. Their events come from the store like
// any run's.
//
// # Autonomy
//
// PUT /v1/autonomy sets the autonomy level (full_auto, supervised,
// cautious, manual; empty removes the override) of the tenant or of one run,
// stored as an autonomy.changed event. It applies from the next part of a
// run on (a start, or a resume after a halt): the builder is given the
// run's level, its own before its tenant's before the agent's.
//
// # Building agents
//
// The [runs.Builder] given to [New] turns each agent's configuration into
// an agent. internal/runbuild's builder applies all of it (deny, policy, hooks,
// mcp, records, sandbox), as `tollgate serve` does. A builder of one's own
// must list the governance fields it applied in runs.Built.Applied: an
// agent that sets another is refused by `tollgate serve` at its key,
// and its runs by the host, instead of running without it.
//
// The server builds each agent once per tenant and configuration (the
// configuration with the pins of its governing files, and the autonomy
// level in force) and hands the built options to every run and resume of
// it; each part of a run makes its agent from them, and what a run keeps
// (transcript, tools' run state, hooks' per-run values) is in that agent
// and the run's state. [Server.Run] builds each agent for each tenant that
// may start it before the server is ready (at most 32 builds), so that no
// first run waits for its build; one that fails there is logged, and
// tried again by the first run. A governing file changed since is a new
// configuration, built when a run first needs it; a build that fails is
// not kept. An agent with MCP servers or Claude Code project settings is
// built for each run, as its servers are the run's own and the user's
// settings files are not pinned. The kept agents are closed at
// [Server.Shutdown]. A builder given to New must therefore make options
// that several agents may use at once.
//
// # Under a path prefix
//
// A Server may be mounted under a path prefix of another mux:
//
//	mux.Handle("/tg/", http.StripPrefix("/tg", srv))
//
// The API is then at /tg/v1/..., and the approvals page ([ApprovalsPage])
// at /tg/: it names its assets and the API by URLs relative to
// its own. What the server reports about a request is about the path it
// saw: a problem's instance is the stripped path ("/v1/runs/run_1", not
// "/tg/v1/runs/run_1").
package server
