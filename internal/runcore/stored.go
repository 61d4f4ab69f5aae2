package runcore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/internal/bounded"
	"github.com/tollgate-dev/tollgate/internal/jsonenc"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// Store event types written by a [Host], in the order a run passes them. Data
// of tool and approval events is the agent's [agent.Event] as JSON (no
// argument values beyond what the agent's events carry).
const (
	EventRunStarted      = "run.started"
	EventRunResumed      = "run.resumed"
	EventToolCall        = "tool.call"
	EventToolDecided     = "tool.decided"
	EventApprovalRequest = "approval.requested"
	EventToolFinished    = "tool.finished"
	EventTurnUsage       = "turn.usage"
	EventToolNotice      = "tool.notice"
	// EventMCPLogin: an OAuth login to an MCP server made while the run's
	// servers started (a login offered at a 401); its data is [MCPLogin]
	// with "by", the run's owner, who was asked. Never a token.
	EventMCPLogin        = "mcp.login"
	EventRunHalted       = "run.halted"
	EventRunFinished     = "run.finished"
	EventCancelRequested = "run.cancel_requested"
	EventRunCancelled    = "run.cancelled"
	// EventRunReleased: the host stopped driving the run without ending it
	// ([ErrHostStopping]); the next [Host.Resume] takes it over.
	EventRunReleased = "run.released"
)

// Errors of the hosts of runs; package runs re-exports them.
var (
	// ErrNotResumable: the run is done, failed, incomplete or cancelled.
	ErrNotResumable = errors.New("runs: the run has ended")
	// ErrEmptyPrompt: a start with an empty prompt.
	ErrEmptyPrompt = errors.New("runs: the prompt is empty")
)

// DefaultLeaseTTL is how long a host's lease on a run lasts without a
// heartbeat when its options set none.
const DefaultLeaseTTL = 30 * time.Second

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// NewRunID returns a new random run ID ("run_" and 16 hex digits).
func NewRunID() string { return "run_" + randomHex(8) }

// LoadConfig decodes and checks a stored run's configuration.
func LoadConfig(run store.Run) (RunConfig, error) {
	var cfg RunConfig
	if err := json.Unmarshal(run.Config, &cfg); err != nil {
		return cfg, fmt.Errorf("runs: run %s: stored configuration: %w", run.ID, err)
	}
	if err := CheckConfig(cfg); err != nil {
		return cfg, fmt.Errorf("run %s: %w", run.ID, err)
	}
	return cfg, nil
}

// Limits of a stored run's state read back by [LoadState]: 256 MiB, and JSON
// nested at most 1000 deep (the model's own arguments may nest deeply).
const (
	MaxStoredState = 256 << 20
	MaxStoredDepth = 1000
)

// LoadState decodes a stored run's state (the halted run or its latest checkpoint).
func LoadState(run store.Run) (*agent.State, error) {
	if len(run.State) == 0 {
		return nil, fmt.Errorf("runs: run %s has no stored state", run.ID)
	}
	// The stored state is bounded before it is decoded, as every document is.
	if err := bounded.CheckJSON("runs: run "+run.ID+": stored state", run.State, bounded.Limits{MaxBytes: MaxStoredState, MaxDepth: MaxStoredDepth}); err != nil {
		return nil, err
	}
	var st agent.State
	if err := json.Unmarshal(run.State, &st); err != nil {
		return nil, fmt.Errorf("runs: run %s: stored state: %w", run.ID, err)
	}
	return &st, nil
}

// CancelledByData returns the data of a [EventRunCancelled] or
// [EventCancelRequested] event: {"by": PRINCIPAL}, the principal as an
// object, as a decision's "by" is. Events stored before principals were
// typed hold its text form ("person:alice"), which [tool.Principal]'s
// UnmarshalJSON still reads. A zero principal, or one whose kind is not
// one of tool's, is an error: a cancellation always says who.
func CancelledByData(by tool.Principal) (json.RawMessage, error) {
	if by.IsZero() {
		return nil, errors.New("runs: a cancellation needs the principal who cancelled")
	}
	if !by.Kind.Valid() {
		return nil, fmt.Errorf("runs: cancelled by %q: the kind is not hook, rule, autonomy, person, runtime or flag", by.String())
	}
	return json.Marshal(struct {
		By tool.Principal `json:"by"`
	}{by})
}

// CheckOwner refuses an owner whose kind is not one of tool's principal
// kinds; the zero principal (no owner) is allowed.
func CheckOwner(owner tool.Principal) error {
	if !owner.IsZero() && !owner.Kind.Valid() {
		return fmt.Errorf("runs: owner %q: the kind is not hook, rule, autonomy, person, runtime or flag", owner.String())
	}
	return nil
}

// StartedData returns the data of a run's [EventRunStarted] event: its
// agent, model, owner (a principal object, left out when zero) and, for a
// durable run, "durable": true.
func StartedData(cfg RunConfig, owner tool.Principal, durable bool) json.RawMessage {
	b, _ := json.Marshal(struct {
		Agent   string         `json:"agent"`
		Model   string         `json:"model"`
		Owner   tool.Principal `json:"owner,omitzero"`
		Durable bool           `json:"durable,omitempty"`
	}{cfg.Agent, cfg.Model.String(), owner, durable})
	return b
}

// CancelledReason is the reason of the denial recorded for each pending
// request of a cancelled run ([DenyPending]).
const CancelledReason = "the run was cancelled"

// DenyPending denies every pending request of run, which has just been
// stored cancelled, in by's name with the reason [CancelledReason]: no
// person is left to answer what nothing will use (lists of pending
// approvals, the approvals page), a process waiting for the answers ends,
// and a late answer is refused ([store.ErrDecided], saying who decided).
// Every host's cancel calls it after storing the cancel: [Host.Cancel] and
// the [DurableQueue] of internal/dbosengine. A request decided or expired
// meanwhile is left as it is. Only run's Tenant and ID are read. Errors:
// the store's.
func DenyPending(ctx context.Context, s store.Store, run store.Run, by tool.Principal) error {
	f := store.ApprovalFilter{Tenant: run.Tenant, RunID: run.ID, Status: store.StatusPending}
	for {
		page, err := s.ListApprovals(ctx, f)
		if err != nil {
			return err
		}
		for _, a := range page.Approvals {
			_, err := s.Decide(ctx, run.ID, a.ID, store.Answer{By: by, Reason: CancelledReason})
			if err != nil && !errors.Is(err, store.ErrDecided) && !errors.Is(err, store.ErrExpired) {
				return err
			}
		}
		if page.Next == "" {
			return nil
		}
		f.Cursor = page.Next
	}
}

// StoredEvent turns an agent event of run runID into the store event a
// host keeps of it, at time at, or false for events that are not kept (text
// deltas, the final result, which the run record holds).
func StoredEvent(tenant, runID string, at time.Time, ev agent.Event) (store.Event, bool) {
	var typ string
	switch ev.Kind {
	case agent.EventToolCall:
		typ = EventToolCall
	case agent.EventDecision:
		typ = EventToolDecided
	case agent.EventPending:
		typ = EventApprovalRequest
	case agent.EventToolResult:
		typ = EventToolFinished
	case agent.EventUsage:
		typ = EventTurnUsage
	case agent.EventNotice:
		typ = EventToolNotice
	default:
		return store.Event{}, false
	}
	b, err := jsonenc.Marshal(ev)
	if err != nil {
		return store.Event{}, false
	}
	return store.Event{Tenant: tenant, RunID: runID, Type: typ, Time: at, Data: b}, true
}

// EndStatus is the status a part of a run that ended with res and runErr
// is stored with: the result's when it has no error, cancelled when a
// cancel stopped it ([ErrCancelRequested]), else error.
func EndStatus(res *agent.Result, runErr error) store.RunStatus {
	switch {
	case errors.Is(runErr, ErrCancelRequested):
		return store.RunCancelled
	case res != nil && runErr == nil:
		return store.RunStatus(res.Status)
	}
	return store.RunError
}

// ErrCancelRequested is the cause of a run's context when Cancel asked it to stop.
var ErrCancelRequested = errors.New("runs: the run was cancelled")

// KnownApprovals returns the IDs of every stored approval of the run, across
// pages: a halt stores only the requests that are new.
func KnownApprovals(ctx context.Context, st store.Store, runID string) (map[string]bool, error) {
	known := map[string]bool{}
	for a, err := range store.AllApprovals(ctx, st, store.ApprovalFilter{AllTenants: true, RunID: runID}) {
		if err != nil {
			return nil, err
		}
		known[a.ID] = true
	}
	return known, nil
}

// maxHaltReasonCalls bounds the waiting calls a run.halted reason names.
const maxHaltReasonCalls = 5

// HaltReason says what a halted run waits for, as the reason of its
// run.halted event: "waits for an answer: approval of transfer (req_…)",
// naming each waiting request's kind, tool and ID (at most
// maxHaltReasonCalls of them, then how many more).
func HaltReason(st *agent.State) string {
	if st == nil {
		return ""
	}
	ws := st.Waiting()
	if len(ws) == 0 {
		return ""
	}
	parts := make([]string, 0, min(len(ws), maxHaltReasonCalls+1))
	for i, w := range ws {
		if i == maxHaltReasonCalls {
			parts = append(parts, fmt.Sprintf("and %d more", len(ws)-i))
			break
		}
		kind := w.Pending.Request.Kind
		if kind == "" {
			kind = tool.KindApproval
		}
		parts = append(parts, fmt.Sprintf("%s of %s (%s)", kind, w.Call.Name, w.Pending.Request.ID))
	}
	noun := "an answer"
	if len(ws) > 1 {
		noun = fmt.Sprintf("%d answers", len(ws))
	}
	return "waits for " + noun + ": " + strings.Join(parts, ", ")
}

// ReasonOf is the reason stored with the end of a part of a run: the
// error's text, else the result's reason.
func ReasonOf(res *agent.Result, err error) string {
	if err != nil {
		return err.Error()
	}
	if res != nil {
		return res.Reason
	}
	return ""
}

// ApprovalsOf returns the store records of st's pending requests, skipping
// those already stored.
func ApprovalsOf(tenant string, st *agent.State, skip map[string]bool) []store.Approval {
	var out []store.Approval
	for _, w := range st.Waiting() {
		p := w.Pending
		if skip[p.Request.ID] {
			continue
		}
		out = append(out, store.Approval{
			ID: p.Request.ID, Tenant: tenant, CallID: w.Call.ID, Tool: w.Call.Name, Digest: p.Digest,
			Kind: p.Request.Kind, Prompt: p.Request.Prompt, Request: p.Request, ExpiresAt: p.Request.ExpiresAt,
		})
	}
	return out
}

// ResultJSON encodes res without its State (stored separately).
func ResultJSON(res *agent.Result) json.RawMessage {
	if res == nil {
		return nil
	}
	c := *res
	c.State = nil
	b, _ := jsonenc.Marshal(c)
	return b
}
