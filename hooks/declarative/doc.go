// Package declarative is the declarative tool call hook registry of seed 000
// ("Tool call hooks"): hooks read from YAML or built in code, each an event, an
// optional matcher on the tool name and an action (log or command), attached
// to an agent as its one [hooks.ToolCallListener].
//
// The hooks are a library: nothing loads a hooks file or attaches hooks to an
// agent unless the caller does ([Registry.ApplyTo]). The package does not
// import package agent; anything with SetToolCallListener and ID is a
// [Target].
//
// # YAML format
//
// [FromYAML] and [Load] read a top-level hooks list:
//
//	hooks:
//	  - event: preToolUse          # or PRE_TOOL_USE
//	    matcher: "file_*"          # optional; glob on the tool name
//	    action:
//	      type: log                # log or command, any letter case
//	      message: "${tool} starting"
//	  - event: onError
//	    action:
//	      type: command
//	      command: "echo tool failed >> hooks.log"   # run with sh -c
//	      timeout: 5s                                # optional, default 30s
//	  - event: postToolUse
//	    action:
//	      type: command
//	      argv: [notify-send, "tool ${tool} ran"]    # no shell
//
// Event names are camelCase (preToolUse, postToolUse, onStart, onStop,
// onError) or UPPER_SNAKE (PRE_TOOL_USE, ...). A log action needs message; a
// command action needs exactly one of command (a string for sh -c) and argv
// (a list: program, then arguments; numbers are taken as written). timeout is
// a Go duration with a unit ("500ms", "5s", "2m") from 1ms to 10m;
// only command actions take it.
//
// Loading never fails. An entry with a missing, unknown or ill-typed event,
// matcher, action, type or field, or a bad timeout, is skipped with a WARN log
// naming FILE:LINE:COL; unknown top-level keys are ignored with a WARN; a
// document that does not parse (or is not a mapping with a hooks list) logs an
// ERROR and gives an empty registry. Loading also warns, keeping the hook, when
// a matcher is given for an event that ignores it, when a shell command uses
// ${tool}, ${args}, ${callId} or ${error}, and when an unquoted message,
// command or argv element is followed by a comment on its line (YAML drops
// " #..." from a plain scalar: `command: echo a #b` runs `echo a`; write
// `command: "echo a #b"`). Every problem is kept as a [Diagnostic]. YAML
// anchors and tags are accepted; aliases and merge keys are not (the entry is
// skipped). Only the first YAML document of a stream is read.
//
// # Events and their context
//
// Every hook runs with a context: a map from key to value that templates
// (${key}), the TOLLGATE_* environment variables, the JSON object on stdin and a
// custom [Executor] all see. The agent fires the tool events for calls that
// really run; a call that the BeforeTool hooks short-circuit, that fails
// validation or that the authorization check denies fires no hooks.
//
//	key         type             events                          meaning
//	event       string           all                             PRE_TOOL_USE, POST_TOOL_USE, ON_START, ON_STOP or ON_ERROR
//	tool        string           PRE, POST, ON_ERROR (+FireToolEvent)  tool name, as the model wrote it
//	args        json.RawMessage  PRE, POST, ON_ERROR             the arguments the tool runs with, a JSON object ({} if none)
//	callId      string           PRE, POST, ON_ERROR             tool call ID, as the model (or provider) wrote it
//	turn        int              PRE, POST, ON_ERROR             model turn of the call, from 1
//	agent       string           PRE, POST, ON_ERROR, ON_START   agent ID
//	runId       string           PRE, POST, ON_ERROR             run ID
//	latencyMs   int64            POST, ON_ERROR                  how long the tool ran, in whole milliseconds
//	success     bool             POST, ON_ERROR                  false for an error result, an error or a panic
//	error       string           POST, ON_ERROR                  the error text ("" on success)
//	outputSize  int              POST, ON_ERROR                  length of the tool's output, in bytes
//
// # Calls that wait for an answer
//
// A call that needs a person fires its hooks only when it runs with the
// answer. When the authorization asks for an approval, the tool is not
// started until the call is approved: PRE_TOOL_USE and POST_TOOL_USE fire
// once, after the approval (as seed 000's "a tool call that the agent's
// authorization check denies never reaches the tool"). A tool that asks
// itself (the question tool, a tool that needs a code) is started first
// and returns a pending request instead of a result: PRE_TOOL_USE fires for
// that start, and no POST_TOOL_USE or ON_ERROR, since the call has not run
// to a result (it has no latency, success or output to report, and the
// AfterTool hooks do not see it either). When the answer comes (at once
// with a terminal or --approve, or in a later process with tollgate resume)
// the tool starts again with it: PRE_TOOL_USE does not fire again (the call
// started once), and POST_TOOL_USE (and ON_ERROR) fire with what that run
// gave. So such a call fires PRE_TOOL_USE once and POST_TOOL_USE once, as
// any other. A call whose request is denied, or expires, does not start
// again and fires nothing more. (A Go [hooks.ToolCallListener] sees both
// starts, the second with Retried set, and the first start's PostToolUse,
// with Pending set.)
//
// ON_STOP, and any event fired with [Registry.FireEvent], has exactly the keys
// the caller passes (tollgate run passes agent, runId and status, the run's
// final status such as "done" or "error"), plus event unless the caller set it.
// [Registry.FireToolEvent] adds tool.
//
// In templates, and in environment variables, a value is formatted by
// [FormatValue]: strings and args as their text, numbers in decimal, booleans as
// true or false.
//
// # Matchers
//
// A [Matcher] is a glob on the tool name where * matches any run of characters
// and every other character matches itself; case is ignored. There is no
// implicit prefix. A hook with no matcher runs for every tool. Matchers apply to
// PRE_TOOL_USE and POST_TOOL_USE only: ON_START, ON_STOP and ON_ERROR hooks
// ignore them, so an ON_ERROR hook runs for every failing tool. Matchers are
// compiled when the registry is built.
//
// # Actions
//
// The standard executor (used unless [Options].Executor is set) writes a log
// action's message at INFO, prefixed "[HOOK] " and cut at 16 KiB with a
// marker "…[N of M bytes cut]", to the registry's logger, with logger=tollgate/hooks/declarative.Executor.
// It runs a command action with sh -c in the process working directory, or in
// [Options].Dir when set (or its argv without a shell) in a session of its own, waits up to its timeout (30 s
// by default), and then kills the command's whole process group; it also kills
// it when the context of the tool call (hence the run) is canceled. A process
// that left the group (setsid) is killed too only when the command was
// sandboxed with a PID namespace ([Options].Sandbox); the warning says which.
// The command's environment is the process's scrubbed to an allowlist (PATH,
// HOME, LANG, LC_*, TERM, TMPDIR, ...) plus [Options].PassEnv and the context's
// TOLLGATE_* variables: provider keys do not reach it unless named. A non-zero exit, a timeout or a
// failure to start is logged at WARN with up to 50 lines of the command's
// combined output; success is logged at DEBUG. Output is captured up to 64 KiB and the rest is
// drained, and stdin is written from a separate goroutine, so neither a command
// that prints megabytes nor one that never reads stdin can block it beyond its
// timeout. A failing action never stops the tool call or the other hooks.
//
// A hook cannot veto a call, and a command's output is never read: nothing it
// prints (JSON, "allow", noise) changes the call. Use the BeforeTool hooks of
// package hooks, tool approval or the approval policies to stop a call.
//
// # Timing
//
// Hooks run synchronously on the call's goroutine (the agent's worker for
// that call; the tool itself runs on a goroutine of its own, see package
// agent), one after the other in registration order: the tool starts only
// after every PRE_TOOL_USE hook has returned, and a slow command delays each
// matching call by up to its timeout. Tool calls of one turn run
// concurrently, so hooks may run on several goroutines at once.
//
// # Values from the model are data
//
// As seed 000 warns, values substituted into a template are not quoted: in a
// shell command, ${tool} and ${callId} come from the model's tool call, ${args}
// from its arguments and ${error} from an error message, and any of them can
// contain shell syntax. [FromYAML] therefore skips, with a diagnostic marked
// [Diagnostic].Unsafe, a command action whose shell text uses one of them, or
// whose argv names its program with one (argv: ["${callId}"]), or passes one
// to an interpreter (see below); [Options].AllowUnsafeCommands keeps such
// entries, with a warning, as seed 000 literally would. [Of] takes hooks made
// in code as they are. The same values
// reach every command safely in three ways, none of which a shell parses unless
// the command itself asks for it:
//
//   - Environment variables: TOLLGATE_EVENT, TOLLGATE_TOOL,
//     TOLLGATE_ARGS, TOLLGATE_CALL_ID, TOLLGATE_TURN, TOLLGATE_AGENT,
//     TOLLGATE_RUN_ID, TOLLGATE_LATENCY_MS, TOLLGATE_SUCCESS, TOLLGATE_ERROR,
//     TOLLGATE_OUTPUT_SIZE, and for keys passed to FireEvent TOLLGATE_ and the
//     key in upper snake case (status: TOLLGATE_STATUS); each value is cut at
//     32 KiB, and NUL bytes become U+FFFD. Use them quoted:
//     command: 'echo "$TOLLGATE_TOOL" >> calls.log'.
//   - Stdin: the context as one JSON object, args embedded as JSON, each
//     value up to 1 MiB of JSON (a larger one becomes its
//     text, cut with a marker): command: "jq -r .args.path >> paths.log".
//   - The argv form, run without a shell, each element expanded on its own:
//     argv: [logger, -t, tollgate, "tool ${tool} failed: ${error}"]. An
//     element is data only to a program that treats it as data: after an
//     interpreter (argv: [sh, -c, "... ${args}"], python -c, ...; a version
//     in the name counts, python3.11, perl5.36.0; so does env -S, which
//     splits a string into the words it runs) it is code again, and the
//     loader treats that as unsafe too.
//
// # Attaching
//
// [Registry.ApplyTo] sets the agent's tool call listener, replacing any other
// (an agent has one listener; a later SetToolCallListener removes the hooks),
// and fires ON_START once per call. A registry with no hooks does nothing. One
// registry can serve several agents. Applying a registry twice to one agent, or
// applying two registries loaded from the same file, leaves one listener, so
// each hook fires once per event; to apply several files at once, [Join] them.
// The registry never fires ON_STOP: the caller does, with [Registry.FireEvent],
// and each call runs each ON_STOP hook once.
package declarative
