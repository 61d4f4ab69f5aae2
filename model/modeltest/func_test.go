package modeltest_test

import (
	"context"
	"sync"
	"testing"

	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/model/modeltest"
)

// TestFunc runs the suite on model.Func: the function plays the turns and
// records the requests it was given.
func TestFunc(t *testing.T) {
	modeltest.Run(t, func(t *testing.T, turns []modeltest.Turn) modeltest.Backend {
		var mu sync.Mutex
		var reqs []*model.Request
		next := 0
		f := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
			mu.Lock()
			reqs = append(reqs, req)
			if next >= len(turns) {
				mu.Unlock()
				t.Errorf("call %d, but the script has %d turns", next+1, len(turns))
				return model.Reply{}, context.DeadlineExceeded
			}
			turn := turns[next]
			next++
			mu.Unlock()
			if turn.Stall {
				<-ctx.Done()
				return model.Reply{}, ctx.Err()
			}
			rep := model.Reply{Content: turn.Text, Usage: turn.Usage}
			for _, c := range turn.ToolCalls {
				rep.ToolCalls = append(rep.ToolCalls, model.FuncCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
			}
			return rep, nil
		})
		return modeltest.Backend{
			Model:    f,
			NoLength: true,
			Requests: func() []*model.Request {
				mu.Lock()
				defer mu.Unlock()
				return append([]*model.Request(nil), reqs...)
			},
		}
	})
}

func TestSplitText(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want []string
	}{
		{"", 3, nil},
		{"abcdefg", 3, []string{"abc", "def", "g"}},
		{"é°é", 1, []string{"é", "°", "é"}},
		{"abcdefghi", 0, []string{"abcd", "efgh", "i"}},
	} {
		got := modeltest.SplitText(tc.in, tc.n)
		if len(got) != len(tc.want) {
			t.Errorf("SplitText(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("SplitText(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
			}
		}
	}
}
