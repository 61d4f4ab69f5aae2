package agent

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

type stubborn struct {
	release chan struct{}
	calls   atomic.Int32
}

func (s *stubborn) Spec() tool.Spec { return tool.Spec{Name: "stuck"} }
func (s *stubborn) Call(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
	s.calls.Add(1)
	<-s.release
	return tool.Text("late"), nil
}

// A tool that ignores its context is abandoned after its timeout and
// abandonAfter: the run goes on, the next runs' calls finish, and the
// abandoned tool's goroutine ends when the tool returns (the bubble ends
// with no goroutine left).
func TestAbandonedToolDoesNotStopTheRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &stubborn{release: make(chan struct{})}
		quick := &testkit.Counter{Name: "quick"}
		a, err := New(&Options{
			Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "stuck", nil)}),
			Tools: ToolList{st, quick}, ToolLimits: map[string]ToolLimits{"stuck": {Timeout: time.Second}},
		})
		if err != nil {
			t.Fatal(err)
		}
		res, err := a.Run(context.Background(), "x")
		if err != nil || !strings.Contains(res.Transcript[2].Content, "the call was abandoned") {
			t.Fatalf("first run: %v %+v", err, res)
		}
		a.opts.Model = testkit.Script([]model.FuncCall{testkit.Call("c1", "quick", nil), testkit.Call("c2", "quick", nil)})
		if res, err := a.Run(context.Background(), "x"); err != nil || res.Status != StatusDone || quick.Count() != 2 {
			t.Fatalf("second run: %v %+v, quick ran %d times", err, res, quick.Count())
		}
		close(st.release)
		synctest.Wait()
		if st.calls.Load() != 1 {
			t.Fatalf("the stuck tool ran %d times, want 1", st.calls.Load())
		}
	})
}
