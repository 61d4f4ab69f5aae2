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
