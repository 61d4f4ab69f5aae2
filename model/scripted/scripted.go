// Package scripted is a [model.Model] that replays a script of assistant turns:
// tollgate's offline, deterministic model for the CLI, the demo and tests.
//
// A script is YAML:
//
//	turns:
//	  - text: "Let me look."          # optional assistant text
//	    toolCalls:                     # optional; several run in one turn
//	      - name: read
//	        id: read-notes             # optional; default "call_<turn>_<n>"
//	        args: {path: notes.txt}    # a mapping; default {}
//	  - text: "All done."
//
// The model is stateless: the turn to replay is the number of assistant messages
// already in the request, so a run resumed in another process continues where it
// stopped. When the script has no turn left, Generate returns an error wrapping
// [ErrScriptExhausted]; it never makes up an answer.
package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/tollgate-dev/tollgate/internal/bounded"
	"github.com/tollgate-dev/tollgate/internal/configread"
	"github.com/tollgate-dev/tollgate/internal/jsonenc"
	"github.com/tollgate-dev/tollgate/model"
)

// ErrScriptExhausted is wrapped by the error Generate returns when the model is
// asked for more turns than the script has.
var ErrScriptExhausted = errors.New("scripted: the script has no turn left")

// Script is a parsed script.
type Script struct {
	Turns []Turn `yaml:"turns" json:"turns"`
}

// Turn is one assistant turn of a script.
type Turn struct {
	Text      string     `yaml:"text" json:"text,omitempty"`
	ToolCalls []ToolCall `yaml:"toolCalls" json:"toolCalls,omitempty"`
}

// ToolCall is one tool call of a turn. Args must be a mapping.
type ToolCall struct {
	ID   string         `yaml:"id" json:"id,omitempty"`
	Name string         `yaml:"name" json:"name"`
	Args map[string]any `yaml:"args" json:"args,omitempty"`
}

// Model replays a [Script]. It is safe for concurrent use.
type Model struct {
	name   string
	script Script
}

// New returns a model replaying s; name is reported as the response's model
// (e.g. the script's path).
func New(name string, s Script) *Model { return &Model{name: name, script: s} }

// scriptLimits bound a script, checked before it is parsed: at most 16 MiB,
// lists and mappings nested at most 64 deep (the top level counting 1), and
// no YAML aliases (expanding nested aliases grows exponentially).
var scriptLimits = bounded.Limits{MaxBytes: 16 << 20, MaxDepth: 64}

// Parse reads a script from r. name is used in error messages (a file path).
// Errors are a *configfile.Error, each problem one line, "name:LINE:COL:
// field: problem" (the line and column of the problem; name alone when the
// problem is the whole file); unknown keys are errors (with the key
// probably meant), and so is a script over 16 MiB, nested more than 64
// deep, or with YAML aliases.
func Parse(name string, r io.Reader) (Script, error) {
	data, err := bounded.Read(r, name, scriptLimits)
	if err != nil {
		return Script{}, err
	}
	if err := bounded.CheckYAML(name, data, scriptLimits); err != nil {
		return Script{}, err
	}
	var s Script
	f, err := configread.DecodeYAML(name, data, &s, scriptLimits)
	if err != nil {
		return Script{}, err
	}
	for i, t := range s.Turns {
		for j, c := range t.ToolCalls {
			if strings.TrimSpace(c.Name) == "" {
				field := fmt.Sprintf("turns[%d].toolCalls[%d]", i, j)
				return Script{}, configread.Errorf(name, configread.PathPos(f, "$."+field), field, "name is required")
			}
		}
		if t.Text == "" && len(t.ToolCalls) == 0 {
			field := fmt.Sprintf("turns[%d]", i)
			return Script{}, configread.Errorf(name, configread.PathPos(f, "$."+field), field, "a turn needs text or toolCalls")
		}
	}
	if len(s.Turns) == 0 {
		return Script{}, configread.Errorf(name, configread.Pos{}, "", "the script has no turns")
	}
	return s, nil
}

// Load parses the script file at path and returns a model replaying it.
func Load(path string) (*Model, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := Parse(path, f)
	if err != nil {
		return nil, err
	}
	return New(path, s), nil
}

// Generate implements [model.Model]: it replays turn n+1, where n is the number
// of assistant messages in req.
func (m *Model) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n := 0
	for _, msg := range req.Messages {
		if msg.Role == model.RoleAssistant {
			n++
		}
	}
	if n >= len(m.script.Turns) {
		return nil, fmt.Errorf("%w: %s has %d turns and turn %d was asked for", ErrScriptExhausted, m.name, len(m.script.Turns), n+1)
	}
	t := m.script.Turns[n]
	msg := model.Message{Role: model.RoleAssistant, Content: t.Text}
	for j, c := range t.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", n+1, j+1)
		}
		args := json.RawMessage("{}")
		if c.Args != nil {
			b, err := jsonenc.Marshal(c.Args)
			if err != nil {
				return nil, fmt.Errorf("scripted: turn %d call %s: %w", n+1, c.Name, err)
			}
			args = b
		}
		msg.ToolCalls = append(msg.ToolCalls, model.ToolCall{ID: id, Name: c.Name, Arguments: args})
	}
	fr := model.FinishStop
	if len(msg.ToolCalls) > 0 {
		fr = model.FinishToolCalls
	}
	out := len(strings.Fields(t.Text)) // a stand-in token count: words
	return &model.Response{Message: msg, FinishReason: fr, Model: m.name, Usage: model.Usage{OutputTokens: out, TotalTokens: out}}, nil
}
