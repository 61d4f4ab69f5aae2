package agent

// WorkerIdle is how long an idle worker waits for a task before it exits.
const WorkerIdle = workerIdle
