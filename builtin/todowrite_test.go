package builtin_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tollgate-dev/tollgate/internal/toolcall"
	"github.com/tollgate-dev/tollgate/tool"
)

func TestTodoWrite(t *testing.T) {
	_, tools := workspace(t, nil, nil)
	state := tool.NewRunState(nil)
	ctx := toolcall.WithState(context.Background(), state)
	todo := func(id, content, status string) map[string]any {
		return map[string]any{"id": id, "content": content, "status": status}
	}
	steps := []struct {
		name  string
		todos []map[string]any
		want  outcome
	}{
		{"the plan", []map[string]any{todo("1", "read the code", "in_progress"), todo("2", "fix the bug", "pending")},
			outcome{"2 todos: 0 completed, 1 in progress, 1 pending\n[~] 1: read the code\n[ ] 2: fix the bug\n", false}},
		{"progress", []map[string]any{todo("1", "read the code", "completed"), todo("2", "fix the bug", "in_progress"), todo("3", "test", "pending")},
			outcome{"3 todos: 1 completed, 1 in progress, 1 pending\n[x] 1: read the code\n[~] 2: fix the bug\n[ ] 3: test\nchanged: 1 in_progress -> completed, 2 pending -> in_progress, 3 added\n", false}},
		{"an item dropped", []map[string]any{todo("2", "fix the bug", "completed")},
			outcome{"1 todo: 1 completed, 0 in progress, 0 pending\n[x] 2: fix the bug\nchanged: 2 in_progress -> completed, 1 removed, 3 removed\n", false}},
		{"bad status leaves the list", []map[string]any{todo("2", "fix the bug", "done")},
			outcome{"invalid arguments: validating root: validating /properties/todos: validating /properties/todos/items: validating /properties/todos/items/properties/status: enum: done does not equal any of: [pending in_progress completed]", true}},
		{"duplicate id", []map[string]any{todo("a", "x", "pending"), todo("a", "y", "pending")},
			outcome{`todos[1].id "a" is used twice`, true}},
	}
	for _, s := range steps {
		res := callCtx(t, ctx, tools, "todowrite", map[string]any{"todos": s.todos})
		if diff := cmp.Diff(s.want, got(res)); diff != "" {
			t.Fatalf("%s (-want +got):\n%s", s.name, diff)
		}
	}
	want := []map[string]any{{"id": "2", "content": "fix the bug", "status": "completed"}}
	var kept []map[string]any
	if err := json.Unmarshal(state.Values()["todowrite"], &kept); err != nil {
		t.Fatalf("the run's plan: %v", err)
	}
	if diff := cmp.Diff(want, kept); diff != "" {
		t.Errorf("the run's plan (-want +got):\n%s", diff)
	}
	// Outside a run it still answers, and keeps nothing.
	res := call(t, tools, "todowrite", map[string]any{"todos": []map[string]any{todo("1", "x", "pending")}})
	if res.IsError || res.Metadata["todos"] == nil {
		t.Errorf("without a run: %+v", res)
	}
}
