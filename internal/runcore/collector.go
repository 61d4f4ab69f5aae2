package runcore

import (
	"context"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/store"
)

// collector drains a part of a run and keeps the events to store.
type collector struct {
	d      *Durable
	in     DurableRun
	mu     sync.Mutex
	events []store.Event
	// carried are the events a turn's step recorded instead of storing
	// them: stored with the next ones.
	carried []store.Event
	// arrived is closed, per call and event kind, when that event has been
	// collected.
	arrived map[eventKey]chan struct{}
}

type eventKey struct {
	turn int
	call string
	kind agent.EventKind
}

func (c *collector) arrival(k eventKey) chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.arrived == nil {
		c.arrived = map[eventKey]chan struct{}{}
	}
	ch, ok := c.arrived[k]
	if !ok {
		ch = make(chan struct{})
		c.arrived[k] = ch
	}
	return ch
}

// await waits until call's event of kind has been collected, ctx ends, or
// (should the stream have stopped) a few seconds have passed.
func (c *collector) await(ctx context.Context, turn int, call string, kind agent.EventKind) {
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	select {
	case <-c.arrival(eventKey{turn, call, kind}):
	case <-ctx.Done():
	case <-t.C:
	}
}

func (c *collector) drain(stream iter2) (*agent.Result, error) {
	var res *agent.Result
	var runErr error
	for ev, err := range stream {
		if ev.Kind == agent.EventDone {
			res = ev.Result
		}
		if err != nil {
			runErr = err
		}
		if se, ok := StoredEvent(c.in.Tenant, c.in.RunID, c.d.now(), ev); ok {
			c.mu.Lock()
			c.events = append(c.events, se)
			c.mu.Unlock()
		}
		if ev.Kind == agent.EventToolResult || ev.Kind == agent.EventPending {
			ch := c.arrival(eventKey{ev.Turn, ev.CallID, ev.Kind})
			c.mu.Lock()
			select {
			case <-ch:
			default:
				close(ch)
			}
			c.mu.Unlock()
		}
	}
	return res, runErr
}

// flush stores the events collected so far. When the store fails they are
// kept for the next flush (a halt or the end stores them at the latest):
// the step's work is done, and failing the step would run it again.
func (c *collector) flush(ctx context.Context) {
	evs := c.take()
	if len(evs) == 0 {
		return
	}
	if _, err := c.d.store.AppendEvents(ctx, evs...); err != nil {
		c.d.log.Warn("storing a run's events failed; they are stored with the next ones", "run", c.in.RunID, "error", err)
		c.mu.Lock()
		c.events = append(evs, c.events...)
		c.mu.Unlock()
	}
}

// take returns the events to store, the carried ones first, and forgets
// them.
func (c *collector) take() []store.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	evs := append(c.carried, c.events...)
	c.carried, c.events = nil, nil
	return evs
}

// carry keeps evs, the events a turn's step took (those carried before it
// included), to be stored before the events collected since. They replace
// the carried ones: a replay carries those of an earlier turn until the
// record of this one, which holds them too when nothing stored them.
func (c *collector) carry(evs []store.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.carried = evs
}
