package storeimpltest

import (
	"context"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/store"
)

// Calls is a store that notes, in order, its writes by method ("UpdateRun"
// with the status it stores, if any: "UpdateRun done") and its reads of
// one approval ("GetApproval"), for tests that count what a host or a
// server asks of its store.
type Calls struct {
	store.Store
	mu    sync.Mutex
	calls []string
}

func (c *Calls) note(m string) {
	c.mu.Lock()
	c.calls = append(c.calls, m)
	c.mu.Unlock()
}

// Take returns the calls noted since the last Take.
func (c *Calls) Take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.calls
	c.calls = nil
	return out
}

// CreateRun implements [store.Store].
func (c *Calls) CreateRun(ctx context.Context, r store.CreateRunRequest) (store.Run, error) {
	c.note("CreateRun")
	return c.Store.CreateRun(ctx, r)
}

// UpdateRun implements [store.Store].
func (c *Calls) UpdateRun(ctx context.Context, id string, u store.RunUpdate) (store.Run, error) {
	m := "UpdateRun"
	if u.Status != "" {
		m += " " + string(u.Status)
	}
	c.note(m)
	return c.Store.UpdateRun(ctx, id, u)
}

// ClaimRun implements [store.Store].
func (c *Calls) ClaimRun(ctx context.Context, id string, cl store.Claim) (store.Run, []store.Approval, error) {
	c.note("ClaimRun")
	return c.Store.ClaimRun(ctx, id, cl)
}

// RenewLease implements [store.Store].
func (c *Calls) RenewLease(ctx context.Context, id, holder string, token int64, ttl time.Duration) (store.Lease, error) {
	c.note("RenewLease")
	return c.Store.RenewLease(ctx, id, holder, token, ttl)
}

// Decide implements [store.Store].
func (c *Calls) Decide(ctx context.Context, runID, id string, d store.Answer) (store.Approval, error) {
	c.note("Decide")
	return c.Store.Decide(ctx, runID, id, d)
}

// Consume implements [store.Store].
func (c *Calls) Consume(ctx context.Context, runID, id, digest string) (store.Approval, error) {
	c.note("Consume")
	return c.Store.Consume(ctx, runID, id, digest)
}

// GetApproval implements [store.Store].
func (c *Calls) GetApproval(ctx context.Context, runID, id string) (store.Approval, error) {
	c.note("GetApproval")
	return c.Store.GetApproval(ctx, runID, id)
}

// ExpireApprovals implements [store.Store].
func (c *Calls) ExpireApprovals(ctx context.Context) ([]store.Approval, error) {
	c.note("ExpireApprovals")
	return c.Store.ExpireApprovals(ctx)
}

// AppendEvents implements [store.Store].
func (c *Calls) AppendEvents(ctx context.Context, evs ...store.Event) ([]int64, error) {
	c.note("AppendEvents")
	return c.Store.AppendEvents(ctx, evs...)
}

// DeleteRuns implements [store.Store].
func (c *Calls) DeleteRuns(ctx context.Context, f store.PruneFilter) (int, error) {
	c.note("DeleteRuns")
	return c.Store.DeleteRuns(ctx, f)
}
