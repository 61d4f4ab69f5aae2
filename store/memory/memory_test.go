package memory_test

import (
	"testing"

	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/store/storetest"
)

func TestMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T, opts *store.Options) store.Store { return memory.New(opts) })
}

func TestAnswerOfPending(t *testing.T) {
	if ans, ok := (store.Approval{ID: "x", Status: store.StatusPending}).Answer(); ok {
		t.Errorf("a pending approval answered %+v", ans)
	}
}

func TestMemoryShared(t *testing.T) {
	storetest.RunShared(t, func(t *testing.T, opts *store.Options) (store.Store, store.Store) {
		m := memory.New(opts)
		return m, m
	})
}
