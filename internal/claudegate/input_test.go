package claudegate_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/claudegate"
)

func TestParseInputRefuses(t *testing.T) {
	for name, in := range map[string]string{
		"not json":       `garbage`,
		"two values":     `{"session_id":"s","hook_event_name":"Stop"} {}`,
		"no event":       `{"session_id":"s"}`,
		"no session":     `{"hook_event_name":"Stop"}`,
		"no tool":        `{"session_id":"s","hook_event_name":"PreToolUse","tool_input":{}}`,
		"input not obj":  `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":"rm"}`,
		"deep":           `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":` + strings.Repeat(`{"a":`, 200) + `1` + strings.Repeat(`}`, 200) + `}`,
		"long tool name": `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"` + strings.Repeat("x", 300) + `","tool_input":{}}`,
	} {
		if _, err := claudegate.ParseInput(strings.NewReader(in)); !errors.Is(err, claudegate.ErrInput) {
			t.Errorf("%s: %v, want ErrInput", name, err)
		}
	}
	big := bytes.Repeat([]byte(" "), claudegate.MaxInputBytes+1)
	if _, err := claudegate.ParseInput(bytes.NewReader(big)); !errors.Is(err, claudegate.ErrInput) {
		t.Errorf("too big: %v", err)
	}
}

func FuzzParseInput(f *testing.F) {
	f.Add([]byte(`{"session_id":"s","cwd":"/w","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"t"}`))
	f.Add([]byte(`{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Write","tool_input":{"file_path":"a"},"tool_response":"ok"}`))
	f.Add([]byte(`{"session_id":"s","hook_event_name":"Stop","last_assistant_message":"x"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := claudegate.ParseInput(bytes.NewReader(b))
		if err != nil {
			if in != nil || !errors.Is(err, claudegate.ErrInput) {
				t.Fatalf("%v %v", in, err)
			}
			return
		}
		if in.SessionID == "" || in.HookEventName == "" {
			t.Fatalf("accepted %+v", in)
		}
	})
}

// FuzzTranscriptNotes: any transcript gives at most 4 KiB of each note,
// without panicking.
func FuzzTranscriptNotes(f *testing.F) {
	f.Add([]byte(`{"type":"user","message":{"content":"hi"}}` + "\n" + `{"type":"assistant","message":{"content":[{"type":"text","text":"ok"}]}}`))
	f.Add([]byte(`{"type":"user","message":{"content":[{"type":"tool_result"}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "t.jsonl")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		prompt, intent := claudegate.TranscriptNotes(p)
		if len(prompt) > 4<<10 || len(intent) > 4<<10 {
			t.Fatalf("notes too long: %d, %d", len(prompt), len(intent))
		}
	})
}
