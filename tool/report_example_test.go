package tool_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/tollgate-dev/tollgate/tool"
)

// printer is a tool.Reporter that prints what it is told; the agent's
// reporter turns the same reports into progress and notice events.
type printer struct{}

func (printer) Progress(p tool.Progress) {
	fmt.Printf("progress %g/%g %s\n", p.Progress, p.Total, p.Message)
}

func (printer) Notice(n tool.Notice) {
	fmt.Printf("%s %s: %d bytes\n", n.Kind, n.Source, len(n.Message))
}

// A tool reports how far it has come through its call's invocation
// (tool.InvocationFrom(ctx) in a tool); without a reporter the reports go
// nowhere. Messages are cut to 1,024 bytes.
func ExampleInvocation_Progress() {
	inv := tool.Invocation{CallID: "call_1", Reporter: printer{}}
	inv.Progress(tool.Progress{Progress: 1, Total: 2, Message: "copying"})
	inv.Notice(tool.Notice{Kind: "restart", Source: "mcp:fs", Message: strings.Repeat("x", 5000)})
	tool.InvocationFrom(context.Background()).Progress(tool.Progress{Progress: 2}) // nobody listens
	// Output:
	// progress 1/2 copying
	// restart mcp:fs: 1027 bytes
}
