package agent

// LiveWorkers returns the number of worker goroutines of every agent,
// running a call or idle (they exit after WorkerIdle without a task).
func LiveWorkers() int { return int(liveWorkers.Load()) }

// WorkerIdle is how long an idle worker waits for a task before it exits.
const WorkerIdle = workerIdle
