// Package claudenames maps tollgate's builtin tools to the names and
// argument shapes Claude Code gives them (Bash, Read, Write, Edit, Grep,
// Glob), for the Claude Code hooks of package hooks/claudecode and the hook
// endpoints of internal/claudegate, and names the hook events and fail
// modes of hooks/claudecode for the packages that wire it.
package claudenames

import (
	"encoding/json"
	"path/filepath"
)

// Claude Code's hook events, spelled as in settings.json (the keys of its
// "hooks" object): the values of hooks/claudecode's Event.
const (
	PreToolUse         = "PreToolUse"
	PermissionRequest  = "PermissionRequest"
	PostToolUse        = "PostToolUse"
	PostToolUseFailure = "PostToolUseFailure"
	UserPromptSubmit   = "UserPromptSubmit"
	Stop               = "Stop"
	SubagentStop       = "SubagentStop"
	SessionStart       = "SessionStart"
	SessionEnd         = "SessionEnd"
	Notification       = "Notification"
)

// The fail modes of hooks/claudecode (its FailMode): a failing handler
// denies (closed) or is ignored (open).
const (
	FailClosed = "closed"
	FailOpen   = "open"
)

// builtinNames maps tollgate's builtin tools to Claude Code's names.
var builtinNames = map[string]string{"bash": "Bash", "read": "Read", "write": "Write", "edit": "Edit", "grep": "Grep", "glob": "Glob"}

// fieldNames maps, per builtin, tollgate's argument names to Claude Code's.
// Fields not listed keep their name.
var fieldNames = map[string]map[string]string{
	"read":  {"path": "file_path"},
	"write": {"path": "file_path"},
	"edit":  {"path": "file_path", "oldString": "old_string", "newString": "new_string", "replaceAll": "replace_all"},
	"grep":  {"include": "glob"},
}

// absFields are the Claude Code fields holding a path, made absolute against
// the project directory.
var absFields = map[string]bool{"file_path": true, "path": true}

// Name returns the name Claude Code gives tollgate's tool name: Bash,
// Read, Write, Edit, Grep and Glob for the builtins; any other name (MCP tools
// are already mcp__server__tool) is unchanged.
func Name(name string) string {
	if c, ok := builtinNames[name]; ok {
		return c
	}
	return name
}

// ToInput returns a builtin's arguments in Claude Code's shape (the
// keys renamed, file_path and path made absolute against projectDir); other
// tools' arguments are returned unchanged. Arguments that are not a JSON
// object are returned unchanged.
func ToInput(name string, args json.RawMessage, projectDir string) json.RawMessage {
	if _, ok := builtinNames[name]; !ok {
		return args
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil || m == nil {
		return args
	}
	ren := fieldNames[name]
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		ck := k
		if r, ok := ren[k]; ok {
			ck = r
		}
		if absFields[ck] && name != "bash" {
			var p string
			if json.Unmarshal(v, &p) == nil && p != "" {
				if !filepath.IsAbs(p) {
					p = filepath.Join(projectDir, p)
				}
				v, _ = json.Marshal(filepath.Clean(p))
			}
		}
		out[ck] = v
	}
	b, err := json.Marshal(out)
	if err != nil {
		return args
	}
	return b
}

// FromInput maps an updatedInput in Claude Code's shape back to the
// arguments of tollgate's tool name: keys renamed back (paths stay absolute;
// the builtins accept absolute paths inside the workspace). Unknown keys are
// kept, so the tool's schema judges them. Input that is not a JSON object is
// returned unchanged (and fails validation).
func FromInput(name string, input json.RawMessage) json.RawMessage {
	ren, ok := fieldNames[name]
	if !ok {
		return input
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(input, &m) != nil || m == nil {
		return input
	}
	back := make(map[string]string, len(ren))
	for k, v := range ren {
		back[v] = k
	}
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		if t, ok := back[k]; ok {
			k = t
		}
		out[k] = v
	}
	b, err := json.Marshal(out)
	if err != nil {
		return input
	}
	return b
}
