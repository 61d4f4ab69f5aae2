package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

type nilToolset struct{}

func (*nilToolset) Tools() []tool.Tool { return nil }

func TestNewRejectsNilToolsetPointer(t *testing.T) {
	m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
		return model.Reply{Content: "hi"}, nil
	})
	var ts *nilToolset
	if _, err := agent.New(&agent.Options{Model: m, Tools: ts}); err == nil || !strings.Contains(err.Error(), "nil *agent_test.nilToolset") {
		t.Errorf("err = %v", err)
	}
	if _, err := agent.New(&agent.Options{}); !errors.Is(err, agent.ErrNoModel) {
		t.Errorf("err = %v, want ErrNoModel", err)
	}
	a, _ := agent.New(&agent.Options{Model: m})
	res, err := a.Run(context.Background(), "x")
	if err != nil || res.ToolCalls == nil || len(res.ToolCalls) != 0 {
		t.Errorf("a run without tool calls has ToolCalls %#v (want an empty, non-nil slice: [] in JSON), %v", res.ToolCalls, err)
	}
}
