package claudegate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/tollgate-dev/tollgate/hooks/claudecode"
	"github.com/tollgate-dev/tollgate/internal/argcheck"
	"github.com/tollgate-dev/tollgate/internal/claudenames"
)

// MaxInputBytes bounds one hook event as read from stdin or an HTTP body:
// 16 MiB, room for a large tool_response.
const MaxInputBytes = 16 << 20

// maxNameBytes bounds a tool's and a session's name.
const maxNameBytes = 256

// Input is one Claude Code hook event, with the fields its documentation
// gives (docs.claude.com, hooks reference): the common ones, then those of
// the tool events, UserPromptSubmit, SessionStart, SessionEnd and Stop.
// Fields this package does not read are ignored.
type Input struct {
	SessionID      string           `json:"session_id"`
	TranscriptPath string           `json:"transcript_path,omitempty"`
	Cwd            string           `json:"cwd"`
	PermissionMode string           `json:"permission_mode,omitempty"`
	HookEventName  claudecode.Event `json:"hook_event_name"`
	// ToolName, ToolInput and ToolUseID: PreToolUse, PermissionRequest,
	// PostToolUse and PostToolUseFailure.
	ToolName  string          `json:"tool_name,omitempty"`
	ToolInput json.RawMessage `json:"tool_input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	// ToolResponse is PostToolUse's result (an object for Bash, a string or
	// an object for the others).
	ToolResponse json.RawMessage `json:"tool_response,omitempty"`
	// Error is PostToolUseFailure's error text.
	Error string `json:"error,omitempty"`
	// Prompt is UserPromptSubmit's prompt.
	Prompt string `json:"prompt,omitempty"`
	// Source is SessionStart's source (startup, resume, clear, compact).
	Source string `json:"source,omitempty"`
	// Reason is SessionEnd's reason.
	Reason string `json:"reason,omitempty"`
	// StopHookActive and LastAssistantMessage: Stop.
	StopHookActive       bool   `json:"stop_hook_active,omitempty"`
	LastAssistantMessage string `json:"last_assistant_message,omitempty"`
	// TollgatePrompt and TollgateIntent are added by a command hook that
	// forwards the event to a server: the session's last user prompt and
	// the model's last stated intent, read from the transcript on the
	// agent's machine. They are shown to the person asked, never decide.
	TollgatePrompt string `json:"tollgate_prompt,omitempty"`
	TollgateIntent string `json:"tollgate_intent,omitempty"`
}

// Events the bridge answers. Any other event is answered with no opinion.
var toolEvents = map[claudecode.Event]bool{
	claudenames.PreToolUse: true, claudenames.PermissionRequest: true,
	claudenames.PostToolUse: true, claudenames.PostToolUseFailure: true,
}

// ErrInput is wrapped by every error of [ParseInput].
var ErrInput = errors.New("claudegate: bad hook input")

// ParseInput reads one hook event from r: one JSON object of at most
// [MaxInputBytes], nested at most argcheck.MaxDepth deep, with
// hook_event_name and session_id, and for the tool events tool_name (at
// most 256 bytes) and a tool_input object. Its errors wrap [ErrInput] and
// say what was wrong.
func ParseInput(r io.Reader) (*Input, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxInputBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: reading it: %v", ErrInput, err)
	}
	return parseInput(b)
}

func parseInput(b []byte) (*Input, error) {
	if len(b) > MaxInputBytes {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrInput, MaxInputBytes)
	}
	if argcheck.TooDeep(b) {
		return nil, fmt.Errorf("%w: nested more than %d deep", ErrInput, argcheck.MaxDepth)
	}
	var in Input
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("%w: not a JSON object of a hook event: %v", ErrInput, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: more than one JSON value", ErrInput)
	}
	switch {
	case in.HookEventName == "":
		return nil, fmt.Errorf("%w: no hook_event_name", ErrInput)
	case in.SessionID == "" || len(in.SessionID) > maxNameBytes:
		return nil, fmt.Errorf("%w: session_id is empty or longer than %d bytes", ErrInput, maxNameBytes)
	}
	if toolEvents[in.HookEventName] {
		if in.ToolName == "" || len(in.ToolName) > maxNameBytes {
			return nil, fmt.Errorf("%w: %s: tool_name is empty or longer than %d bytes", ErrInput, in.HookEventName, maxNameBytes)
		}
		if !isObject(in.ToolInput) {
			return nil, fmt.Errorf("%w: %s: tool_input is not a JSON object", ErrInput, in.HookEventName)
		}
		if len(in.ToolUseID) > maxNameBytes {
			return nil, fmt.Errorf("%w: %s: tool_use_id is longer than %d bytes", ErrInput, in.HookEventName, maxNameBytes)
		}
	}
	return &in, nil
}
