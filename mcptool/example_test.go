package mcptool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/mcptool"
)

// An in-process MCP server with an annotated tool and an unannotated one,
// loaded once as trusted and once as untrusted.
func Example() {
	ctx := context.Background()
	newServer := func() mcp.Transport {
		srv := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1.0.0"}, nil)
		srv.AddTool(&mcp.Tool{
			Name:        "read.note",
			Description: "Read a note.",
			InputSchema: map[string]any{"type": "object", "properties": map[string]any{"id": map[string]any{"type": "string"}}},
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)},
		}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct{ ID string }
			_ = json.Unmarshal(req.Params.Arguments, &args)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "note " + args.ID + ": buy milk"}}}, nil
		})
		srv.AddTool(&mcp.Tool{Name: "delete_note", InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no such note"}}}, nil
			})
		client, server := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(ctx, server, nil); err != nil {
			log.Fatal(err)
		}
		return client
	}

	set, err := mcptool.Open(ctx, &mcptool.Config{Servers: map[string]*mcptool.ServerConfig{
		"notes":  {Transport: newServer(), Trusted: true},
		"shared": {Transport: newServer()},
	}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer set.Close()

	for _, st := range set.Servers() {
		fmt.Printf("server %s: %s, %d tools, trusted=%v\n", st.Name, st.State, st.Tools, st.Trusted)
	}
	for _, t := range set.Tools() {
		spec := t.Spec()
		claimed := mcptool.HintsFor(t.(*mcptool.Tool).Listed().Annotations, true)
		fmt.Printf("%s (%s): hints %s, claimed %s\n", spec.Name, spec.Source, spec.Hints, &claimed)
	}
	for _, name := range []string{"mcp__notes__read_note", "mcp__notes__delete_note"} {
		for _, t := range set.Tools() {
			if t.Spec().Name == name {
				res, err := t.Call(ctx, json.RawMessage(`{"id":"7"}`))
				fmt.Printf("%s -> %q error=%v (%v)\n", name, res.Output, res.IsError, err)
			}
		}
	}
	// Output:
	// server notes: ready, 2 tools, trusted=true
	// server shared: ready, 2 tools, trusted=false
	// mcp__notes__delete_note (mcp:notes): hints destructive,open-world, claimed destructive,open-world
	// mcp__notes__read_note (mcp:notes): hints read-only, claimed read-only
	// mcp__shared__delete_note (mcp:shared): hints destructive,open-world, claimed destructive,open-world
	// mcp__shared__read_note (mcp:shared): hints destructive,open-world, claimed read-only
	// mcp__notes__read_note -> "note 7: buy milk" error=false (<nil>)
	// mcp__notes__delete_note -> "no such note" error=true (<nil>)
}
