// Command library is the program of README.md's "The library": an agent
// whose model asks to read and to overwrite a file, and a hook that lets it
// only read. The model is a stand-in that needs no key and no network.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/toolkit"
)

func main() {
	ws, err := os.MkdirTemp("", "workspace")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(ws)
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("TODO: ship it\n"), 0o644); err != nil {
		log.Fatal(err)
	}

	// The builtin tools on the workspace but bash, which needs the sandbox (docs/library.md).
	tk, err := toolkit.New(&toolkit.Options{Workdir: ws, Disable: []string{"bash"}})
	if err != nil {
		log.Fatal(err)
	}

	// A hook before every tool call: only calls that say they are read-only run.
	h := (&hooks.Hooks{}).BeforeTool("read-only", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		if ev.Hints == nil || !ev.Hints.ReadOnly { // no hints: unknown, so treated as mutating
			return hooks.Deny("this agent may only read"), nil
		}
		return nil, nil
	})

	// The stand-in model asks for two calls, then answers. A real one is
	// openai.New(&openai.Options{BaseURL: ..., APIKey: ...}) or anthropic.New(...).
	m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
		if len(req.Messages) > 1 {
			return model.Reply{Content: "The notes say: ship it."}, nil
		}
		return model.Reply{ToolCalls: []model.FuncCall{
			{ID: "c1", Name: "read", Arguments: map[string]string{"path": "notes.txt"}},
			{ID: "c2", Name: "write", Arguments: map[string]string{"path": "notes.txt", "content": ""}},
		}}, nil
	})

	a, err := agent.New(&agent.Options{Model: m, ModelName: "stand-in", Tools: tk, Hooks: h})
	if err != nil {
		log.Fatal(err)
	}
	res, err := a.Run(context.Background(), "what do my notes say?")
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range res.ToolCalls {
		fmt.Printf("%s: %s by %s, ran: %t\n", c.Name, c.Decision.Outcome, c.Decision.By, c.Ran)
	}
	fmt.Println(res.Status+":", res.Text)
}
