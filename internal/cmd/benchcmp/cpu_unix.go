//go:build unix

package main

import (
	"syscall"
	"time"
)

// processCPU is the CPU time this process has used, user and system, all
// threads together (getrusage(RUSAGE_SELF)), or 0 when it cannot be read.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuMeasured says whether processCPU measures anything here.
const cpuMeasured = true
