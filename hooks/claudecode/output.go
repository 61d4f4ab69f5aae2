package claudecode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// output is a handler's JSON answer, as Claude Code documents it: the
// universal fields and the event's hookSpecificOutput.
type output struct {
	Continue       *bool     `json:"continue"`
	StopReason     string    `json:"stopReason"`
	SuppressOutput bool      `json:"suppressOutput"`
	SystemMessage  string    `json:"systemMessage"`
	Decision       string    `json:"decision"`
	Reason         string    `json:"reason"`
	Specific       *specific `json:"hookSpecificOutput"`
}

type specific struct {
	HookEventName            string          `json:"hookEventName"`
	PermissionDecision       string          `json:"permissionDecision"`
	PermissionDecisionReason string          `json:"permissionDecisionReason"`
	UpdatedInput             json.RawMessage `json:"updatedInput"`
	AdditionalContext        string          `json:"additionalContext"`
	UpdatedToolOutput        json.RawMessage `json:"updatedToolOutput"`
	Decision                 *permDecision   `json:"decision"`
}

// permDecision is PermissionRequest's answer.
type permDecision struct {
	Behavior     string          `json:"behavior"`
	UpdatedInput json.RawMessage `json:"updatedInput"`
	Message      string          `json:"message"`
}

// outputSchema is the JSON Schema a handler's JSON must meet: the types of the
// documented fields and the values of the enumerations. Unknown fields are
// allowed (Claude Code adds fields over time).
const outputSchema = `{
  "type": "object",
  "properties": {
    "continue": {"type": "boolean"},
    "stopReason": {"type": "string"},
    "suppressOutput": {"type": "boolean"},
    "systemMessage": {"type": "string"},
    "decision": {"enum": ["block", "approve"]},
    "reason": {"type": "string"},
    "hookSpecificOutput": {
      "type": "object",
      "required": ["hookEventName"],
      "properties": {
        "hookEventName": {"type": "string"},
        "permissionDecision": {"enum": ["allow", "deny", "ask", "defer"]},
        "permissionDecisionReason": {"type": "string"},
        "updatedInput": {"type": "object"},
        "additionalContext": {"type": "string"},
        "decision": {
          "type": "object",
          "required": ["behavior"],
          "properties": {
            "behavior": {"enum": ["allow", "deny"]},
            "updatedInput": {"type": "object"},
            "message": {"type": "string"}
          }
        }
      }
    }
  }
}`

var (
	schemaOnce sync.Once
	resolved   *jsonschema.Resolved
)

func outputResolved() *jsonschema.Resolved {
	schemaOnce.Do(func() {
		var s jsonschema.Schema
		if err := json.Unmarshal([]byte(outputSchema), &s); err != nil {
			panic("claudecode: output schema: " + err.Error())
		}
		r, err := s.Resolve(nil)
		if err != nil {
			panic("claudecode: output schema: " + err.Error())
		}
		resolved = r
	})
	return resolved
}

// parseOutput reads stdout as JSON when it starts with '{' (after white
// space). It returns nil, nil for plain text, and an error that says what is
// wrong for JSON that does not parse or fails the schema, or whose
// hookEventName is not ev.
func parseOutput(stdout []byte, ev Event) (*output, error) {
	t := bytes.TrimSpace(stdout)
	if len(t) == 0 || t[0] != '{' {
		return nil, nil
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(t))
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("its JSON output does not parse: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("its JSON output has more than one value")
	}
	if err := outputResolved().Validate(v); err != nil {
		return nil, fmt.Errorf("its JSON output fails the schema: %v", err)
	}
	var o output
	if err := json.Unmarshal(t, &o); err != nil {
		return nil, fmt.Errorf("its JSON output does not parse: %v", err)
	}
	if o.Specific != nil && o.Specific.HookEventName != string(ev) {
		return nil, fmt.Errorf("its hookSpecificOutput.hookEventName is %q, not %q", o.Specific.HookEventName, ev)
	}
	return &o, nil
}

// oneLine makes text from a hook fit one log or reason line.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
