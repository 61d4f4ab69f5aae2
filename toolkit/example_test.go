package toolkit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/tollgate-dev/tollgate/tool"
	"github.com/tollgate-dev/tollgate/toolkit"
)

// A toolkit with the builtins rooted at a workspace directory, minus bash.
// Execute resolves the tool, validates the arguments and runs it; every
// failure is a result the model sees.
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "tollgate-toolkit")
	defer os.RemoveAll(dir)

	tk, err := toolkit.New(&toolkit.Options{Workdir: dir, Disable: []string{"bash"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	var names []string
	for _, t := range tk.Tools() {
		names = append(names, t.Spec().Name)
	}
	fmt.Println(names)

	ctx := context.Background()
	for _, c := range []struct{ name, args string }{
		{"write", `{"path":"notes/todo.txt","content":"buy milk\n"}`},
		{"edit", `{"path":"notes/todo.txt","oldString":"milk","newString":"bread"}`},
		{"read", `{"path":"notes/todo.txt"}`},
		{"read", `{"path":"../outside.txt"}`},
		{"read", `{"offset":1}`},
		{"bash", `{"command":"ls"}`},
	} {
		res, err := tk.Execute(ctx, c.name, json.RawMessage(c.args))
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s error=%v: %q\n", c.name, res.IsError, res.Output)
	}
	// Output:
	// [read write edit grep glob webfetch question apply_patch todowrite]
	// write error=false: "created notes/todo.txt (9 bytes)"
	// edit error=false: "edited notes/todo.txt: replaced 1 occurrence"
	// read error=false: "     1\tbuy bread\n"
	// read error=true: "refused: path \"../outside.txt\" is outside the workspace"
	// read error=true: "invalid arguments for read: validating root: required: missing properties: [\"path\"]"
	// bash error=true: "unknown tool \"bash\"; available tools: read, write, edit, grep, glob, webfetch, question, apply_patch, todowrite"
}

// The same tool in the OpenAI, Anthropic and Gemini tool formats; Gemini's
// schema loses the keywords it does not accept (here additionalProperties).
func ExampleProviderTools() {
	type weatherIn struct {
		City string `json:"city" jsonschema:"the city name"`
	}
	weather := tool.Must("weather", "current weather", func(_ context.Context, in weatherIn) (string, error) {
		return "sunny in " + in.City, nil
	}, nil)
	tk, err := toolkit.New(&toolkit.Options{NoBuiltins: true, Extra: []tool.Tool{weather}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range []string{"openai", "anthropic", "gemini"} {
		b, err := toolkit.ProviderTools(p, tk.Defs())
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(string(b))
	}
	// Output:
	// [{"type":"function","function":{"name":"weather","description":"current weather","parameters":{"type":"object","properties":{"city":{"type":"string","description":"the city name"}},"required":["city"],"additionalProperties":false}}}]
	// [{"name":"weather","description":"current weather","input_schema":{"type":"object","properties":{"city":{"type":"string","description":"the city name"}},"required":["city"],"additionalProperties":false}}]
	// [{"functionDeclarations":[{"name":"weather","description":"current weather","parameters":{"properties":{"city":{"description":"the city name","type":"string"}},"required":["city"],"type":"object"}}]}]
}
