package runbuild_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tollgate-dev/tollgate/internal/runbuild"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/tool"
)

// A Go program hosts runs with the builder the command line uses: the
// configuration's deny globs and policy file are applied, the host's own
// model and tools are given as options.
func ExampleBuilder() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "tollgate-example")
	defer os.RemoveAll(dir)
	ws := filepath.Join(dir, "ws")
	_ = os.Mkdir(ws, 0o755)
	_ = os.WriteFile(filepath.Join(dir, "policy.yaml"), []byte(`rules:
  - id: review-notes
    tool: save_note
    decision: ask
    reason: notes are reviewed
`), 0o644)

	type note struct {
		Name string `json:"name"`
	}
	saveNote := tool.Must("save_note", "Save a note.", func(ctx context.Context, in note) (string, error) {
		return "saved " + in.Name, nil
	}, nil)
	deleteNote := tool.Must("delete_note", "Delete a note.", func(ctx context.Context, in note) (string, error) {
		return "deleted " + in.Name, nil
	}, nil)
	m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
		if last := req.Messages[len(req.Messages)-1]; last.Role == model.RoleTool {
			return model.Reply{Content: "finished"}, nil
		}
		return model.Reply{ToolCalls: []model.FuncCall{
			{ID: "c1", Name: "delete_note", Arguments: note{Name: "todo"}},
			{ID: "c2", Name: "save_note", Arguments: note{Name: "todo"}},
		}}, nil
	})
	b := runbuild.New(&runbuild.Options{
		OpenModel: func(ctx context.Context, ref runs.ModelRef) (model.Model, string, error) { return m, ref.Name, nil },
		Tools:     []tool.Tool{saveNote, deleteNote},
		StateDir:  filepath.Join(dir, "state"),
	})
	cfg, err := runs.RunConfig{AgentConfig: runs.AgentConfig{
		Model: runs.ModelRef{Provider: "func", Name: "notes"}, Workdir: "ws",
		Deny: []string{"delete_*"}, PolicyFile: "policy.yaml",
		Sandbox: &runs.SandboxConfig{Bash: "off"},
	}}.Resolve(dir)
	if err != nil {
		panic(err)
	}
	h, err := runs.New(memory.New(nil), b, nil)
	if err != nil {
		panic(err)
	}
	res, err := h.Start(ctx, runs.StartRequest{Config: cfg, Prompt: "tidy the notes"})
	if err != nil {
		panic(err)
	}
	for _, tc := range res.ToolCalls {
		fmt.Println(tc.Name, tc.Decision.Outcome, "by", tc.Decision.By)
	}
	fmt.Println(res.Status, "-", res.Pending[0].Prompt)
	// Output:
	// delete_note denied by hook:deny
	// pending - Allow save_note {"name":"todo"}? (rule:review-notes: notes are reviewed)
}
