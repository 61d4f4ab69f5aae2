package toolkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tollgate-dev/tollgate/builtin"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
	"github.com/tollgate-dev/tollgate/toolkit"
)

// fakeTool is a tool with a fixed spec whose Call runs fn.
type fakeTool struct {
	spec tool.Spec
	fn   func(ctx context.Context, args json.RawMessage) (tool.Result, error)
}

func (f *fakeTool) Spec() tool.Spec { return f.spec }
func (f *fakeTool) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	if f.fn == nil {
		return tool.Text(f.spec.Name + " ran"), nil
	}
	return f.fn(ctx, args)
}

func fake(name, source string) *fakeTool {
	return &fakeTool{spec: tool.Spec{Name: name, Description: "fake " + name, Source: source}}
}

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

func echoTool(t *testing.T, name string) tool.Tool {
	t.Helper()
	tl, err := tool.New(name, "echo the text", func(_ context.Context, in echoIn) (string, error) {
		return in.Text, nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

// mustNew is New with opts, bash declared unconfined: these tests are about
// composition (TestBashMustBeConfined is about the default).
func mustNew(t *testing.T, opts *toolkit.Options) *toolkit.Toolkit {
	t.Helper()
	var o toolkit.Options
	if opts != nil {
		o = *opts
	}
	o.Unconfined = true
	k, err := toolkit.New(&o)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestComposition(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name  string
		opts  toolkit.Options
		names []string
	}{
		{"builtins by default", toolkit.Options{Workdir: dir}, builtin.Names()},
		{"builtins off", toolkit.Options{NoBuiltins: true, Extra: []tool.Tool{fake("x", "func")}}, []string{"x"}},
		{"builtins off, nothing else", toolkit.Options{NoBuiltins: true}, []string{}},
		{"disable some", toolkit.Options{Workdir: dir, Disable: []string{"bash", "write"}}, []string{"read", "edit", "grep", "glob", "webfetch", "question", "apply_patch", "todowrite"}},
		{"extras after builtins", toolkit.Options{Workdir: dir, Extra: []tool.Tool{fake("z", "func"), fake("a", "func")}},
			append(builtin.Names(), "z", "a")},
		{"an extra shadows a builtin", toolkit.Options{Workdir: dir, Extra: []tool.Tool{fake("read", "mcp:fs")}},
			[]string{"bash", "write", "edit", "grep", "glob", "webfetch", "question", "apply_patch", "todowrite", "read"}},
		{"disable does not touch an extra", toolkit.Options{Workdir: dir, Disable: []string{"read"}, Extra: []tool.Tool{fake("read", "func")}},
			[]string{"bash", "write", "edit", "grep", "glob", "webfetch", "question", "apply_patch", "todowrite", "read"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := mustNew(t, &tt.opts)
			if diff := cmp.Diff(tt.names, toolNames(k.Tools())); diff != "" {
				t.Errorf("Names (-want +got):\n%s", diff)
			}
			var fromTools []string
			for _, tl := range k.Tools() {
				fromTools = append(fromTools, tl.Spec().Name)
			}
			var fromDefs []string
			for _, d := range k.Defs() {
				fromDefs = append(fromDefs, d.Name)
			}
			if len(tt.names) > 0 {
				if diff := cmp.Diff(tt.names, fromTools); diff != "" {
					t.Errorf("Tools (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tt.names, fromDefs); diff != "" {
					t.Errorf("Defs (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestShadowingExtraRuns(t *testing.T) {
	k := mustNew(t, &toolkit.Options{Workdir: t.TempDir(), Extra: []tool.Tool{fake("read", "mcp:fs")}})
	got, ok := k.Get("read")
	if !ok || got.Spec().Source != "mcp:fs" {
		t.Fatalf("Get(read) = %v, %v; want the extra tool", got, ok)
	}
	res, err := k.Execute(context.Background(), "read", json.RawMessage(`{}`))
	if err != nil || res.Output != "read ran" {
		t.Errorf("Execute(read) = %+v, %v; want the extra tool's result", res, err)
	}
}

func TestDefaultWorkdir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "here.txt"), []byte("here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	k := mustNew(t, nil)
	res, err := k.Execute(context.Background(), "read", json.RawMessage(`{"path":"here.txt"}`))
	if err != nil || res.IsError || res.Output != "     1\there\n" {
		t.Errorf("read here.txt = %+v, %v", res, err)
	}
}

func TestNewErrors(t *testing.T) {
	dir := t.TempDir()
	badSchema := fake("bad_schema", "func")
	badSchema.spec.InputSchema = &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"x": {Ref: "#/nowhere"}}}
	tests := []struct {
		name string
		opts toolkit.Options
		is   error
		msg  string
	}{
		{"two extras with one name", toolkit.Options{NoBuiltins: true, Extra: []tool.Tool{fake("x", "func"), fake("y", "func"), fake("x", "mcp:srv")}},
			toolkit.ErrDuplicateTool, `toolkit: duplicate tool name "x": Extra[0] (source "func") and Extra[2] (source "mcp:srv")`},
		{"two extras shadowing one builtin", toolkit.Options{Workdir: dir, Extra: []tool.Tool{fake("bash", "a"), fake("bash", "b")}},
			toolkit.ErrDuplicateTool, `toolkit: duplicate tool name "bash": Extra[0] (source "a") and Extra[1] (source "b")`},
		{"invalid name", toolkit.Options{NoBuiltins: true, Extra: []tool.Tool{fake("has space", "mcp:srv")}},
			toolkit.ErrInvalidTool, `toolkit: Extra[0] (source "mcp:srv"): invalid tool: name "has space" must match [A-Za-z0-9_-]{1,64} (see tool.SanitizeName)`},
		{"empty name", toolkit.Options{NoBuiltins: true, Extra: []tool.Tool{fake("", "func")}}, toolkit.ErrInvalidTool, ""},
		{"too long a name", toolkit.Options{NoBuiltins: true, Extra: []tool.Tool{fake(strings.Repeat("a", 65), "func")}}, toolkit.ErrInvalidTool, ""},
		{"nil tool", toolkit.Options{NoBuiltins: true, Extra: []tool.Tool{nil}}, toolkit.ErrInvalidTool, "toolkit: Extra[0]: invalid tool: nil tool"},
		{"schema that does not resolve", toolkit.Options{NoBuiltins: true, Extra: []tool.Tool{badSchema}}, toolkit.ErrInvalidTool, ""},
		{"disable a non-builtin", toolkit.Options{Workdir: dir, Disable: []string{"bsh"}}, toolkit.ErrUnknownTool,
			`toolkit: Disable[0] "bsh": unknown tool (builtins: bash, read, write, edit, grep, glob, webfetch, question, apply_patch, todowrite)`},
		{"disable names a builtin in its case", toolkit.Options{Workdir: dir, Disable: []string{"Grep"}}, toolkit.ErrUnknownTool, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := toolkit.New(&tt.opts)
			if !errors.Is(err, tt.is) {
				t.Fatalf("New = %v, %v; want an error wrapping %v", k, err, tt.is)
			}
			if tt.msg != "" && err.Error() != tt.msg {
				t.Errorf("error text\n got %s\nwant %s", err, tt.msg)
			}
		})
	}
	if _, err := toolkit.New(&toolkit.Options{Workdir: filepath.Join(dir, "missing")}); err == nil {
		t.Error("New with a missing Workdir succeeded")
	}
}

func TestExecute(t *testing.T) {
	panicky := fake("panicky", "func")
	panicky.fn = func(context.Context, json.RawMessage) (tool.Result, error) { panic("boom") }
	failing := fake("failing", "func")
	failing.fn = func(context.Context, json.RawMessage) (tool.Result, error) {
		return tool.Result{}, errors.New("backend down")
	}
	pending := fake("pending", "func")
	pending.fn = func(context.Context, json.RawMessage) (tool.Result, error) {
		return tool.Pending(tool.Request{ID: "r1", Kind: tool.KindApproval, Prompt: "ok?"}), nil
	}
	var seenArgs string
	recorder := fake("recorder", "func")
	recorder.fn = func(_ context.Context, args json.RawMessage) (tool.Result, error) {
		seenArgs = string(args)
		return tool.Text("recorded"), nil
	}
	k := mustNew(t, &toolkit.Options{NoBuiltins: true, Extra: []tool.Tool{echoTool(t, "echo"), panicky, failing, pending, recorder}})

	tests := []struct {
		name string
		tool string
		args string
		want tool.Result
	}{
		{"runs", "echo", `{"text":"hi"}`, tool.Text("hi")},
		{"unknown name", "nope", `{}`, tool.Error(`unknown tool "nope"; available tools: echo, panicky, failing, pending, recorder`)},
		{"missing required", "echo", `{}`, tool.Error(`invalid arguments for echo: validating root: required: missing properties: ["text"]`)},
		{"wrong type", "echo", `{"text":5}`, tool.Error(`invalid arguments for echo: validating root: validating /properties/text: type: 5 has type "integer", want "string"`)},
		{"not an object", "echo", `[1]`, tool.Error(`invalid arguments for echo: arguments must be a JSON object, got an array`)},
		{"Go error", "failing", `{}`, tool.Error("backend down")},
		{"pending passes through", "pending", `{}`, tool.Pending(tool.Request{ID: "r1", Kind: tool.KindApproval, Prompt: "ok?"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := k.Execute(context.Background(), tt.tool, json.RawMessage(tt.args))
			if err != nil {
				t.Fatalf("Execute returned a Go error: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Execute(%s, %s) (-want +got):\n%s", tt.tool, tt.args, diff)
			}
		})
	}

	t.Run("panic", func(t *testing.T) {
		got, err := k.Execute(context.Background(), "panicky", nil)
		if err != nil || !got.IsError || got.Output != "tool panicky panicked: boom" || got.Metadata["panicStack"] == nil {
			t.Errorf("Execute(panicky) = %+v, %v", got, err)
		}
	})
	t.Run("null and empty args become {}", func(t *testing.T) {
		for _, args := range []string{"", "null", "  "} {
			seenArgs = ""
			if _, err := k.Execute(context.Background(), "recorder", json.RawMessage(args)); err != nil || seenArgs != "{}" {
				t.Errorf("args %q: tool saw %q, err %v", args, seenArgs, err)
			}
		}
	})
	t.Run("done context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		seenArgs = ""
		if _, err := k.Execute(ctx, "recorder", json.RawMessage(`{}`)); !errors.Is(err, context.Canceled) || seenArgs != "" {
			t.Errorf("Execute with a done context: err %v, tool ran: %v", err, seenArgs != "")
		}
	})
}

func TestValidate(t *testing.T) {
	k := mustNew(t, &toolkit.Options{NoBuiltins: true, Extra: []tool.Tool{echoTool(t, "echo")}})
	if err := k.Validate("echo", json.RawMessage(`{"text":"x"}`)); err != nil {
		t.Errorf("valid args: %v", err)
	}
	if err := k.Validate("echo", json.RawMessage(`{}`)); !errors.Is(err, tool.ErrInvalidArguments) {
		t.Errorf("invalid args: %v, want ErrInvalidArguments", err)
	}
	if err := k.Validate("nope", nil); !errors.Is(err, toolkit.ErrUnknownTool) || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown tool: %v, want ErrUnknownTool naming it", err)
	}
}

func TestDefs(t *testing.T) {
	noSchema := fake("bare", "func")
	k := mustNew(t, &toolkit.Options{NoBuiltins: true, Extra: []tool.Tool{echoTool(t, "echo"), noSchema}})
	want := []model.ToolDef{
		{Name: "echo", Description: "echo the text", InputSchema: json.RawMessage(
			`{"type":"object","required":["text"],"properties":{"text":{"type":"string","description":"the text to echo"}},"additionalProperties":false}`)},
		{Name: "bare", Description: "fake bare", InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
	}
	defs := k.Defs()
	if diff := cmp.Diff(want, defs, cmp.Comparer(jsonEqual)); diff != "" {
		t.Errorf("Defs (-want +got):\n%s", diff)
	}
	// The result is a copy.
	defs[0].Name = "changed"
	defs[0].InputSchema[0] = 'X'
	if again := k.Defs(); again[0].Name != "echo" || again[0].InputSchema[0] != '{' {
		t.Errorf("Defs shares state with its callers: %v", again[0])
	}
	// No hints reach the model.
	b, _ := json.Marshal(mustNew(t, &toolkit.Options{Workdir: t.TempDir()}).Defs())
	for _, word := range []string{"readOnly", "destructive", "openWorld", "hints"} {
		if strings.Contains(string(b), word) {
			t.Errorf("Defs mention %q", word)
		}
	}
}

// jsonEqual compares two JSON documents by value.
func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return cmp.Equal(x, y)
}

func TestConcurrentExecute(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	k := mustNew(t, &toolkit.Options{Workdir: dir, Extra: []tool.Tool{echoTool(t, "echo")}})
	errs := make(chan error, 20)
	for i := range 20 {
		go func() {
			name, args := "echo", `{"text":"x"}`
			if i%2 == 0 {
				name, args = "read", `{"path":"a.txt"}`
			}
			res, err := k.Execute(context.Background(), name, json.RawMessage(args))
			if err == nil && res.IsError {
				err = errors.New(res.Output)
			}
			errs <- err
		}()
	}
	for range 20 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// toolNames lists the names of tools, in order.
func toolNames(tools []tool.Tool) []string {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Spec().Name
	}
	return names
}
