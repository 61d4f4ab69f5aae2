package agent_test

import (
	"bytes"
	"runtime"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/model"
)

// The scripted model (testkit.Script) and the counting tool (testkit.Counter)
// these tests share with other packages' tests live in internal/testkit.

func newAgent(t *testing.T, opts agent.Options) *agent.Agent {
	t.Helper()
	a, err := agent.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func toolMsgs(res *agent.Result) []model.Message {
	var out []model.Message
	for _, m := range res.Transcript {
		if m.Role == model.RoleTool {
			out = append(out, m)
		}
	}
	return out
}

// goroutinesWithoutWorkers waits until no agent has a worker goroutine left
// (idle ones exit after agent.WorkerIdle) and returns the number of
// goroutines then, so that a test comparing it with the number after a run
// counts the run's leaks and not workers that earlier tests left to expire.
func goroutinesWithoutWorkers(t *testing.T) int {
	t.Helper()
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(agent.WorkerIdle + 5*time.Second); ; time.Sleep(10 * time.Millisecond) {
		if !bytes.Contains(buf[:runtime.Stack(buf, true)], []byte("agent.(*workers).work")) {
			return runtime.NumGoroutine() // no run goes on, so no worker can start
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent workers still live %v after the last test's calls", agent.WorkerIdle+5*time.Second)
		}
	}
}
