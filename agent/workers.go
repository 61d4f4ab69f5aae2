package agent

import (
	"bytes"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// workerIdle is how long a worker goroutine waits for the next task before it
// exits.
const workerIdle = time.Second

// workers runs an agent's tool calls (and the tools themselves) on goroutines
// that outlive one task: a goroutine that ran a call waits up to workerIdle
// for the next one and then exits. A call's goroutine grows its stack while
// it runs the pipeline, the schema validator and the tool's JSON decoding;
// on a fresh goroutine that growth (runtime.newstack, copying the stack at
// each doubling) costs more than the pipeline itself, so calls run on stacks
// that earlier calls already grew.
//
// A task that never returns (a tool that ignores its context, abandoned
// after [AbandonAfter]) keeps its goroutine, as it would without the pool;
// that goroutine takes no further task until the tool returns. No task ever
// waits for a worker: with none idle, do starts a goroutine.
//
// The pool belongs to one agent and is made by [New], except for an agent
// made inside a testing/synctest bubble: there time stops when the bubble's
// main goroutine returns, so an idle worker would never time out and the
// bubble would end in a deadlock; such an agent starts a goroutine per task,
// and must be used in its bubble only. (A pool shared by every agent would
// also hand a bubble's calls to goroutines outside it.) A nil *workers
// starts a goroutine per task.
type workers struct {
	tasks chan func() // unbuffered: a send succeeds only when a worker waits
	idle  atomic.Int32
	live  atomic.Int32
	// toolTasks holds the *toolTask values executeBounded hands to workers,
	// for reuse.
	toolTasks sync.Pool
}

func newWorkers() *workers {
	p := &workers{tasks: make(chan func())}
	p.toolTasks.New = func() any { return newToolTask() }
	return p
}

// inBubble reports whether the calling goroutine runs in a testing/synctest
// bubble, from the header of its stack trace ("goroutine 7 [running,
// synctest bubble 1]:"), the only place the runtime tells. It costs a
// traceback, so [New] asks once per agent.
func inBubble() bool {
	var buf [256]byte
	b := buf[:runtime.Stack(buf[:], false)]
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	return bytes.Contains(b, []byte(", synctest bubble "))
}

// do runs f on an idle worker, or on a new goroutine when none is idle.
func (p *workers) do(f func()) {
	if p == nil {
		go f()
		return
	}
	select {
	case p.tasks <- f:
	default:
		p.live.Add(1)
		go p.work(f)
	}
}

// work runs f, then the tasks it is handed, until it has waited workerIdle
// for one.
func (p *workers) work(f func()) {
	defer p.live.Add(-1)
	f()
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	for {
		p.idle.Add(1)
		select {
		case f = <-p.tasks:
			p.idle.Add(-1)
			f()
			t.Reset(workerIdle)
		case <-t.C:
			p.idle.Add(-1)
			return
		}
	}
}
