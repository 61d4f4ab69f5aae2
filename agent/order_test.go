package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// With MaxParallel 1 the calls of a turn run one after another in the model's
// order (write, then read), every time.
func TestMaxParallelOneKeepsCallOrder(t *testing.T) {
	for run := 0; run < 50; run++ {
		var mu sync.Mutex
		var ran []string
		rec := tool.Must("step", "", func(ctx context.Context, in struct {
			N int `json:"n"`
		}) (string, error) {
			mu.Lock()
			ran = append(ran, fmt.Sprint(in.N))
			mu.Unlock()
			return "ok", nil
		}, nil)
		var calls []model.FuncCall
		for i := 0; i < 6; i++ {
			calls = append(calls, testkit.Call(fmt.Sprintf("c%d", i), "step", json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))))
		}
		a, _ := agent.New(&agent.Options{Model: testkit.Script(calls), Tools: agent.ToolList{rec}, MaxParallel: 1})
		if _, err := a.Run(context.Background(), "x"); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]string{"0", "1", "2", "3", "4", "5"}, ran); d != "" {
			t.Fatalf("run %d: order (-want +got):\n%s", run, d)
		}
	}
}
