package runcore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/jsonenc"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// steps is the middleware that makes each model turn and each call pass a
// step of the engine.
//
// A call's step stores the events its work emitted before it ends (the
// agent hands each event over before the work that emitted it returns), so
// that the store's event log has them once the step is recorded; a step that
// runs again after a crash may store its events twice. A turn's step stores
// nothing: its events ride in its record and are stored with the run's next
// write (a call's step, a halt, the end), which a turn is always followed
// by; a replay takes them from the record again, and may store them twice
// when the crash came after the write that stored them and before the
// record of its step.
func (d *Durable) steps(eng Engine, in DurableRun, seq *sequencer, col *collector) agent.Middleware {
	return agent.Middleware{
		Turn: func(next agent.TurnHandler) agent.TurnHandler {
			return func(ctx context.Context, t *agent.TurnInfo) (*model.Response, error) {
				var taken []store.Event // the turn's events, until its record holds them
				b, err := eng.Step(ctx, fmt.Sprintf("turn %d", t.Turn), func(ctx context.Context) ([]byte, error) {
					resp, err := next(ctx, t)
					if err != nil && ctx.Err() != nil {
						return nil, err // interrupted: not a result to keep
					}
					stableCallIDs(resp, t.Turn)
					taken = append(taken, col.take()...)
					return jsonenc.Marshal(turnRecord{Response: resp, Err: errText(err), Events: taken})
				})
				if err != nil {
					if taken != nil { // the step ran and took them; else the carried ones stay
						col.carry(taken) // not recorded: stored with what follows, if anything does
					}
					return nil, err
				}
				var rec turnRecord
				if err := json.Unmarshal(b, &rec); err != nil {
					return nil, fmt.Errorf("runs: run %s: recorded turn %d: %w", in.RunID, t.Turn, err)
				}
				col.carry(rec.Events)
				if rec.Err != "" {
					return rec.Response, errors.New(rec.Err)
				}
				var ids []string
				if rec.Response != nil {
					for _, c := range rec.Response.Message.ToolCalls {
						ids = append(ids, c.ID)
					}
				}
				seq.reset(ids)
				return rec.Response, nil
			}
		},
		Call: func(next agent.CallHandler) agent.CallHandler {
			return func(ctx context.Context, c *agent.CallInfo) gate.Ruling {
				name := "decide " + c.Call.ID
				if c.Answer != nil {
					name = "execute " + c.Call.ID
				}
				prev, launched, ok := seq.slot(c.Call.ID)
				if !ok {
					return gate.Ruling{Err: fmt.Errorf("runs: run %s: call %s is not one the turn announced", in.RunID, c.Call.ID)}
				}
				select {
				case <-prev:
				case <-ctx.Done():
					close(launched)
					return gate.Ruling{Err: ctx.Err()}
				}
				wait, err := eng.Go(ctx, name, func(ctx context.Context) ([]byte, error) {
					ci := *c
					if c.Answer != nil && c.Answer.OK {
						ans, err := d.use(ctx, in.RunID, c.Call, *c.Answer)
						if err != nil {
							return nil, err
						}
						ci.Answer = &ans
					}
					oc := next(ctx, &ci)
					if oc.Err != nil && ctx.Err() != nil {
						return nil, oc.Err
					}
					// The call's last event is handed over on another
					// goroutine: store the events once it has arrived.
					switch {
					case oc.Record != nil:
						col.await(ctx, c.Turn, c.Call.ID, agent.EventToolResult)
					case oc.Pending != nil:
						col.await(ctx, c.Turn, c.Call.ID, agent.EventPending)
					}
					col.flush(ctx)
					return jsonenc.Marshal(callRecord{Record: oc.Record, Pending: oc.Pending, Err: errText(oc.Err)})
				})
				close(launched)
				if err != nil {
					return gate.Ruling{Err: err}
				}
				b, err := wait()
				if err != nil {
					return gate.Ruling{Err: err}
				}
				// The step stored the turn's carried events before its
				// record: a replay that finds the record stores them not
				// again.
				col.carry(nil)
				var rec callRecord
				if err := json.Unmarshal(b, &rec); err != nil {
					return gate.Ruling{Err: fmt.Errorf("runs: run %s: recorded call %s: %w", in.RunID, c.Call.ID, err)}
				}
				oc := gate.Ruling{Record: rec.Record, Pending: rec.Pending}
				if rec.Err != "" {
					oc.Err = errors.New(rec.Err)
				}
				return oc
			}
		},
	}
}

// sequencer makes the calls of a turn take their step positions in the
// model's order: each call starts its step once the one before it has.
type sequencer struct {
	mu       sync.Mutex
	pos      map[string]int
	launched []chan struct{}
}

// reset starts a batch of calls, in order.
func (s *sequencer) reset(ids []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pos = make(map[string]int, len(ids))
	s.launched = make([]chan struct{}, len(ids))
	for i, id := range ids {
		s.pos[id] = i
		s.launched[i] = make(chan struct{})
	}
}

// slot returns what call id waits for before it starts its step (closed
// when the call before it has started its own), and what it closes once it
// has; ok is false for a call the batch does not have.
func (s *sequencer) slot(id string) (prev <-chan struct{}, launched chan struct{}, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.pos[id]
	if !ok {
		return nil, nil, false
	}
	if i == 0 {
		c := make(chan struct{})
		close(c)
		return c, s.launched[0], true
	}
	return s.launched[i-1], s.launched[i], true
}

// stableCallIDs gives every call of resp an ID unique in the turn before the
// turn is recorded, as the agent would (it would draw random ones), so that
// a replay names each call's steps alike.
func stableCallIDs(resp *model.Response, turn int) {
	if resp == nil {
		return
	}
	seen := map[string]bool{}
	for i := range resp.Message.ToolCalls {
		c := &resp.Message.ToolCalls[i]
		if c.ID == "" || seen[c.ID] {
			c.ID = fmt.Sprintf("call_t%d_%d", turn, i+1)
			for seen[c.ID] {
				c.ID += "_"
			}
		}
		seen[c.ID] = true
	}
}

// iter2 is the stream of a part of a run: the agent's events.
type iter2 = func(func(agent.Event, error) bool)

// turnRecord and callRecord are what the engine records of a turn and a call.
// A turn's record carries the events it emitted, not stored yet.
type turnRecord struct {
	Response *model.Response `json:"response,omitempty"`
	Err      string          `json:"err,omitempty"`
	Events   []store.Event   `json:"events,omitempty"`
}

type callRecord struct {
	Record  *gate.Record  `json:"record,omitempty"`
	Pending *gate.Pending `json:"pending,omitempty"`
	Err     string        `json:"err,omitempty"`
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// usedReason is what the model is told of an approved call whose approval
// an execution that did not finish had used.
const usedReason = "the approval was used by an execution that did not finish; the call may or may not have run, and is not run again"

// use turns an approving answer into the answer the execute step may act
// on: the approval is used once in the store; one that is already used (the
// step ran before and was interrupted) or expired declines the call, and so
// does one given for another call than call (an answer naming another
// approval of the run).
func (d *Durable) use(ctx context.Context, runID string, call model.ToolCall, ans tool.Answer) (tool.Answer, error) {
	a, err := d.store.GetApproval(ctx, runID, ans.ID)
	if err != nil {
		return ans, err
	}
	if a.Unverified {
		out, _ := a.Answer() // declines: written around tollgate
		return out, nil
	}
	if a.CallID != call.ID {
		return tool.Answer{ID: ans.ID, Principal: approval.Runtime, Reason: fmt.Sprintf("the approval %s was given for another call; the call was not run", a.ID)}, nil
	}
	switch a.Status {
	case store.StatusUsed:
		return tool.Answer{ID: ans.ID, Principal: approval.Runtime, Reason: usedReason}, nil
	case store.StatusApproved:
		u, err := d.store.Consume(ctx, runID, a.ID, a.Digest)
		switch {
		case errors.Is(err, store.ErrUsed):
			return tool.Answer{ID: ans.ID, Principal: approval.Runtime, Reason: usedReason}, nil
		case errors.Is(err, store.ErrExpired):
			return tool.Answer{ID: ans.ID, Principal: approval.Runtime, Reason: "the approval expired before the call could run"}, nil
		case err != nil:
			return ans, err
		}
		if out, ok := u.Answer(); ok {
			return out, nil
		}
	}
	return tool.Answer{ID: ans.ID, Principal: approval.Runtime, Reason: fmt.Sprintf("the approval is %s, not approved; the call was not run", a.Status)}, nil
}
