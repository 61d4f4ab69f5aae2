package claudecode_test

import (
	"context"
	"fmt"
	"os"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/hooks/claudecode"
	"github.com/tollgate-dev/tollgate/model/scripted"
	"github.com/tollgate-dev/tollgate/toolkit"
)

// A Claude Code PreToolUse guard, unchanged, denies an rm -rf that a model
// asks for; the model sees the guard's stderr.
func Example() {
	ws, _ := os.MkdirTemp("", "ws")
	defer os.RemoveAll(ws)
	s := claudecode.Parse([]byte(`{
	  "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
	    "command": "grep -q 'rm -rf' && { echo 'rm -rf is not allowed' >&2; exit 2; }; exit 0"}]}]}
	}`), "settings.json")
	cc, err := claudecode.New(s, &claudecode.Options{ProjectDir: ws})
	if err != nil {
		panic(err)
	}
	tk, _ := toolkit.New(&toolkit.Options{Workdir: ws, Unconfined: true})
	m := scripted.New("demo", scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "bash", Args: map[string]any{"command": "rm -rf ."}}}},
		{Text: "ok"},
	}})
	a, _ := agent.New(&agent.Options{Model: m, Tools: tk, Hooks: cc.Register(&hooks.Hooks{})})
	res, err := a.Run(context.Background(), "clean up")
	if err != nil {
		panic(err)
	}
	d := res.ToolCalls[0].Decision
	fmt.Println(d.Outcome, "by", d.By.String()+":", d.Reason)
	// Output: denied by hook:claude:PreToolUse: rm -rf is not allowed
}
