//go:build linux

package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// cgroupRoot is where the cgroup file systems are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// cgroupPrefix names the cgroups the helper makes, one per command.
const cgroupPrefix = "tollgate-sandbox-"

// limitFile is a limit to write in a cgroup: file name and value.
type limitFile struct{ name, value string }

// joinCgroups puts this helper (and so everything it starts) into cgroups of
// its own below its current ones, with the process and memory limits: on
// cgroup v2 one cgroup with pids.max and memory.max, on cgroup v1 one in
// the pids and one in the memory hierarchy. It returns the controllers it
// could use ("pids", "memory") and a function that leaves and removes the
// cgroups once the command has ended. Where this user may not make cgroups
// (no delegation), it uses none, and the rlimits (setLimits) are the bound.
// Cgroups left by a helper that was killed are removed on the next call.
func joinCgroups(maxProcs int, maxMem int64) (used []string, leave func()) {
	var dirs []string
	join := func(parent, controller string, limits ...limitFile) {
		if parent == "" {
			return
		}
		sweep(parent)
		dir := filepath.Join(parent, fmt.Sprintf("%s%d", cgroupPrefix, os.Getpid()))
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return
		}
		for _, l := range limits {
			if err := os.WriteFile(filepath.Join(dir, l.name), []byte(l.value), 0); err != nil {
				_ = os.Remove(dir) // the controller is not enabled here
				return
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
			_ = os.Remove(dir)
			return
		}
		used = append(used, controller)
		dirs = append(dirs, dir)
	}
	mem, memV1, procs := strconv.FormatInt(maxMem, 10), strconv.FormatInt(maxMem, 10), strconv.Itoa(maxProcs)
	if maxMem <= 0 {
		mem, memV1 = "max", "-1"
	}
	if maxProcs <= 0 {
		procs = "max"
	}
	paths := ownCgroups()
	if p, ok := paths[""]; ok && exists(filepath.Join(cgroupRoot, "cgroup.controllers")) {
		// cgroup v2: one cgroup, each limit only where its controller is
		// enabled (pids.max, memory.max exist).
		base := filepath.Join(cgroupRoot, p)
		join(base, "pids", limitFile{"pids.max", procs})
		if len(dirs) == 1 && exists(filepath.Join(dirs[0], "memory.max")) {
			if os.WriteFile(filepath.Join(dirs[0], "memory.max"), []byte(mem), 0) == nil {
				_ = os.WriteFile(filepath.Join(dirs[0], "memory.swap.max"), []byte("0"), 0)
				used = append(used, "memory")
			}
		}
	} else {
		if p, ok := paths["pids"]; ok {
			join(filepath.Join(cgroupRoot, "pids", p), "pids", limitFile{"pids.max", procs})
		}
		if p, ok := paths["memory"]; ok {
			join(filepath.Join(cgroupRoot, "memory", p), "memory", limitFile{"memory.limit_in_bytes", memV1})
		}
	}
	return used, func() {
		for _, d := range dirs {
			_ = os.WriteFile(filepath.Join(filepath.Dir(d), "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0)
			_ = os.Remove(d)
		}
	}
}

// ownCgroups maps each controller of this process's cgroups (/proc/self/cgroup)
// to its path: "" for the cgroup v2 hierarchy, "pids", "memory", ... for v1.
func ownCgroups() map[string]string {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 || !strings.HasPrefix(parts[2], "/") {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out
}

// sweep removes the cgroups below parent that helpers killed before they
// could remove their own left behind: those of a helper that is gone (a
// cgroup is named after its helper's process ID), and empty (rmdir refuses
// the others).
func sweep(parent string) {
	matches, _ := filepath.Glob(filepath.Join(parent, cgroupPrefix+"*"))
	for _, m := range matches {
		pid, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(m), cgroupPrefix))
		if err != nil || unix.Kill(pid, 0) == unix.ESRCH {
			_ = os.Remove(m)
		}
	}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// setProcessLimit bounds the processes and threads of this process's user in
// its user namespace (RLIMIT_NPROC, counted per user namespace): only inside
// the sandbox's own namespace, where the command's processes are all there
// is to count. The kernel does not apply it to root (uid 0 of the host);
// the cgroups do.
func setProcessLimit(maxProcs int) error {
	lim := &unix.Rlimit{Cur: uint64(maxProcs), Max: uint64(maxProcs)}
	if err := unix.Setrlimit(unix.RLIMIT_NPROC, lim); err != nil {
		return fmt.Errorf("limiting processes (RLIMIT_NPROC): %w", err)
	}
	return nil
}

// inMemoryCgroup reports whether this process lies in a memory cgroup a
// helper made (cgroup v1 memory hierarchy, or cgroup v2 with memory.max):
// the memory bound is then the cgroup's, for all the command's processes
// together, and RLIMIT_DATA is not set (it would refuse AddressSanitizer's
// shadow memory, reserved but never used).
func inMemoryCgroup() bool {
	paths := ownCgroups()
	if p, ok := paths["memory"]; ok {
		return strings.HasPrefix(filepath.Base(p), cgroupPrefix)
	}
	p, ok := paths[""]
	return ok && strings.HasPrefix(filepath.Base(p), cgroupPrefix) && exists(filepath.Join(cgroupRoot, p, "memory.max"))
}

// setMemoryLimit bounds the data (heap and private writable mappings) of
// each process the command starts (RLIMIT_DATA): an allocation beyond it
// fails with ENOMEM. Address space merely reserved (as V8 and Go reserve it)
// does not count.
func setMemoryLimit(maxMem int64) error {
	lim := &unix.Rlimit{Cur: uint64(maxMem), Max: uint64(maxMem)}
	if err := unix.Setrlimit(unix.RLIMIT_DATA, lim); err != nil {
		return fmt.Errorf("limiting memory (RLIMIT_DATA): %w", err)
	}
	return nil
}

// totalMemory is the machine's memory in bytes, 0 when unknown.
func totalMemory() int64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}
