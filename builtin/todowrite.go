package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tollgate-dev/tollgate/tool"
)

// Limits of todowrite's list.
const (
	maxTodos       = 100
	maxTodoContent = 1000 // bytes
)

// The statuses of a todo.
const (
	todoPending    = "pending"
	todoInProgress = "in_progress"
	todoCompleted  = "completed"
)

// todo is one item of the run's plan, as todowrite keeps it.
type todo struct {
	ID      string `json:"id" jsonschema:"a short, stable identifier of the item"`
	Content string `json:"content" jsonschema:"what is to be done, in a few words"`
	Status  string `json:"status" jsonschema:"pending, in_progress or completed"`
}

// todoWriteInput is the input of the todowrite tool.
type todoWriteInput struct {
	Todos []todo `json:"todos" jsonschema:"the whole plan: every item, in order, with its current status"`
}

func (b *builtins) todoWriteTool() (tool.Tool, error) {
	s, err := jsonschema.For[todoWriteInput](nil)
	if err != nil {
		return nil, err
	}
	maxN, one, maxC := maxTodos, 1, maxTodoContent
	s.Properties["todos"].MaxItems = &maxN
	it := s.Properties["todos"].Items
	it.Properties["status"].Enum = []any{todoPending, todoInProgress, todoCompleted}
	it.Properties["id"].MinLength = &one
	it.Properties["content"].MinLength, it.Properties["content"].MaxLength = &one, &maxC
	desc := "Keep the plan of the current task as a todo list: give the whole list every time, each item with " +
		"an id, its content and its status (pending, in_progress, completed). Use it for work of several steps: " +
		"write the plan first, mark an item in_progress when you start it (one at a time) and completed as soon " +
		"as it is done. The list belongs to this run and touches no file."
	return tool.New(toolTodoWrite, desc, b.todoWrite, &tool.FuncOptions{
		Hints:       &tool.Hints{ReadOnly: true, Idempotent: true},
		InputSchema: s,
		Source:      source,
	})
}

func (b *builtins) todoWrite(ctx context.Context, in todoWriteInput) (tool.Result, error) {
	if len(in.Todos) > maxTodos {
		return tool.Errorf("the list has %d items; at most %d", len(in.Todos), maxTodos), nil
	}
	seen := map[string]bool{}
	for i, t := range in.Todos {
		switch {
		case strings.TrimSpace(t.ID) == "":
			return tool.Errorf("todos[%d].id is empty", i), nil
		case seen[t.ID]:
			return tool.Errorf("todos[%d].id %q is used twice", i, t.ID), nil
		case strings.TrimSpace(t.Content) == "":
			return tool.Errorf("todos[%d].content is empty", i), nil
		case t.Status != todoPending && t.Status != todoInProgress && t.Status != todoCompleted:
			return tool.Errorf("todos[%d].status %q: want pending, in_progress or completed", i, t.Status), nil
		}
		seen[t.ID] = true
	}
	todos := in.Todos
	if todos == nil {
		todos = []todo{}
	}
	var before []todo
	if s := tool.InvocationFrom(ctx).State; s != nil {
		if v, ok := s.Get(toolTodoWrite); ok {
			_ = json.Unmarshal(v, &before)
		}
		data, err := json.Marshal(todos)
		if err != nil {
			return tool.Errorf("todowrite: %v", err), nil
		}
		s.Set(toolTodoWrite, data)
	}
	return tool.Result{Output: renderTodos(before, todos), Metadata: map[string]any{"todos": todos}}, nil
}

// renderTodos shows the list, with what changed since before, for the model.
func renderTodos(before, todos []todo) string {
	var b strings.Builder
	counts := map[string]int{}
	for _, t := range todos {
		counts[t.Status]++
	}
	fmt.Fprintf(&b, "%s: %d completed, %d in progress, %d pending\n", plural(len(todos), "todo", "todos"),
		counts[todoCompleted], counts[todoInProgress], counts[todoPending])
	mark := map[string]string{todoPending: "[ ]", todoInProgress: "[~]", todoCompleted: "[x]"}
	for _, t := range todos {
		fmt.Fprintf(&b, "%s %s: %s\n", mark[t.Status], t.ID, t.Content)
	}
	old := map[string]todo{}
	for _, t := range before {
		old[t.ID] = t
	}
	var changes []string
	for _, t := range todos {
		o, ok := old[t.ID]
		switch {
		case !ok && len(before) > 0:
			changes = append(changes, t.ID+" added")
		case ok && o.Status != t.Status:
			changes = append(changes, fmt.Sprintf("%s %s -> %s", t.ID, o.Status, t.Status))
		}
		delete(old, t.ID)
	}
	for _, t := range before {
		if _, gone := old[t.ID]; gone {
			changes = append(changes, t.ID+" removed")
		}
	}
	if len(changes) > 0 {
		fmt.Fprintf(&b, "changed: %s\n", strings.Join(changes, ", "))
	}
	return b.String()
}
