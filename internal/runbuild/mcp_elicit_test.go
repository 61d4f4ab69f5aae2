package runbuild

import (
	"context"
	"testing"

	"github.com/tollgate-dev/tollgate/tool"
)

// An MCP server's elicitation is accepted only by a person: a flag's,
// hook's or the runtime's acceptance is a decline, and with nobody to ask
// every elicitation is declined.
func TestPersonOnly(t *testing.T) {
	req := tool.Request{ID: "elicitation_1", Kind: tool.KindInput}
	by := func(p tool.Principal, ok bool) tool.WaitFunc {
		return func(context.Context, tool.Request) (tool.Answer, error) {
			return tool.Answer{ID: req.ID, OK: ok, Principal: p}, nil
		}
	}
	for _, c := range []struct {
		name string
		wait tool.WaitFunc
		ok   bool
	}{
		{"person accepts", by(tool.Principal{Kind: tool.PrincipalPerson, Name: "ann"}, true), true},
		{"person by name", func(context.Context, tool.Request) (tool.Answer, error) {
			return tool.Answer{ID: req.ID, OK: true, By: "ann"}, nil
		}, true},
		{"flag accepts", by(tool.Principal{Kind: tool.PrincipalFlag, Name: "--approve=yes"}, true), false},
		{"runtime accepts", by(tool.Principal{Kind: tool.PrincipalRuntime}, true), false},
		{"nobody named", by(tool.Principal{}, true), false},
		{"nobody to ask", nil, false},
	} {
		a, err := PersonOnly(c.wait)(context.Background(), req)
		if err != nil || a.OK != c.ok {
			t.Errorf("%s: %+v, %v; want OK %v", c.name, a, err, c.ok)
		}
	}
}
