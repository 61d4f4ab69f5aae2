// Package sandbox confines the processes tollgate starts on a model's behalf
// (the bash tool, command hooks, stdio MCP servers) on Linux, with Landlock
// (https://docs.kernel.org/userspace-api/landlock.html) and, where the kernel
// allows them, user, mount and PID namespaces.
//
// # How
//
// The restriction is applied in a helper process, never in the caller: a
// Landlock domain holds for the process that enters it and all its future
// children, and tollgate itself must stay free to write its store and answer
// approvals. [Sandbox.Wrap] rewrites a prepared [os/exec.Cmd] so that it
// starts the helper binary (by default the running executable) with a hidden
// first argument; the helper, in [Main], restricts itself and then starts the
// real program as its child, waits for it, and exits with its status. Every
// binary used as the helper must therefore call [Main] first thing in main:
//
//	func main() {
//		sandbox.Main() // returns at once unless started as the helper
//		...
//	}
//
// [New] checks that the helper answers (so a host that forgot [Main] gets an
// error, not a second copy of itself), and that it can enter the namespaces
// and mount in them; [Status].NamespacesError says what the kernel refused
// when it cannot.
//
// The helper enters the namespaces itself: started plainly, it runs itself
// again as the init of new user, mount and PID namespaces, with the caller's
// user and group mapped to themselves. A caller that is not dumpable (the
// tollgate command makes itself so, to hide its environment) could not do it
// for a user other than root: the /proc/PID/uid_map of its forked child
// belongs to root until that child's execve. A user other than root keeps
// CAP_SYS_ADMIN in the new user namespace only as an ambient capability of
// the init, for its mounts; the command starts with no capability at all.
//
// # What a sandboxed process may do (mode workspace)
//
//   - read and execute below the system directories (/usr,
//     /bin, /lib*, /etc, /opt, /dev, /proc, /sys), the workspace, the program
//     itself and the paths of [Policy].Read; nothing else (not the home
//     directory, not /tmp, not /run);
//   - write only below the workspace, a private temporary directory (created
//     for the process, given as TMPDIR, removed when it ends), the paths of
//     [Policy].Write, and /dev/null;
//   - never write the paths of [Policy].Protect, even when they lie inside the
//     workspace (the state directory, the tollgate binary, configuration
//     files): with namespaces they are bind-mounted read-only in a mount
//     namespace of the helper's own; without, a protected path inside a
//     writable one stays writable and [Sandbox.Wrap] logs a warning once.
//     The directories between a writable tree and a protected path are bound
//     onto themselves, so that they cannot be renamed or removed (EBUSY): a
//     command cannot move a protected file's directory aside and write
//     another file in its place;
//   - never write in the directories of [Policy].Seal, existing or not (one
//     that is missing inside a writable tree is created empty first, then
//     mounted read-only like a protected path; [RemoveSealed] removes it
//     again, once no command that seals it runs);
//   - connect or bind TCP only to the ports of [Policy].ConnectTCP (Landlock
//     ABI 4+);
//   - signal, ptrace or read /proc/PID/environ of no process outside its own
//     sandbox, and connect to no abstract UNIX socket outside it (ABI 6+);
//   - make no socket of a family other than IPv4, IPv6 and route netlink,
//     Unix domain sockets above all (EACCES; socketpair still works), no IPv4
//     or IPv6 socket but a TCP or UDP stream or datagram one (MPTCP, SCTP,
//     UDP-Lite and raw sockets are refused with EACCES: Landlock's TCP
//     rules govern TCP alone, and an MPTCP socket connects where they
//     refuse TCP), and no io_uring (ENOSYS), by a seccomp filter that also refuses every system
//     call made through another ABI than the helper's own (32-bit calls on
//     amd64 or arm64): Landlock (up to ABI 7) does not govern connecting to a
//     Unix socket by its path, so without the filter a command would reach
//     every socket its OS user may, outside the workspace too (a PostgreSQL
//     store with peer authentication, a Docker daemon, an SSH agent). The
//     filter is in every sandboxed mode, with or without Landlock, on amd64
//     and arm64;
//   - with namespaces, it runs in a PID namespace whose init is the helper:
//     when the helper ends (the program exited, or the caller killed the
//     helper's process group), every process the program started dies with
//     it, including daemons that called setsid. The helper also dies with its
//     parent (PR_SET_PDEATHSIG);
//   - execute none of the programs of [Policy].DenyExec (the programs a
//     policy denies). Their files (found on PATH and in the system's
//     program directories) are left out of the Landlock rules: neither
//     executed nor read (a directory holding one is granted entry by
//     entry, its listing kept). And the helper supervises every exec of
//     the command and its descendants with ptrace(2), killing at the exec
//     stop (the new program loaded, none of its instructions run, its file
//     not writable) a process that runs a denied program's file by any
//     path or link, a copy of it (same size and SHA-256, a memfd too), a
//     file with a denied name, a dynamic loader run as a program (ld.so
//     loads a program without executing it), a program called with a
//     denied argv[0], a denied applet of busybox or toybox, or an
//     interpreter whose first or second argument is a denied script. The
//     command's own program (the bash tool's shell) is exempt. A refusal
//     by the supervisor is written to the command's standard error and the
//     process ends as killed (137); one by Landlock is EACCES. Without
//     ptrace (Yama scope 3) such a command does not start. Under
//     supervision no process of the command can be traced by another
//     (strace, gdb), processes ignore job-control stops, ldd (which runs
//     the loader) fails, no process can be cloned untraced (clone(2) with
//     CLONE_UNTRACED is EPERM, clone3(2) ENOSYS, by the seccomp filter),
//     and, namespaces or not, what the command leaves
//     running dies with the helper (PTRACE_O_EXITKILL).
//
// # Limits
//
// A command may have at most [Policy].MaxProcesses processes and threads at
// once (4096 by default) and [Policy].MaxMemory bytes of memory (by
// default half the machine's memory, at least 1 GiB), so that a fork bomb stops growing and ends with the
// call. Where the helper may make cgroups of its own below its current ones
// (root, or a user to whom a cgroup v2 subtree is delegated), it does: one
// per command, with pids.max and memory.max (cgroup v2) or in the pids and
// memory hierarchies (cgroup v1), removed when the command ends. Otherwise
// the bounds are rlimits: RLIMIT_NPROC set in the command's user namespace
// (which counts its processes alone; the kernel exempts root from it, and
// without namespaces it is not set, since it would count every process of
// the user), and RLIMIT_DATA on each process (only without a memory cgroup:
// it refuses programs that reserve more than they use, as
// AddressSanitizer's do; give such a command a negative MaxMemory). Without
// namespaces or cgroups, the number of processes is not bounded.
//
// Mode read-only is the same without the workspace write access. Mode off
// runs the command as it is.
//
// # What it does not stop
//
//   - Reads inside the allowed trees: a secret in /etc or in the workspace is
//     readable; files the OS user may read outside them are not.
//   - UDP and other IP protocols than TCP (Landlock ABI 7 does not restrict
//     them).
//   - CPU and disk use inside the writable trees: timeouts and output caps
//     bound those, not this package. Processes and memory are bounded (see
//     below), CPU time is not.
//   - Code of a denied program run without an exec: a denied script read
//     by an interpreter from its standard input or a pipe, an interpreter
//     denied under one name but present as another file of other content
//     (python3.11 and a vendored python), a multi-call binary (busybox)
//     that holds the program as an applet, or a program's own loader that
//     maps a copy into memory (a copy made before, in a writable tree, or
//     reached through a hard link that lies in another granted tree: only
//     the program's own file is unreadable). The policy's analysis of the
//     script judges those spellings.
//   - Anything on a kernel without Landlock: [New] says so in
//     [Status] and [Sandbox.Wrap] still applies what remains (namespaces,
//     the private TMPDIR, the PID namespace kill).
//   - Other operating systems: [New] fails there.
//
// The environment is not this package's concern: callers scrub it before
// (internal/proc.Env in tollgate's tools).
package sandbox
