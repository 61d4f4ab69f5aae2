package agent_test

import (
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/model"
)

// The scripted model (testkit.Script) and the counting tool (testkit.Counter)
// these tests share with other packages' tests live in internal/testkit.

func newAgent(t *testing.T, opts agent.Options) *agent.Agent {
	t.Helper()
	a, err := agent.New(&opts)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func toolMsgs(res *agent.Result) []model.Message {
	var out []model.Message
	for _, m := range res.Transcript {
		if m.Role == model.RoleTool {
			out = append(out, m)
		}
	}
	return out
}
