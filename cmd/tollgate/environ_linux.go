package main

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// hideEnviron makes this process not dumpable (prctl PR_SET_DUMPABLE 0,
// proc(5)): /proc/PID/environ, which holds the provider keys tollgate was
// started with, and /proc/PID/mem and the like become readable only by a
// process with CAP_SYS_PTRACE over it, so that a tool or hook running as the
// same user, sandboxed or not, cannot read them through /proc/$PPID. A child
// that runs as root with the sandbox off still can (root holds that
// capability); the sandbox's user namespace takes it away. It also means no
// core dumps and no debugger attach without privilege. The processes
// tollgate starts are dumpable again after their execve.
func hideEnviron() {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "tollgate: warning: cannot hide the environment from child processes (prctl PR_SET_DUMPABLE): %v\n", err)
	}
}
