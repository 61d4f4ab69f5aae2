package server_test

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
)

// An external gateway's session may have at most 32 asks pending on the
// page: one more is refused (429) until one is answered or withdrawn;
// another session is not affected.
func TestGateAsksPerSessionAreCapped(t *testing.T) {
	f := gateFixture(t)
	var runID string
	for i := range 32 {
		a := gateAskFor(fmt.Sprintf("req_%d", i), fmt.Sprintf("mcp_%d", i), fmt.Sprintf(`{"path":"%d.txt"}`, i))
		var v struct{ RunID string }
		if code := f.do("POST", "/v1/gate/asks", agentToken, a, &v); code != http.StatusCreated {
			t.Fatalf("ask %d: %d", i, code)
		}
		runID = v.RunID
	}
	over := gateAskFor("req_over", "mcp_over", `{"path":"over.txt"}`)
	if code := f.do("POST", "/v1/gate/asks", agentToken, over, nil); code != http.StatusTooManyRequests {
		t.Errorf("ask 33 of one session: %d, want 429", code)
	}
	other := gateAskFor("req_other", "mcp_other", `{"path":"other.txt"}`)
	other.Session.ID = "sess-2"
	if code := f.do("POST", "/v1/gate/asks", agentToken, other, nil); code != http.StatusCreated {
		t.Errorf("another session's ask: %d, want 201", code)
	}
	if code := f.do("DELETE", "/v1/gate/asks/"+runID+"/req_0", agentToken, nil, nil); code != http.StatusOK {
		t.Fatalf("withdrawing: %d", code)
	}
	if code := f.do("POST", "/v1/gate/asks", agentToken, over, nil); code != http.StatusCreated {
		t.Errorf("ask 33 once one was withdrawn: %d, want 201", code)
	}
}

// Asks of one session made at once are counted one after another: 60 at
// once leave exactly 32 pending, however they interleave.
func TestGateAsksCapHoldsAtOnce(t *testing.T) {
	f := gateFixture(t)
	var wg sync.WaitGroup
	var created atomic.Int32
	for i := range 60 {
		wg.Go(func() {
			a := gateAskFor(fmt.Sprintf("req_%d", i), fmt.Sprintf("mcp_%d", i), fmt.Sprintf(`{"path":"%d.txt"}`, i))
			if f.do("POST", "/v1/gate/asks", agentToken, a, nil) == http.StatusCreated {
				created.Add(1)
			}
		})
	}
	wg.Wait()
	if n := created.Load(); n != 32 {
		t.Errorf("%d asks created at once, want %d", n, 32)
	}
}
