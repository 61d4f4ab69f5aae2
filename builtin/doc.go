// Package builtin provides tollgate's builtin tools: bash, read, write, edit,
// grep and glob, each a [tool.Tool] with the input schema a model expects and
// the [tool.Hints] of seed 002 ("write, edit destructive; read, grep read-only").
//
//	tool   hints                          arguments
//	bash   destructive, open-world        command, timeout? (ms), workdir?
//	read   read-only, idempotent          path, offset? (1-based line), limit? (lines)
//	write  destructive                    path, content
//	edit   destructive                    path, oldString, newString, replaceAll?
//	grep   read-only, idempotent          pattern (Go regexp), path?, include? (glob)
//	glob   read-only, idempotent          pattern (glob with **), path?
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
// bash is confined only in where it starts (its workdir must lie inside the
// root): the shell itself can reach anything the process can. It is hinted
// destructive and open-world so that the gates around tool calls (hooks,
// policies, approvals) treat it accordingly.
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
// # Errors
//
// Every failure (a refused path, a missing file, an invalid pattern, a
// non-zero exit) is an error result ([tool.Error]) that the model sees; no
// builtin panics or returns a Go error that would abort a run.
//
// This package is level 1 of the architecture: it imports tool and internal
// helpers only.
package builtin
