package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/server"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// An operator could start runs without end, each holding goroutines, a
// model stream and the processes its tools start, until the server gave
// way for every tenant. The runs one tenant has running on a server are
// capped (Options.MaxRunsPerTenant): one more is 429 with Retry-After;
// another tenant still starts its own; a run that ends frees its place.
func TestRunsPerTenantAreCapped(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 8)
	wait := tool.Must("wait", "waits until released", func(ctx context.Context, _ struct{}) (string, error) {
		started <- struct{}{}
		select {
		case <-release:
			return "released", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}, nil)
	m := testkit.Script([]model.FuncCall{testkit.Call("c1", "wait", nil)})
	f := newFixture(t, nil, m, &server.Options{MaxRunsPerTenant: 1}, wait)
	start := func(token string) (int, serverapi.RunView, string) {
		var raw json.RawMessage
		code := f.do("POST", "/v1/runs", token, serverapi.StartRunRequest{Agent: "payer", Prompt: "wait"}, &raw)
		var v serverapi.RunView
		var p serverapi.Problem
		_ = json.Unmarshal(raw, &v)
		_ = json.Unmarshal(raw, &p)
		return code, v, p.Type
	}
	code, first, _ := start(aliceToken)
	if code != http.StatusCreated {
		t.Fatalf("first run: %d", code)
	}
	<-started
	if code, _, typ := start(aliceToken); code != http.StatusTooManyRequests || typ != serverapi.ProblemTooManyRuns {
		t.Fatalf("a second run of the tenant while the first runs: %d %s, want 429 %s", code, typ, serverapi.ProblemTooManyRuns)
	}
	if code, _, _ := start(bobToken); code != http.StatusCreated {
		t.Fatalf("another tenant's run: %d, want 201", code)
	}
	<-started
	release <- struct{}{}
	f.waitRun(first.ID, store.RunDone)
	close(release)
	if code, v, _ := start(aliceToken); code != http.StatusCreated {
		t.Fatalf("a run after the first ended: %d %+v", code, v)
	}
}
