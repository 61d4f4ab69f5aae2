package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// metaTool answers each call with fresh metadata of every shape a tool
// returns: numbers, a list, a nested map, bytes and a type of its own.
type metaTool struct{}

type metaOwn struct {
	Items []int `json:"items"`
}

var metaSpec = tool.Spec{Name: "meta", InputSchema: mustSchema(`{"type":"object","properties":{"n":{"type":"integer"}}}`)}

func (metaTool) Spec() tool.Spec { return metaSpec }
func (metaTool) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	var in struct{ N int }
	if err := json.Unmarshal(args, &in); err != nil {
		return tool.Result{}, err
	}
	return tool.Result{Output: fmt.Sprintf("ok %d", in.N), Metadata: map[string]any{
		"n": in.N, "list": []any{"a", map[string]any{"k": "v"}}, "nested": map[string]any{"k": []any{1.5}},
		"raw": json.RawMessage(`{"x":1}`), "names": []string{"p", "q"}, "own": metaOwn{Items: []int{in.N}},
	}}, nil
}

// metaCalls returns a turn of n calls of metaTool, two per batch.
func metaCalls(n int) [][]model.FuncCall {
	var turns [][]model.FuncCall
	for i := 0; i < n; i += 2 {
		turns = append(turns, []model.FuncCall{
			{ID: fmt.Sprintf("call_%d", i), Name: "meta", Arguments: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))},
			{ID: fmt.Sprintf("call_%d", i+1), Name: "meta", Arguments: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i+1))},
		})
	}
	return turns
}

// sevens sets every digit of b to 7: b stays valid JSON, and differs.
func sevens(b []byte) {
	for i, c := range b {
		if c >= '0' && c <= '9' {
			b[i] = '7'
		}
	}
}

// A checkpoint's state is its receiver's own: the receiver may keep it and
// change everything its methods reach, and neither what the run does next
// (more messages, records, batch calls) changes the kept state nor the
// receiver's changes reach the run.
func TestCheckpointStateIsOwnCopy(t *testing.T) {
	type kept struct {
		kind  string
		state *agent.State
		json  string
	}
	var cps []kept
	a, err := agent.New(&agent.Options{
		Model: testkit.Script(metaCalls(8)...), Tools: agent.ToolList{metaTool{}}, MaxParallel: 1,
		Checkpoint: func(ctx context.Context, cp agent.Checkpoint) error {
			st := cp.State
			// The receiver scribbles on all it can reach.
			for _, m := range st.Messages() {
				for _, tc := range m.ToolCalls {
					sevens(tc.Arguments)
				}
			}
			for _, r := range agent.StateToolCalls(st) {
				sevens(r.Args)
				sevens(r.RequestedArgs)
				r.Metadata["n"] = -1
				r.Metadata["list"].([]any)[1].(map[string]any)["k"] = "scribbled"
				r.Metadata["nested"].(map[string]any)["k"].([]any)[0] = "scribbled"
				sevens(r.Metadata["raw"].(json.RawMessage))
				r.Metadata["names"].([]string)[0] = "scribbled"
				if len(r.Decision.Votes) > 0 {
					r.Decision.Votes[0].Reason = "scribbled"
				}
			}
			b, err := json.Marshal(st)
			if err != nil {
				return err
			}
			cps = append(cps, kept{cp.Kind, st, string(b)})
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(context.Background(), "go")
	if err != nil || res.Status != agent.StatusDone {
		t.Fatalf("run: %v %v", res, err)
	}
	var calls int
	for _, cp := range cps {
		if cp.kind == "call" {
			calls++
		}
		b, err := json.Marshal(cp.state)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != cp.json {
			t.Fatalf("a kept %s checkpoint changed after it was taken:\nthen %s\nnow  %s", cp.kind, cp.json, b)
		}
	}
	if calls != 8 {
		t.Fatalf("%d call checkpoints, want 8", calls)
	}
	// What the receivers scribbled on never reached the run.
	if len(res.ToolCalls) != 8 {
		t.Fatalf("%d records", len(res.ToolCalls))
	}
	for i, r := range res.ToolCalls {
		want := fmt.Sprintf(`{"n":%d}`, i)
		list, _ := r.Metadata["list"].([]any)
		nested, _ := r.Metadata["nested"].(map[string]any)
		if string(r.Args) != want || string(r.RequestedArgs) != want || r.Metadata["n"] != i ||
			fmt.Sprint(list) != "[a map[k:v]]" || fmt.Sprint(nested) != "map[k:[1.5]]" ||
			string(r.Metadata["raw"].(json.RawMessage)) != `{"x":1}` || fmt.Sprint(r.Metadata["names"]) != "[p q]" {
			t.Errorf("record %d changed by a checkpoint's receiver: args %s %s, metadata %v", i, r.Args, r.RequestedArgs, r.Metadata)
		}
		if strings.Contains(r.Decision.Reason, "scribbled") || len(r.Decision.Votes) > 0 && r.Decision.Votes[0].Reason == "scribbled" {
			t.Errorf("record %d: decision changed by a checkpoint's receiver: %+v", i, r.Decision)
		}
	}
	for _, m := range res.Transcript {
		for _, tc := range m.ToolCalls {
			if strings.Contains(string(tc.Arguments), "7") && tc.ID != "call_7" {
				t.Errorf("transcript call %s has arguments %s", tc.ID, tc.Arguments)
			}
		}
	}
}

// Checkpoint receivers that read and encode their states on other
// goroutines while the run goes on, its calls in parallel, share no memory
// the runner writes (run with -race).
func TestCheckpointStatesReadConcurrently(t *testing.T) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var encoded []int
	turn := make([]model.FuncCall, 32)
	for i := range turn {
		turn[i] = model.FuncCall{ID: fmt.Sprintf("call_%d", i), Name: "meta", Arguments: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
	}
	a, err := agent.New(&agent.Options{
		Model: testkit.Script(turn, turn[:4]), Tools: agent.ToolList{metaTool{}}, MaxParallel: 8,
		Checkpoint: func(ctx context.Context, cp agent.Checkpoint) error {
			wg.Go(func() {
				st := cp.State
				n := len(agent.StateToolCalls(st)) + len(st.Messages()) + len(st.Waiting())
				for _, r := range agent.StateToolCalls(st) {
					sevens(r.Args)
					r.Metadata["n"] = -1
				}
				b, err := json.Marshal(st)
				var back agent.State
				if err == nil {
					err = json.Unmarshal(b, &back)
				}
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				encoded = append(encoded, n)
				mu.Unlock()
			})
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(context.Background(), "go")
	wg.Wait()
	if err != nil || res.Status != agent.StatusDone || len(res.ToolCalls) != 36 {
		t.Fatalf("run: %v, %v", res, err)
	}
	if len(encoded) < 36 {
		t.Fatalf("%d checkpoints read, want one per call at least", len(encoded))
	}
	for i, r := range res.ToolCalls {
		if r.Metadata["n"] == -1 || strings.Contains(string(r.Args), "77") {
			t.Errorf("record %d changed by a receiver: %s %v", i, r.Args, r.Metadata)
		}
	}
}
