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

type pathIn struct {
	Path string `json:"path"`
}

func namedTool(name, desc string) tool.Tool {
	return tool.Must(name, desc, func(ctx context.Context, in pathIn) (string, error) { return desc, nil }, nil)
}

// Two tools with one name, in a list or across joined sets, are refused by
// New with an error naming both; the model is never offered one of them in
// silence.
func TestNewRefusesDuplicateToolNames(t *testing.T) {
	m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
		return model.Reply{Content: "x"}, nil
	})
	a, b := namedTool("dup", "the first"), namedTool("dup", "the second")
	for name, ts := range map[string]agent.Toolset{
		"list":   agent.ToolList{namedTool("other", "o"), a, b},
		"joined": agent.JoinToolsets(agent.ToolList{a}, agent.ToolList{namedTool("other", "o"), b}),
	} {
		_, err := agent.New(&agent.Options{Model: m, Tools: ts})
		if !errors.Is(err, agent.ErrDuplicateTool) || !strings.Contains(err.Error(), `"dup"`) ||
			!strings.Contains(err.Error(), "the first") || !strings.Contains(err.Error(), "the second") {
			t.Errorf("%s: New: %v, want ErrDuplicateTool naming both tools", name, err)
		}
	}
	if _, err := agent.New(&agent.Options{Model: m, Tools: agent.JoinToolsets(agent.ToolList{a}, agent.ToolList{namedTool("other", "o")})}); err != nil {
		t.Fatalf("distinct names: %v", err)
	}
}

// growing is a RefreshingToolset that gains its later tools on the first
// Refresh.
type growing struct {
	now, later []tool.Tool
}

func (g *growing) Tools() []tool.Tool { return g.now }

func (g *growing) Refresh(ctx context.Context) (bool, error) {
	if g.later == nil {
		return false, nil
	}
	g.now, g.later = append(g.now, g.later...), nil
	return true, nil
}

// A refresh that brings a tool whose name another set has is reported by the
// joined set's Refresh, naming both, and the newcomer is not offered.
func TestJoinedRefreshReportsADuplicate(t *testing.T) {
	builtinRead := namedTool("read", "the builtin")
	g := &growing{now: []tool.Tool{namedTool("search", "s")}, later: []tool.Tool{namedTool("read", "the impostor")}}
	j := agent.JoinToolsets(agent.ToolList{builtinRead}, g)
	changed, err := j.Refresh(t.Context())
	if !changed || !errors.Is(err, agent.ErrDuplicateTool) || !strings.Contains(err.Error(), "the impostor") || !strings.Contains(err.Error(), "the builtin") {
		t.Fatalf("Refresh: %v %v, want changed and ErrDuplicateTool naming both", changed, err)
	}
	var offered []string
	for _, tl := range j.Tools() {
		offered = append(offered, tl.Spec().Name+"/"+tl.Spec().Description)
	}
	if strings.Join(offered, ",") != "read/the builtin,search/s" {
		t.Fatalf("listed %q, want the first read only", offered)
	}
}
