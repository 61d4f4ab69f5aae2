package scripted_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/model/scripted"
)

const script = `
turns:
  - text: "Reading."
    toolCalls:
      - name: read
        args: {path: notes.txt}
      - name: grep
        id: g1
  - text: "Done."
`

func TestReplayAndExhaustion(t *testing.T) {
	s, err := scripted.Parse("s.yaml", strings.NewReader(script))
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.New("s.yaml", s)
	ctx := context.Background()
	req := &model.Request{Messages: []model.Message{model.User("go")}}
	r1, err := m.Generate(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(r1.Message.ToolCalls) != 2 || r1.Message.ToolCalls[0].ID != "call_1_1" || string(r1.Message.ToolCalls[0].Arguments) != `{"path":"notes.txt"}` ||
		r1.Message.ToolCalls[1].ID != "g1" || string(r1.Message.ToolCalls[1].Arguments) != "{}" || r1.FinishReason != model.FinishToolCalls {
		t.Fatalf("turn 1 = %+v", r1)
	}
	req.Messages = append(req.Messages, r1.Message)
	r2, err := m.Generate(ctx, req)
	if err != nil || r2.Message.Content != "Done." || r2.FinishReason != model.FinishStop {
		t.Fatalf("turn 2 = %+v, %v", r2, err)
	}
	req.Messages = append(req.Messages, r2.Message)
	if _, err := m.Generate(ctx, req); !errors.Is(err, scripted.ErrScriptExhausted) {
		t.Fatalf("turn 3 error = %v, want ErrScriptExhausted", err)
	}
}

// Every error is one line, FILE:LINE:COL: problem (the form editors jump
// to), without the YAML library's excerpt of the source.
func TestParseErrorsNamePosition(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"turns:\n  - text: hi\n    tool_calls: []\n", `x.yaml:3:5: turns[0].tool_calls: unknown key "tool_calls"; did you mean "toolCalls"?`},
		{"turns:\n  - text: hi\n    toolCalls:\n      - name: read\n        args: notamap\n", "x.yaml:5:15: "},
		{"turns:\n  - text: hi\n  - toolCalls:\n      - args: {a: 1}\n", "x.yaml:4:9: turns[1].toolCalls[0]: name is required"},
		{"turns: []\n", "x.yaml: the script has no turns"},
		{"turns:\n  - text: hi\n  - {}\n", "x.yaml:3:5: turns[1]: a turn needs text or toolCalls"},
		{"turns: !x 0\n", "x.yaml: the YAML decoder failed on this document"},
	} {
		_, err := scripted.Parse("x.yaml", strings.NewReader(tc.src))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Parse(%q) error = %q, want one line starting %q", tc.src, err, tc.want)
		}
	}
}

func TestArgumentsAreNotHTMLEscaped(t *testing.T) {
	s, err := scripted.Parse("s.yaml", strings.NewReader("turns:\n  - toolCalls:\n      - name: bash\n        args: {command: \"a && b > c\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := scripted.New("s", s).Generate(context.Background(), &model.Request{})
	if err != nil || string(r.Message.ToolCalls[0].Arguments) != `{"command":"a && b > c"}` {
		t.Fatalf("%s, %v", r.Message.ToolCalls[0].Arguments, err)
	}
}
