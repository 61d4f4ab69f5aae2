// Package claudegate governs Claude Code with tollgate: it answers Claude
// Code's hook events (its documented hook JSON on stdin, answers on
// stdout) with the decisions of package gate, so that tollgate's
// policies and hooks decide Claude Code's tool calls and every call is
// recorded with who decided. `tollgate claude-code hook` is its command.
//
// Codex CLI's hooks share Claude Code's JSON; Options.Source
// gate.SourceCodex and [CodexAnswer] give its dialect (no ask, and a
// hook's failure lets a call run there, so every refusal is an explicit
// deny with exit code 2). `tollgate codex hook` is its command.
//
// # Events
//
//   - PreToolUse: the call is decided ([gate.Gate.Decide]). A deny is
//     permissionDecision "deny" with the reason, which the model reads; an
//     allow by a rule or an autonomy level is "allow" (which never
//     overrides Claude Code's own deny or ask rules); when no rule matched
//     (runtime:default) the hook has no opinion, so Claude Code's own
//     permissions decide as if it were not there; an ask is "ask"
//     (Claude Code's own prompt) or, with an [Asker], a request a person
//     answers elsewhere while the hook waits: an approval (edited
//     arguments become updatedInput), a decline with its reason, and no
//     answer in time a deny. A call that may run is saved in the state
//     directory for PostToolUse.
//   - PermissionRequest: what the policies deny is refused; anything else
//     is left to Claude Code's prompt.
//   - PostToolUse and PostToolUseFailure: the saved call is completed
//     with the result Claude Code reports ([gate.Reported]) and recorded.
//     A call asked at Claude Code's prompt that reaches PostToolUse was
//     approved there: it is recorded as approved by Options.Prompter.
//   - UserPromptSubmit and Stop keep the session's last prompt and the
//     model's last stated intent ([Bridge.Notes]); SessionEnd records the
//     calls that never came to PostToolUse (an ask the prompt did not
//     approve: declined by runtime:claude-code; an allowed call Claude Code
//     did not run: not run) and removes the session's state. SessionStart
//     and other events get no opinion.
//
// # One policy for both worlds
//
// Claude Code's tools are judged under tollgate's names and arguments
// ([TollgateName], [TollgateArgs]): Bash is bash with its command (so the
// shell-aware command rules see every simple command: /bin/rm, env rm);
// Write, Edit and MultiEdit are write and edit with path from file_path;
// Read, Glob, Grep, WebFetch and TodoWrite are read (path from file_path),
// glob, grep, webfetch and todowrite; any other tool (mcp__server__tool,
// Task, ...) keeps its name and has no hints, the strictest reading. The
// hints are those of tollgate's builtins: Read, Glob and Grep read-only,
// Write and Edit destructive, Bash destructive and open-world. Each policy
// takes the session's cwd as its working directory, so that a rule on a
// relative path covers Claude Code's absolute file_path.
//
// # Seed 000's hooks
//
// A listener's PRE_TOOL_USE fires when PreToolUse lets a call run, before
// it runs; POST_TOOL_USE and ON_ERROR fire with the result at PostToolUse
// or PostToolUseFailure. A call that is denied fires none.
//
// # Failing closed
//
// Whatever keeps the hook from a decision (input that does not parse or
// is too large, a state file that cannot be written, a panic, an Asker
// that fails) is answered with [Failed]: a deny with the reason and exit
// code 2, which Claude Code reads as a block even without the JSON. Stop,
// SessionStart, SessionEnd and the PostToolUse events get exit code 1 (a
// non-blocking error) instead: blocking them would not stop a call.
package claudegate
