// Package claudecode runs Claude Code hooks unchanged under tollgate: the
// "hooks" object of Claude Code settings files (event → matcher groups →
// handlers), with scripts that read one JSON object on stdin and answer with
// an exit code and optional JSON on stdout, as Claude Code documents them.
//
// Load settings with [LoadFiles] or [Parse] (a bad event, group or handler is
// skipped on its own, with a FILE:LINE:COL [Diagnostic]), build the runtime
// with [New], and add it to an agent's hooks with [Hooks.Register].
//
// # Where the events fire
//
//   - PreToolUse: a BeforeTool hook. Exit 2 or permissionDecision "deny"
//     denies the call with the reason the model sees; "ask" and "defer"
//     make it a pending approval; "allow" is an allow vote, which never beats
//     a policy's deny; updatedInput rewrites the call, which is validated and
//     authorized again. additionalContext is appended to the call's result
//     (after a blank line), so the model reads it with what the call gave,
//     whether it ran or was denied (hooks.ToolOverride.Context).
//   - PermissionRequest: when authorization asks, before a person is asked
//     (hooks.Permission); decision.behavior "allow" or "deny" answers the
//     request, recorded with "hook:claude:PermissionRequest" as the one who
//     answered; decision.updatedInput edits the call.
//   - PostToolUse (the tool succeeded) and PostToolUseFailure (it returned an
//     error): an AfterTool hook. updatedToolOutput replaces the result;
//     decision "block" with its reason, exit 2's stderr and additionalContext
//     are appended to what the model sees.
//   - UserPromptSubmit: at the start of a run, before any model call
//     (hooks.Start). A block ends the run (an error wrapping
//     hooks.ErrBlocked); plain stdout or additionalContext is appended to
//     the prompt.
//   - Stop: when the model gives its final answer (hooks.Stop). A block
//     continues the run with the reason, at most
//     8 times; stop_hook_active is true after the first.
//   - SubagentStop: when a sub-agent that one of this agent's tools started
//     (agent.Agent.AsTool) gives its final answer and its own Stop hooks let
//     it end (hooks.SubagentStop). session_id is the calling run's ID,
//     agent_id the sub-agent's run ID, agent_type the sub-agent's ID (what
//     matchers test). A block continues the sub-agent with the reason,
//     within the same cap of 8 continuations of its run.
//   - SessionStart (source "startup" on a run, "resume" on a resume; context
//     is added to the prompt of a new run) and SessionEnd (every end of a
//     run or resume; reason "other", tollgate_status the run's status).
//   - Notification: when a request goes pending (hooks.Pending), with
//     notification_type "permission_prompt" for approvals.
//
// Events tollgate has no place for (PreCompact, SubagentStart, ...) are
// accepted, reported by a diagnostic and never fired.
//
// # The wire contract
//
// Stdin carries session_id (the run ID), transcript_path (empty: tollgate
// keeps no transcript file), cwd (the project directory), permission_mode,
// hook_event_name, and per event tool_name, tool_input, tool_use_id,
// tool_response, error, prompt, source, stop_hook_active,
// last_assistant_message, agent_id, agent_type, message,
// notification_type; tollgate adds
// tollgate_run_id, tollgate_agent, tollgate_tool (its own tool name),
// tollgate_turn and, for requests, tollgate_request_id. Exit 0 with stdout
// starting with "{" is read as JSON; exit 2 blocks (the JSON's reason, else
// stderr); any other exit is decided by valid JSON alone. At most 1 MiB of
// stdout (or of an http answer's body) is read, and longer JSON fails; the
// first 64 KiB of stderr are kept. The universal
// fields continue (false stops the run with a [*StoppedError]), stopReason
// and systemMessage (logged) are honoured; hookSpecificOutput must name the
// event in hookEventName. Output JSON is checked against a JSON Schema of
// the documented fields (google/jsonschema-go).
//
// Matchers are read as Claude Code reads them: "*", "" or none match every
// tool; a matcher of only ASCII letters, digits, '_', '-', ' ', ',' and '|'
// is a list of exact names ("Edit|Write"); anything else is an unanchored,
// case-sensitive RE2 regular expression ("mcp__memory__.*"; "Edit.*" also
// matches "NotebookEdit"), and a group whose pattern does not compile is
// skipped. A handler's "if"
// is "Tool" or "Tool(glob)". Command handlers run with `sh -c COMMAND`, or
// COMMAND with "args" and no shell, in the project directory, in their own
// process group, without a terminal, with CLAUDE_PROJECT_DIR in the
// environment (and substituted in the exec form's program and args).
// Timeouts are in seconds (default 60). http handlers POST the same JSON and
// read a 2xx answer's body as stdout.
//
// # Names and shapes
//
// tollgate's builtins are presented under Claude Code's names and argument
// shapes: bash→Bash, read→Read, write→Write, edit→Edit (old_string,
// new_string, replace_all), grep→Grep (include→glob), glob→Glob, with
// file_path (and path) made absolute. updatedInput is mapped back. Bash's
// tool_response is {stdout, stderr, interrupted, isImage} (tollgate's bash
// merges stderr into stdout); other tools' is their output text. MCP tools
// are already named mcp__server__tool.
//
// # Deviations, all on the side of governance
//
//   - Fail mode per event (Options.FailModes): "closed", the default for
//     PreToolUse and PermissionRequest, turns a handler that times out,
//     cannot be started (a missing script, exit 126 or 127), crashes (an
//     exit other than 0 and 2 without valid JSON), is killed by a signal, or
//     prints JSON that fails the schema into a denial whose reason and log
//     say "hook failed" (with the signal's name), never "hook denied".
//     Claude Code lets such calls run.
//   - The decisions of the matching handlers are made in parallel and combine
//     deny > defer > ask > allow; updatedInputs apply in configuration
//     order, each handler seeing the input rewritten by the ones before (a
//     handler whose input changed is run again), where in Claude Code the
//     last one wins.
//   - Every matching handler gets the full stdin; identical handlers run
//     once per event; the whole process tree of a handler is killed at its
//     timeout.
//   - Handlers get the same scrubbed environment as bash and YAML command
//     hooks: an allowlist (PATH, HOME, LANG, LC_*, TERM, TMPDIR, ...) plus
//     the variables Options.PassEnv names, and they run in their own session
//     and, with Options.Sandbox (the command sets it), in the sandbox.
//   - Settings files are read only when asked for; tollgate's own options
//     (fail modes, timeouts) never come from settings.json.
//   - A bad entry is skipped alone, with its position, not the whole file.
//   - "prompt" and "agent" handlers and async are not supported (a
//     diagnostic, or ignored).
package claudecode
