//go:build linux

package sandbox

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The socket families a sandboxed command may create with socket(2): IPv4
// and IPv6 (TCP connect and bind are Landlock's to allow, per port); and
// AF_NETLINK with protocol NETLINK_ROUTE only (what getaddrinfo and ip read
// the interfaces with; the other netlink protocols, such as sock_diag that
// lists every socket of the machine, are refused).
// Everything else is refused with EACCES, Unix domain sockets above all:
// Landlock (up to ABI 7) does not govern connecting to one by its path, so
// a confined command could otherwise reach every socket its user may
// (a PostgreSQL store with peer authentication, a Docker daemon, an SSH
// agent, a desktop bus). socketpair(2) stays allowed: its two ends reach
// nothing else.
//
// Within IPv4 and IPv6 only stream and datagram sockets of protocol 0, TCP
// or UDP are made: Landlock's TCP rules govern TCP alone, and MPTCP
// (IPPROTO_MPTCP, 262), SCTP or UDP-Lite would connect and bind where TCP
// is refused (a stream socket of protocol 262 reached a store's
// PostgreSQL on loopback). Raw and packet sockets are refused too.
var socketFamilies = []uint32{unix.AF_INET, unix.AF_INET6}

// inetProtocols are the protocols an IPv4 or IPv6 socket may be made
// with: 0 (the type's default, TCP or UDP), TCP and UDP.
var inetProtocols = []uint32{0, unix.IPPROTO_TCP, unix.IPPROTO_UDP}

// auditArch is the AUDIT_ARCH_* value of this program's architecture, and
// x32 whether system calls numbered from 0x40000000 (the x32 ABI of
// x86-64) must be refused; 0 where the filter is not built.
var auditArch, x32 = func() (uint32, bool) {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64, true
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64, false
	}
	return 0, false
}()

// seccomp_data offsets (linux/seccomp.h): nr, arch, then the arguments,
// 8 bytes each, the low half first on these little-endian machines.
const (
	offNr      = 0
	offArch    = 4
	offArg0Lo  = 16
	offArg0Hi  = 20
	offArg1Lo  = 24
	offArg2Lo  = 32
	x32Syscall = 0x40000000
)

// filterSockets installs, for this thread and every later one of this
// process and of what it executes, a seccomp filter (seccomp(2),
// SECCOMP_SET_MODE_FILTER) that refuses socket(2) for the families not in
// [socketFamilies], IPv4 and IPv6 sockets other than [inetSockets] allows
// (MPTCP, SCTP, raw) and netlink sockets of a protocol other than
// NETLINK_ROUTE (EACCES), refuses io_uring (ENOSYS: its operations
// would open and connect sockets without the socket system call), refuses
// clone(2) with CLONE_UNTRACED (EPERM) and clone3(2) (ENOSYS), so that
// no process of the command escapes the exec supervisor, and
// refuses every system call made through another ABI than this program's
// own (a 32-bit socketcall, int 0x80, the x32 ABI) with ENOSYS, so that
// the filter cannot be walked around. Everything else is allowed. It needs
// no_new_privs, which Landlock's restriction has already set. On an
// architecture other than amd64 and arm64 it does nothing.
func filterSockets() error {
	if auditArch == 0 {
		return nil
	}
	prog := socketFilter()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("seccomp: no_new_privs: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		return fmt.Errorf("seccomp: installing the socket filter: %w", errno)
	}
	return nil
}

// socketFilter is the classic BPF program of [filterSockets].
func socketFilter() []unix.SockFilter {
	const (
		ld     = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq    = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge    = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		jset   = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret    = unix.BPF_RET | unix.BPF_K
		allow  = unix.SECCOMP_RET_ALLOW
		enosys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
		eacces = unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)
		eperm  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	)
	stmt := func(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }
	// The program is built back to front in spirit: the jumps are
	// relative, so the blocks are laid out with known lengths.
	var p []unix.SockFilter
	p = append(p, stmt(ld, offArch),
		unix.SockFilter{Code: jeq, K: auditArch, Jt: 1, Jf: 0},
		stmt(ret, enosys), // another ABI
		stmt(ld, offNr))
	if x32 {
		p = append(p, unix.SockFilter{Code: jge, K: x32Syscall, Jt: 0, Jf: 1}, stmt(ret, enosys))
	}
	for _, nr := range []uint32{unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER, unix.SYS_CLONE3} {
		p = append(p, unix.SockFilter{Code: jeq, K: nr, Jt: 0, Jf: 1}, stmt(ret, enosys))
	}
	// clone(2) with CLONE_UNTRACED (its flags are the low half of the first
	// argument): EPERM. Such a child is no tracee of the exec supervisor,
	// so what it executed would not be judged, and it would outlive the
	// supervisor (PTRACE_O_EXITKILL kills tracees only). clone3(2), whose
	// flags lie in memory a filter cannot read, is ENOSYS above: the C
	// libraries fall back to clone(2) then.
	p = append(p, unix.SockFilter{Code: jeq, K: unix.SYS_CLONE, Jt: 0, Jf: 4},
		stmt(ld, offArg0Lo),
		unix.SockFilter{Code: jset, K: unix.CLONE_UNTRACED, Jt: 0, Jf: 1}, stmt(ret, eperm),
		stmt(ret, allow))
	// socket(family, ...): allowed only for a family of the list, with
	// the upper half of the argument 0 (the kernel reads an int).
	p = append(p, unix.SockFilter{Code: jeq, K: unix.SYS_SOCKET, Jt: 1, Jf: 0}, stmt(ret, allow),
		stmt(ld, offArg0Hi),
		unix.SockFilter{Code: jeq, K: 0, Jt: 1, Jf: 0}, stmt(ret, eacces),
		stmt(ld, offArg0Lo))
	p = append(p, inetSockets()...)
	// socket(AF_NETLINK, type, NETLINK_ROUTE) only: the protocol is the
	// third argument (an int, so its low half is what the kernel reads).
	p = append(p, unix.SockFilter{Code: jeq, K: unix.AF_NETLINK, Jt: 0, Jf: 3},
		stmt(ld, offArg2Lo),
		unix.SockFilter{Code: jeq, K: unix.NETLINK_ROUTE, Jt: 0, Jf: 1}, stmt(ret, allow))
	return append(p, stmt(ret, eacces))
}

// inetSockets is the part of [socketFilter] that follows the load of
// socket(2)'s family: an IPv4 or IPv6 socket is allowed only when its type
// (without SOCK_NONBLOCK and SOCK_CLOEXEC) is SOCK_STREAM or SOCK_DGRAM and
// its protocol one of [inetProtocols]; any other IPv4 or IPv6 socket is
// refused with EACCES. Another family falls through to what follows.
func inetSockets() []unix.SockFilter {
	const (
		ld     = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq    = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		and    = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
		ret    = unix.BPF_RET | unix.BPF_K
		allow  = unix.SECCOMP_RET_ALLOW
		eacces = unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)
		// sockTypeMask is the kernel's SOCK_TYPE_MASK: the type's bits
		// without the flags.
		sockTypeMask = 0xf
	)
	stmt := func(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }
	// The block checks the type, then the protocol; a protocol that
	// matches jumps to the allow at its end, past the refusal before it.
	block := []unix.SockFilter{
		stmt(ld, offArg1Lo),
		stmt(and, sockTypeMask),
		{Code: jeq, K: unix.SOCK_STREAM, Jt: 1, Jf: 0},
		{Code: jeq, K: unix.SOCK_DGRAM, Jt: 0, Jf: uint8(1 + len(inetProtocols))},
		stmt(ld, offArg2Lo),
	}
	for i, proto := range inetProtocols {
		block = append(block, unix.SockFilter{Code: jeq, K: proto, Jt: uint8(len(inetProtocols) - i), Jf: 0})
	}
	block = append(block, stmt(ret, eacces), stmt(ret, allow))
	// Families: each of [socketFamilies] jumps to the block's start; a
	// family not among them jumps past the block.
	var p []unix.SockFilter
	for i, f := range socketFamilies {
		rest := uint8(len(socketFamilies) - 1 - i)
		if i == len(socketFamilies)-1 {
			p = append(p, unix.SockFilter{Code: jeq, K: f, Jt: 0, Jf: uint8(len(block))})
		} else {
			p = append(p, unix.SockFilter{Code: jeq, K: f, Jt: rest, Jf: 0})
		}
	}
	return append(p, block...)
}
