package claudegate

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tollgate-dev/tollgate/internal/claudenames"
	"github.com/tollgate-dev/tollgate/tool"
)

// mapping is how one of Claude Code's tools is judged: under tollgate's
// name, with its arguments renamed to tollgate's, and the hints of
// tollgate's tool of that name.
type mapping struct {
	name  string
	hints *tool.Hints
	// required are the string fields the arguments must hold (in
	// tollgate's names): the gate refuses a call without them.
	required []string
}

// mappings are Claude Code's builtin tools that tollgate has a tool for
// (docs/claude-code.md): Bash is bash with its command; Write, Edit and
// MultiEdit are write and edit with path from file_path; Read, Glob, Grep
// and WebFetch keep their arguments; the hints are those of tollgate's
// builtins of the same name.
var mappings = map[string]mapping{
	"Bash":      {name: "bash", hints: &tool.Hints{Destructive: true, OpenWorld: true}, required: []string{"command"}},
	"Write":     {name: "write", hints: &tool.Hints{Destructive: true}, required: []string{"path"}},
	"Edit":      {name: "edit", hints: &tool.Hints{Destructive: true}, required: []string{"path"}},
	"MultiEdit": {name: "edit", hints: &tool.Hints{Destructive: true}, required: []string{"path"}},
	"Read":      {name: "read", hints: &tool.Hints{ReadOnly: true, Idempotent: true}, required: []string{"path"}},
	"Glob":      {name: "glob", hints: &tool.Hints{ReadOnly: true, Idempotent: true}},
	"Grep":      {name: "grep", hints: &tool.Hints{ReadOnly: true, Idempotent: true}},
	"WebFetch":  {name: "webfetch", hints: &tool.Hints{ReadOnly: true, OpenWorld: true}, required: []string{"url"}},
	"TodoWrite": {name: "todowrite", hints: &tool.Hints{ReadOnly: true, Idempotent: true}},
}

// TollgateName returns the name under which a call of Claude Code's tool
// claudeName is judged: bash, write, edit, read, glob, grep, webfetch and
// todowrite for Claude Code's builtins of those names (MultiEdit is edit);
// any other name (mcp__server__tool, Task, WebSearch, ...) as it is.
func TollgateName(claudeName string) string {
	if m, ok := mappings[claudeName]; ok {
		return m.name
	}
	return claudeName
}

// TollgateArgs returns the arguments of a call of Claude Code's tool
// claudeName as tollgate's tool of the same kind takes them: file_path
// becomes path (for Write, Edit, MultiEdit, Read), Edit's old_string,
// new_string and replace_all become oldString, newString and replaceAll,
// and Grep's glob becomes include; other fields and other tools' inputs are
// unchanged. Input that is not a JSON object is returned unchanged (the
// gate then refuses it).
func TollgateArgs(claudeName string, input json.RawMessage) json.RawMessage {
	m, ok := mappings[claudeName]
	if !ok {
		return input
	}
	switch claudeName {
	case "MultiEdit":
		// Only the path has a name of tollgate's; the edits stay as they are.
		return rename(input, map[string]string{"file_path": "path"})
	}
	return claudenames.FromInput(m.name, input)
}

// ClaudeInput returns arguments in tollgate's shape (an edit a person
// made on the approvals page, say) as Claude Code's tool claudeName takes
// them: the reverse of [TollgateArgs], with file_path made absolute
// against cwd.
func ClaudeInput(claudeName string, args json.RawMessage, cwd string) json.RawMessage {
	m, ok := mappings[claudeName]
	if !ok {
		return args
	}
	if claudeName == "MultiEdit" {
		out := rename(args, map[string]string{"path": "file_path"})
		return absolutePath(out, cwd)
	}
	return claudenames.ToInput(m.name, args, cwd)
}

// rename returns the object input with its keys renamed by ren.
func rename(input json.RawMessage, ren map[string]string) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal(input, &obj) != nil || obj == nil {
		return input
	}
	out := make(map[string]json.RawMessage, len(obj))
	for k, v := range obj {
		if r, ok := ren[k]; ok {
			k = r
		}
		out[k] = v
	}
	b, err := json.Marshal(out)
	if err != nil {
		return input
	}
	return b
}

// absolutePath makes the object's file_path absolute against cwd.
func absolutePath(input json.RawMessage, cwd string) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal(input, &obj) != nil || obj == nil {
		return input
	}
	var p string
	if json.Unmarshal(obj["file_path"], &p) != nil || p == "" || filepath.IsAbs(p) {
		return input
	}
	obj["file_path"], _ = json.Marshal(filepath.Join(cwd, p))
	b, err := json.Marshal(obj)
	if err != nil {
		return input
	}
	return b
}

// claudeTool is the tool the gate resolves a Claude Code call to: its
// name, hints and schema. Claude Code runs the tool itself and reports the
// result; Call is never used by the bridge.
type claudeTool struct{ s tool.Spec }

func (t claudeTool) Spec() tool.Spec { return t.s }

func (t claudeTool) Call(context.Context, json.RawMessage) (tool.Result, error) {
	return tool.Errorf("%s runs in Claude Code, not here", t.s.Name), nil
}

// oneTool is the gate.Tools of one call: the tool it names.
type oneTool struct{ t claudeTool }

func (o oneTool) Tool(name string) (tool.Tool, bool) {
	if name != o.t.s.Name {
		return nil, false
	}
	return o.t, true
}

func (o oneTool) Names() []string { return []string{o.t.s.Name} }

// toolOf returns the tool a call of claudeName is judged as: tollgate's
// name, the hints of tollgate's tool of that name (none for other tools:
// the strictest reading), and a schema asking for an object whose
// required fields are strings.
func toolOf(claudeName string) claudeTool {
	m, ok := mappings[claudeName]
	if !ok {
		return claudeTool{tool.Spec{Name: claudeName, Source: "claude-code", InputSchema: &jsonschema.Schema{Type: "object"}}}
	}
	s := &jsonschema.Schema{Type: "object", Required: m.required, Properties: map[string]*jsonschema.Schema{}}
	for _, f := range m.required {
		s.Properties[f] = &jsonschema.Schema{Type: "string"}
	}
	h := *m.hints
	return claudeTool{tool.Spec{Name: m.name, Source: "claude-code", InputSchema: s, Hints: &h}}
}

// isObject reports whether b is a JSON object.
func isObject(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{'
}
