//go:build linux

package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// traceOptions make every process and thread the command starts a tracee,
// report each exec before the new program runs, and kill every tracee when
// the supervisor dies.
const traceOptions = unix.PTRACE_O_TRACEEXEC | unix.PTRACE_O_TRACEFORK | unix.PTRACE_O_TRACEVFORK |
	unix.PTRACE_O_TRACECLONE | unix.PTRACE_O_EXITKILL

// superviseExec starts child under ptrace(2) and runs it to its end,
// refusing the execs that deny refuses: at each PTRACE_EVENT_EXEC stop the
// new image is loaded and none of its instructions has run, its file
// cannot be written (the kernel denies writes to a running executable) and
// its memory is its own, so the checks of [deniedFiles.refuses] read what
// will run, and a refused process is killed (SIGKILL) before it runs.
// Each refusal is written to stderr. It returns the child's wait status
// once the child has ended; the other tracees go on until the caller ends
// them (they die with the supervisor at the latest: PTRACE_O_EXITKILL).
//
// It locks the calling goroutine to its thread: ptrace requests come from
// the tracer thread only.
func superviseExec(child *exec.Cmd, deny *deniedFiles, stderr *os.File, started chan<- struct{}) (unix.WaitStatus, error) {
	runtime.LockOSThread()
	child.SysProcAttr.Ptrace = true
	if err := child.Start(); err != nil {
		return 0, fmt.Errorf("starting it under the exec supervisor (ptrace(2), which the policy's denied programs need): %w", err)
	}
	close(started)
	main := child.Process.Pid
	// The first stop of the child is the SIGTRAP after it executed the
	// helper's second stage: the options are set there.
	var ws unix.WaitStatus
	if _, err := unix.Wait4(main, &ws, unix.WALL, nil); err != nil {
		return 0, fmt.Errorf("waiting for the traced command: %w", err)
	}
	if !ws.Stopped() {
		return ws, nil
	}
	if err := unix.PtraceSetOptions(main, traceOptions); err != nil {
		_ = unix.Kill(main, unix.SIGKILL)
		return 0, fmt.Errorf("supervising execs: %w", err)
	}
	if err := unix.PtraceCont(main, 0); err != nil {
		return 0, fmt.Errorf("supervising execs: %w", err)
	}
	seen := map[int]bool{main: true}
	// The first exec of the child is the command's own program, chosen by
	// the caller (the bash tool's shell): it is not judged.
	own := true
	for {
		pid, err := unix.Wait4(-1, &ws, unix.WALL, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("supervising execs: %w", err)
		}
		if ws.Exited() || ws.Signaled() {
			delete(seen, pid)
			if pid == main {
				return ws, nil
			}
			continue
		}
		if !ws.Stopped() {
			continue
		}
		if own && pid == main && ws.StopSignal() == unix.SIGTRAP && ws.TrapCause() == unix.PTRACE_EVENT_EXEC {
			own = false
			_ = unix.PtraceCont(pid, 0)
			continue
		}
		_ = unix.PtraceCont(pid, stopSignal(pid, ws, seen, deny, stderr))
	}
}

// stopSignal handles one ptrace stop of pid and returns the signal to
// resume it with (0: none).
func stopSignal(pid int, ws unix.WaitStatus, seen map[int]bool, deny *deniedFiles, stderr *os.File) int {
	sig := ws.StopSignal()
	if !seen[pid] {
		// A new tracee's first stop (SIGSTOP), from a fork, vfork or clone.
		seen[pid] = true
		if sig == unix.SIGSTOP {
			return 0
		}
	}
	if sig == unix.SIGTRAP && ws.TrapCause() != 0 {
		if ws.TrapCause() == unix.PTRACE_EVENT_EXEC {
			// A thread other than the leader that executed takes the
			// leader's ID; its own is gone, without an exit report.
			if former, err := unix.PtraceGetEventMsg(pid); err == nil && int(former) != pid {
				delete(seen, int(former))
			}
			if why := deny.refuses(imageOf(pid)); why != "" {
				_ = unix.Kill(pid, unix.SIGKILL)
				fmt.Fprintf(stderr, "tollgate sandbox: refused to execute %q: the policy denies the program (%s)\n", exeName(pid), strconv.QuoteToGraphic(why))
			}
		}
		return 0 // fork, vfork, clone and exec events carry no signal
	}
	if isStop(sig) && !hasSiginfo(pid) {
		return 0 // a group stop: job control is not kept under supervision
	}
	return int(sig)
}

func isStop(sig syscall.Signal) bool {
	return sig == unix.SIGSTOP || sig == unix.SIGTSTP || sig == unix.SIGTTIN || sig == unix.SIGTTOU
}

// hasSiginfo reports whether a stopped tracee has a pending signal's
// information (a signal-delivery stop) rather than none (a group stop).
func hasSiginfo(pid int) bool {
	var info [128]byte
	_, _, errno := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_GETSIGINFO, uintptr(pid), 0, uintptr(unsafe.Pointer(&info[0])), 0, 0)
	return errno == 0
}

// imageOf describes what pid runs, from /proc.
func imageOf(pid int) execImage {
	dir := "/proc/" + strconv.Itoa(pid)
	img := execImage{exe: dir + "/exe"}
	img.exePath, _ = os.Readlink(img.exe)
	img.cwd, _ = os.Readlink(dir + "/cwd")
	if b, err := os.ReadFile(dir + "/cmdline"); err == nil {
		for _, a := range bytes.Split(bytes.TrimSuffix(b, []byte{0}), []byte{0}) {
			img.args = append(img.args, string(a))
		}
	}
	return img
}

func exeName(pid int) string {
	p, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		return "process " + strconv.Itoa(pid)
	}
	return p
}
