package agent_test

// The four programs of seed 002 ("Hooks — lifecycle middleware"), as runnable
// examples with the seed's assertions. The model is an in-process stand-in
// (model.Func): the loop is exactly the one every provider runs.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
	"github.com/tollgate-dev/tollgate/toolkit"
)

// once answers with the given tool call, then, once a tool result is in the
// conversation, with text.
func once(text string, c model.FuncCall) model.Func {
	return func(ctx context.Context, req *model.Request) (model.Reply, error) {
		for _, m := range req.Messages {
			if m.Role == model.RoleTool {
				return model.Reply{Content: text}, nil
			}
		}
		return model.Reply{ToolCalls: []model.FuncCall{c}}, nil
	}
}

// Seed 002, example 1: deny a tool call with BeforeTool. Returning a result
// short-circuits the tool: the real function never runs.
func Example_denyWithBeforeTool() {
	var ran atomic.Bool
	deleteAll := tool.Must("delete_all", "delete everything", func(ctx context.Context, _ struct{}) (string, error) {
		ran.Store(true) // must never happen: the hook denies it first
		return "deleted", nil
	}, nil)
	tk, _ := toolkit.New(&toolkit.Options{NoBuiltins: true, Extra: []tool.Tool{deleteAll}})

	h := (&hooks.Hooks{}).BeforeTool("policy", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		if ev.Name == "delete_all" {
			r := tool.Error("denied by policy")
			return &hooks.ToolOverride{Result: &r}, nil
		}
		return nil, nil
	})
	a, _ := agent.New(&agent.Options{Model: once("done", model.FuncCall{ID: "c1", Name: "delete_all"}), ModelName: "m", Tools: tk, Hooks: h})
	res, err := a.Run(context.Background(), "delete everything")
	if err != nil {
		panic(err)
	}
	if ran.Load() {
		panic("before_tool should have short-circuited the real tool")
	}
	fmt.Println(res.ToolCalls[0].Output, res.ToolCalls[0].IsError)
	// Output: denied by policy true
}

// Seed 002, example 2: audit with AfterLLM, redact with AfterTool.
func Example_auditAndRedact() {
	lookup := tool.Must("lookup_config", "lookup a config value", func(ctx context.Context, _ struct{}) (string, error) {
		return "db_password=hunter2", nil // a tool that over-shares
	}, nil)
	tk, _ := toolkit.New(&toolkit.Options{NoBuiltins: true, Extra: []tool.Tool{lookup}})

	var llmCalls atomic.Int64
	h := (&hooks.Hooks{}).
		AfterLLM("audit", func(ctx context.Context, ev *hooks.AfterLLMEvent) error {
			llmCalls.Add(1) // counts, changes nothing
			return nil
		}).
		AfterTool("redact", func(ctx context.Context, ev *hooks.AfterToolEvent) (*hooks.ToolOverride, error) {
			if !strings.Contains(ev.Result.Output, "password=") {
				return nil, nil
			}
			redacted := ev.Result
			redacted.Output = "db_password=***REDACTED***"
			return hooks.Replace(redacted), nil
		})
	a, _ := agent.New(&agent.Options{Model: once("done", model.FuncCall{ID: "c1", Name: "lookup_config"}), ModelName: "m", Tools: tk, Hooks: h})
	res, err := a.Run(context.Background(), "what's the db password?")
	if err != nil {
		panic(err)
	}
	fmt.Println(llmCalls.Load(), res.ToolCalls[0].Output)
	// Output: 2 db_password=***REDACTED***
}

// Seed 002, example 3: all four hooks in one run; BeforeTool rewrites the
// call's arguments. Counts per hook: [before_llm, after_llm, before_tool, after_tool].
func Example_allFourHooks() {
	type echoIn struct {
		V string `json:"v"`
	}
	echo := tool.Must("echo", "echo a value", func(ctx context.Context, in echoIn) (string, error) { return in.V, nil }, nil)
	tk, _ := toolkit.New(&toolkit.Options{NoBuiltins: true, Extra: []tool.Tool{echo}})

	var counts [4]atomic.Int64
	h := (&hooks.Hooks{}).
		BeforeLLM("", func(ctx context.Context, ev *hooks.BeforeLLMEvent) (*hooks.LLMOverride, error) {
			counts[0].Add(1)
			return nil, nil // observe only: an LLMOverride would replace messages, tools or model
		}).
		AfterLLM("", func(ctx context.Context, ev *hooks.AfterLLMEvent) error {
			counts[1].Add(1)
			return nil
		}).
		BeforeTool("", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
			counts[2].Add(1)
			return hooks.Rewrite(json.RawMessage(`{"v":"rewritten"}`)), nil
		}).
		AfterTool("", func(ctx context.Context, ev *hooks.AfterToolEvent) (*hooks.ToolOverride, error) {
			counts[3].Add(1)
			return nil, nil // observe only
		})
	a, _ := agent.New(&agent.Options{
		Model:        once("ok", model.FuncCall{ID: "c1", Name: "echo", Arguments: map[string]string{"v": "original"}}),
		ModelName:    "m",
		SystemPrompt: "SYS",
		Tools:        tk,
		Hooks:        h,
	})
	res, err := a.Run(context.Background(), "echo original")
	if err != nil {
		panic(err)
	}
	fmt.Println([]int64{counts[0].Load(), counts[1].Load(), counts[2].Load(), counts[3].Load()}, res.ToolCalls[0].Output)
	// Output: [2 2 1 1] rewritten
}

// Seed 002, "Tool hints and permission gates": a read-only gate in BeforeTool.
// The builtins are on, including the destructive write; the gate denies it and
// the file is not created.
func Example_permissionGate() {
	dir, _ := os.MkdirTemp("", "tollgate-gate")
	defer os.RemoveAll(dir)
	target := filepath.Join(dir, "x.txt")

	tk, err := toolkit.New(&toolkit.Options{Workdir: dir, Unconfined: true}) // builtins on; bash unconfined
	if err != nil {
		panic(err)
	}
	var seen atomic.Pointer[tool.Hints]
	h := (&hooks.Hooks{}).BeforeTool("read-only-mode", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		seen.Store(ev.Hints)
		if ev.Hints != nil && ev.Hints.ReadOnly {
			return nil, nil // read-only: let it run
		}
		return hooks.Deny("denied: read-only mode"), nil
	})
	a, _ := agent.New(&agent.Options{
		Model:     once("ok", model.FuncCall{ID: "c1", Name: "write", Arguments: map[string]string{"path": target, "content": "hi"}}),
		ModelName: "m", Tools: tk, Hooks: h,
	})
	if _, err := a.Run(context.Background(), "write a file"); err != nil {
		panic(err)
	}
	hints := seen.Load()
	if hints == nil || !hints.Destructive {
		panic("write should be hinted destructive")
	}
	if _, err := os.Stat(target); err == nil {
		panic("the gate should have stopped the write")
	}
	fmt.Println("write denied, hints =", hints)
	// Output: write denied, hints = destructive
}

// Seed 002, "Tool hints and permission gates": "ask = a pending(...) result,
// which wait_for / wait_for_ctx resolves". The gate asks before every call
// that is not read-only; Options.WaitFor answers (here it approves the write
// and declines the delete). After an approval the gate's ask is satisfied for
// that call and those arguments, so the call runs once; every other hook and
// the policy are still heard. A declined call never runs and the model sees
// the reason.
func Example_permissionGateAsk() {
	var written, deleted atomic.Int64
	write := tool.Must("write_note", "write a note", func(ctx context.Context, _ struct{}) (string, error) {
		written.Add(1)
		return "written", nil
	}, nil)
	del := tool.Must("delete_note", "delete a note", func(ctx context.Context, _ struct{}) (string, error) {
		deleted.Add(1)
		return "deleted", nil
	}, nil)
	h := (&hooks.Hooks{}).BeforeTool("gate", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		if ev.Hints == nil || !ev.Hints.ReadOnly { // no hints = unknown = mutating
			return hooks.Ask(tool.Request{Kind: tool.KindApproval, Prompt: "allow " + ev.Name + "?"}), nil
		}
		return nil, nil
	})
	waitFor := func(ctx context.Context, req tool.Request) (tool.Answer, error) {
		fmt.Println("asked:", req.Prompt)
		if req.Prompt == "allow delete_note?" {
			return tool.Answer{ID: req.ID, OK: false, Reason: "keep the notes", By: "alice"}, nil
		}
		return tool.Answer{ID: req.ID, OK: true, By: "alice"}, nil
	}
	a, _ := agent.New(&agent.Options{
		Model: model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
			if req.Messages[len(req.Messages)-1].Role == model.RoleTool {
				return model.Reply{Content: "done"}, nil
			}
			return model.Reply{ToolCalls: []model.FuncCall{{ID: "c1", Name: "write_note"}, {ID: "c2", Name: "delete_note"}}}, nil
		}),
		ModelName: "m", Tools: agent.ToolList{write, del}, Hooks: h, WaitFor: waitFor, MaxParallel: 1,
	})
	res, err := a.Run(context.Background(), "tidy the notes")
	if err != nil {
		panic(err)
	}
	for _, rec := range res.ToolCalls {
		fmt.Printf("%s: %s by %s: %s\n", rec.Name, rec.Decision.Outcome, rec.Decision.By, rec.Output)
	}
	fmt.Println("ran:", written.Load(), deleted.Load())
	// Output:
	// asked: allow write_note?
	// asked: allow delete_note?
	// write_note: approved by person:alice: written
	// delete_note: declined by person:alice: declined by alice: keep the notes
	// ran: 1 0
}

// A run halts on a pending approval; its state is serialized (to a file or a
// store), and a fresh agent, here or in another process, resumes it with the
// person's answer. The approved call runs once. Nothing in the agent stops
// another process resuming the same stored state again: across processes
// the host guards that (runs.Host: a lease per run, single-use approvals).
func ExampleAgent_Resume() {
	var runs atomic.Int64
	transfer := tool.Must("transfer_funds", "move money", func(ctx context.Context, _ struct{}) (string, error) {
		runs.Add(1)
		return "sent", nil
	}, nil)
	// The gate asks every time; the approval resolves its ask for this call.
	ask := (&hooks.Hooks{}).BeforeTool("approve-transfers", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		return hooks.Ask(tool.Request{Kind: tool.KindApproval, Prompt: "Send the money?"}), nil
	})
	newAgent := func() *agent.Agent {
		a, _ := agent.New(&agent.Options{Model: once("paid", model.FuncCall{ID: "c1", Name: "transfer_funds"}), Tools: agent.ToolList{transfer}, Hooks: ask})
		return a
	}

	res, _ := newAgent().Run(context.Background(), "pay the invoice")
	fmt.Println(res.Status, res.Pending[0].Prompt, runs.Load())

	saved, _ := json.Marshal(res.State) // keep it anywhere
	var state agent.State
	_ = json.Unmarshal(saved, &state)
	res, _ = newAgent().Resume(context.Background(), &state, tool.Answer{ID: res.Pending[0].ID, OK: true, By: "alice"})
	fmt.Println(res.Status, res.Text, runs.Load(), res.ToolCalls[0].Decision.By)
	// Output:
	// pending Send the money? 0
	// done paid 1 person:alice
}
