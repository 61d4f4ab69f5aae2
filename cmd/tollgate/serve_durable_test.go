package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tollgate-dev/tollgate/internal/dbosengine"
	"github.com/tollgate-dev/tollgate/server"
)

// Every key of server.yaml's durable: section reaches the engine: the
// queue poll interval was read and then dropped.
func TestDurableOptionsCarryEveryKey(t *testing.T) {
	d := &server.DurableConfig{DatabaseURL: "sqlite:/tmp/dbos.db", Queue: "q", Concurrency: 3, ExecutorID: "server-a",
		Heartbeat: 2 * time.Second, DeadAfter: 7 * time.Second, AnswerPoll: 11 * time.Second, QueuePoll: 13 * time.Millisecond}
	want := dbosengine.Options{DatabaseURL: "sqlite:/tmp/dbos.db", Worker: true, Queue: "q", Concurrency: 3, ExecutorID: "server-a",
		Heartbeat: 2 * time.Second, DeadAfter: 7 * time.Second, AnswerPoll: 11 * time.Second, QueuePoll: 13 * time.Millisecond}
	if diff := cmp.Diff(want, durableOptions(d)); diff != "" {
		t.Errorf("engine options (-want +got):\n%s", diff)
	}
	if durableOptions(&server.DurableConfig{}).Worker {
		t.Error("a server with concurrency 0 drives runs itself; it must only enqueue")
	}
}
