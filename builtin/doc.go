// Package builtin provides tollgate's builtin tools: bash, read, write, edit,
// grep, glob, webfetch, question, apply_patch and todowrite, each a [tool.Tool] with the input schema a model expects and
// the [tool.Hints] of seed 002 ("write, edit destructive; read, grep read-only").
//
//	tool   hints                          arguments
//	bash   destructive, open-world        command, timeout? (ms), workdir?
//	read   read-only, idempotent          path, offset? (1-based line), limit? (lines)
//	write  destructive                    path, content
//	edit   destructive                    path, oldString, newString, replaceAll?
//	grep   read-only, idempotent          pattern (Go regexp), path?, include? (glob)
//	glob   read-only, idempotent          pattern (glob with **), path?
//	webfetch read-only, open-world        url, format? (markdown|text|html), timeout? (s)
//	question read-only                    questions[] of {question, header?, options[]? of {label, description?}, multiple?}
//	apply_patch destructive               patchText (*** Begin Patch ... *** End Patch)
//	todowrite read-only, idempotent       todos[] of {id, content, status: pending|in_progress|completed}
//
// # Workspace confinement
//
// Every tool works inside one workspace root, given to [New]. A relative path
// resolves against the root; an absolute path is accepted only when it names
// something inside the root. A path that leaves the root is refused with an
// error result: "..", an absolute path elsewhere, a symbolic link pointing out
// (also through a symlinked parent directory, and also for a file that does not
// exist yet under such a directory). File access goes through [os.Root], so
// the check and the access are one operation and cannot be raced by a swapped
// symlink. One consequence of [os.Root]: a symbolic link with an absolute
// target is refused even when the target lies inside the root; use relative
// link targets inside a workspace.
//
// The file tools read and write regular files only: a named pipe (FIFO), a
// device or a socket is refused with an error naming what it is, without
// being opened in a way that could block (a FIFO with no writer would block
// an open for reading forever), and grep skips such entries of a directory.
// write and edit refuse a file with more than one hard link, so that no
// second name of a file (perhaps outside the workspace, or under a directory
// a policy denies) is changed through this one; read does follow a hard link,
// as no path can tell one name of a file from another (approval.CheckFile
// refuses one where a policy judges read by path).
//
// # What is checked is what is used
//
// A call's path is judged when the call is authorized, but a symbolic link
// on it may be changed before the tool runs (by a command of the same turn).
// So each file tool judges the file it actually holds: read and grep the
// file they opened, glob the directory it walks, write, edit and apply_patch
// the directory they opened to replace the file in (and, when the file is a
// symbolic link, the file it leads to, whose content they read), then do
// every further step through those descriptors. The real path of an open
// file comes from the kernel (/proc/self/fd on Linux), and goes to
// [Options].CheckFile (as a [FileUse]) and to the Protect check, and into
// the result's metadata as "realPath" beside the requested "path" (records
// keep both; apply_patch's "files" carry "realPath" and, for a move,
// "realTo"). Elsewhere than Linux the path is resolved instead, which leaves
// the race open.
//
// bash is confined only in where it starts (its workdir must lie inside the
// root): the shell itself can reach anything the process can, unless
// [Options].Sandbox confines it (the tollgate command does so by default with
// package sandbox: writes only in the workspace and a private TMPDIR, no TCP,
// no signals outside). It is hinted destructive and open-world so that the
// gates around tool calls (hooks, policies, approvals) treat it accordingly.
//
// bash's environment is the process's scrubbed to an allowlist (PATH, HOME,
// LANG, LC_*, TERM, TMPDIR, ...) plus [Options].PassEnv: provider keys and
// TOLLGATE_* variables do not reach the shell unless named.
//
// # Text, line endings and file names
//
// read shows each line without its line ending ("\n" or "\r\n") and without
// a UTF-8 byte order mark, and edit matches oldString against exactly that
// text: every line break is "\n" on both sides. What edit writes keeps the
// file's conventions: each line break of newString takes the ending of the
// line break it replaces (CRLF, LF, or both in a mixed file), extra lines the
// ending of the last one replaced, and a BOM stays. write keeps an existing
// file's BOM, and its CRLF endings when all of its line breaks are CRLF and
// the new content has no carriage return of its own.
//
// A file name that is not valid UTF-8, or holds a control character, is
// listed by grep and glob with every such byte, and every backslash, written
// \xNN (caf\xe9.txt); every path argument reads \xNN as the byte NN, so the
// listed spelling reaches the file, and no raw control character is shown.
// Write a backslash followed by x and two hex digits as \x5c.
//
// # bash and processes
//
// bash runs "bash -c COMMAND" ("sh -c" when bash is not in PATH) with stdin
// from the null device, in its own process group (internal/proc). On timeout
// (default 60 s) or cancellation the whole group is killed with SIGKILL, so
// background grandchildren die too; when the shell exits normally, whatever it
// left running in its group is killed as well, so a call leaves no process of
// its group behind. A process that leaves the group on purpose (setsid) is
// out of reach, as it is for any supervisor that works by process group. stdout and stderr are captured together, capped at 64 KiB
// with an explicit "[output truncated: N bytes dropped]" marker; the capture
// never blocks the child and never waits forever on a pipe held open by an
// escaped process. A non-zero exit status is an error result carrying the
// output and "[exit code N]".
//
// # question
//
// question asks the user: its first call returns a pending request
// ([tool.Pending]) of kind [tool.KindQuestion] whose Prompt shows the
// questions and options and whose Data is the tool's input ({"questions":
// [...]}, each a [Question]), so a run halts, waits or prompts on it like on
// any other request. When the call is
// retried with the answer ([tool.Invocation].Answer), it returns the answers as
// "Q: ... / A: ..." lines (Metadata "answers"); [ParseQuestionAnswer] says
// which answer Data it reads. A declined request never reaches the tool: the
// model sees the decline and its reason. Hosts use [ParseQuestions] to show
// the questions.
//
// # todowrite
//
// todowrite keeps the run's plan: each call gives the whole list, which is
// kept in the run's [tool.RunState] under "todowrite", as a JSON array of
// {id, content, status} (so it survives a halt and a resume), returned to
// the model with what changed since the last call, and put in the result's
// Metadata "todos", so tool result events and records show it. It touches no workspace file.
//
// # apply_patch: one change or none
//
// apply_patch takes a patch in the "*** Begin Patch" format (Add File, Update
// File with an optional Move to, Delete File; "@@" hunks with context lines;
// "*** End of File"), at most 4 MiB and 200 file sections; like edit, it
// changes files of at most 16 MiB (it holds each file and its new text in
// memory). Every path is
// confined like the other file tools, and every hunk of every file is
// checked, and every new content computed, before anything is written; a
// hunk's lines are found exactly, then ignoring trailing whitespace, then
// ignoring surrounding whitespace. The new contents are then written to
// temporary files beside their targets and put in place by renames, each
// old file kept under a hard link until the end: when any step fails, the
// steps done are undone, so a failed patch leaves every file as it was
// (directories created for new files stay). Updated files keep their line
// endings and BOM, as with edit.
//
// # webfetch and the private-address guard
//
// webfetch fetches http and https URLs only. Before it connects, it resolves
// the host itself and refuses every address that is loopback, private,
// link-local (the cloud metadata address 169.254.169.254 among them),
// multicast, unspecified, broadcast, shared (100.64.0.0/10), reserved, or an
// IPv6 form that embeds IPv4 (NAT64, 6to4, Teredo; IPv4-mapped addresses are
// judged as IPv4); the dialer checks the address again as it connects, so a
// name that resolves to a public address once and to a private one later
// (DNS rebinding) gains nothing. Every redirect is a new request under the
// same checks, plus the scheme and the host lists; at most
// [WebFetchOptions].MaxRedirects are followed. No proxy from the environment
// is used (it would connect on webfetch's behalf). [WebFetchOptions]
// holds the allow and deny lists of hosts and the address ranges let through
// the guard (for an intranet service, or a test server); nothing a call
// sends can relax it.
//
// Only text responses are returned (text/*, JSON, XML, YAML and the like;
// others are an error naming the type), decoded to UTF-8 from their charset.
// HTML becomes Markdown (github.com/JohannesKaufmann/html-to-markdown) or
// plain text; the body read and the text returned are both capped, with a
// marker saying what was dropped. An HTTP status of 400 or more is an error.
//
// # Errors
//
// Every failure (a refused path, a missing file, an invalid pattern, a
// non-zero exit) is an error result ([tool.Error]) that the model sees; no
// builtin panics or returns a Go error that would abort a run.
//
// This package is level 1 of the architecture: it imports tool and internal
// helpers only.
package builtin
