package server_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/server"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// readCounter is a store that counts the GetRun and ListApprovals calls made
// on behalf of an HTTP request (their context is a request's), not those of
// the runs the server drives in the background.
type readCounter struct {
	store.Store
	mu        sync.Mutex
	getRun    int
	approvals int
}

func onRequest(ctx context.Context) bool { return ctx.Value(http.ServerContextKey) != nil }

func (c *readCounter) GetRun(ctx context.Context, id string) (store.Run, error) {
	if onRequest(ctx) {
		c.mu.Lock()
		c.getRun++
		c.mu.Unlock()
	}
	return c.Store.GetRun(ctx, id)
}

func (c *readCounter) ListApprovals(ctx context.Context, f store.ApprovalFilter) (store.ApprovalPage, error) {
	if onRequest(ctx) {
		c.mu.Lock()
		c.approvals++
		c.mu.Unlock()
	}
	return c.Store.ListApprovals(ctx, f)
}

// reset zeroes the counts and returns them.
func (c *readCounter) reset() (getRun, approvals int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	getRun, approvals = c.getRun, c.approvals
	c.getRun, c.approvals = 0, 0
	return getRun, approvals
}

// A decision reads its approval once and its run once, a durable run's
// too; an event stream of one run reads the run once.
func TestOneReadPerRequest(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(map[bool]string{false: "hosted", true: "durable"}[durable], func(t *testing.T) {
			c := &readCounter{Store: memory.New(nil)}
			opts := &server.Options{}
			if durable {
				opts.Durable = newMemQueue(t, c.Store, &testBuilder{m: transferScript(), tools: agent.ToolList{&testkit.Counter{Name: "transfer", Schema: transferSchema}}})
			}
			f := newFixture(t, c, nil, opts)
			id := f.startRun()
			waitStatus(t, c.Store, id, store.RunPending)
			var page serverapi.ApprovalPage
			if code := f.do("GET", "/v1/approvals?status=pending&run="+id, aliceToken, nil, &page); code != http.StatusOK || len(page.Approvals) != 1 {
				t.Fatalf("pending approvals: %d %+v", code, page)
			}
			a := page.Approvals[0]
			c.reset()
			if code := f.do("POST", "/v1/approvals/"+a.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest}, nil); code != http.StatusOK {
				t.Fatalf("decision: %d", code)
			}
			if runs, approvals := c.reset(); runs != 1 || approvals != 1 {
				t.Errorf("a decision read the run %d times and the approvals %d times, want once each", runs, approvals)
			}
			waitStatus(t, c.Store, id, store.RunDone)
			c.reset()
			resp, err := http.DefaultClient.Do(authGet(t, f.ts.URL+"/v1/events?run="+id, aliceToken))
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body) // the stream of an ended run ends
			resp.Body.Close()
			if runs, _ := c.reset(); resp.StatusCode != http.StatusOK || runs != 1 {
				t.Errorf("the event stream of an ended run: %d, read the run %d times, want once", resp.StatusCode, runs)
			}
		})
	}
}

func authGet(t *testing.T, url, token string) *http.Request {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	return req
}

// While a run's next model turn runs, its last turn's finished calls are
// in its view and in the audit: the state after their results is stored
// with the run's next write, and the readers list them from the turn in
// progress, as the agent's result does.
func TestRunningRunShowsItsLastTurnsCalls(t *testing.T) {
	inTurn2, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	script := testkit.Script([]model.FuncCall{testkit.Call("c1", "lookup", nil)})
	m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
		if testkit.Turn(req) == 1 {
			close(inTurn2)
			<-release
		}
		return script(ctx, req)
	})
	f := newFixture(t, nil, m, nil)
	id := f.startRun()
	<-inTurn2
	var v serverapi.RunView
	if code := f.do("GET", "/v1/runs/"+id, aliceToken, nil, &v); code != http.StatusOK || v.Status != store.RunRunning {
		t.Fatalf("GET: %d %s", code, v.Status)
	}
	if !strings.Contains(string(v.ToolCalls), `"lookup"`) {
		t.Errorf("the running run's calls %s: want the lookup its last turn made", v.ToolCalls)
	}
	var page serverapi.AuditPage
	if code := f.do("GET", "/v1/audit?tool=lookup", aliceToken, nil, &page); code != http.StatusOK || len(page.Entries) != 1 {
		t.Errorf("the audit of lookup: %d, %d entries; want the running run's call", code, len(page.Entries))
	}
}
