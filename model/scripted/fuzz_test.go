package scripted_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/jsonenc"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/model/scripted"
)

// FuzzParse: any input either fails with an error naming the file, or yields a
// script that replays every turn without error and then reports exhaustion.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"turns:\n  - text: hi\n",
		"turns:\n  - toolCalls:\n      - name: read\n        args: {path: a}\n  - text: done\n",
		"turns: [{text: a}, {toolCalls: [{name: x, id: y, args: {}}]}]",
		"turns:\n  - text: hi\n    tool_calls: []\n",
		"turns:\n  - toolCalls:\n      - args: {a: [1, {b: null}]}\n",
		"{}", "", "turns: 1", "turns:\n- &a {text: x}\n- *a\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		s, err := scripted.Parse("f.yaml", strings.NewReader(src))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.yaml") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		m := scripted.New("f.yaml", s)
		req := &model.Request{Messages: []model.Message{model.User("go")}}
		for i := range s.Turns {
			resp, err := m.Generate(context.Background(), req)
			if err != nil {
				t.Fatalf("turn %d of a parsed script: %v", i+1, err)
			}
			for _, c := range resp.Message.ToolCalls {
				if _, err := jsonenc.Object(c.Arguments); err != nil {
					t.Fatalf("turn %d: arguments %s are not an object: %v", i+1, c.Arguments, err)
				}
			}
			req.Messages = append(req.Messages, resp.Message)
		}
		if _, err := m.Generate(context.Background(), req); !errors.Is(err, scripted.ErrScriptExhausted) {
			t.Fatalf("after the last turn: %v", err)
		}
	})
}
