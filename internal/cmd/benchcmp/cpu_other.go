//go:build !unix

package main

import "time"

// processCPU is not measured on this system: getrusage is Unix's.
func processCPU() time.Duration { return 0 }

// cpuMeasured says whether processCPU measures anything here.
const cpuMeasured = false
