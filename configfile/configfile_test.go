package configfile_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tollgate-dev/tollgate/configfile"
)

func TestProblemError(t *testing.T) {
	for _, c := range []struct {
		p    configfile.Problem
		want string
	}{
		{configfile.Problem{File: "s.yaml", Line: 3, Col: 5, Field: "agents.a.model", Message: "want openai:MODEL"}, "s.yaml:3:5: agents.a.model: want openai:MODEL"},
		{configfile.Problem{File: "p.yaml", Line: 1, Col: 1, Severity: configfile.SeverityWarning, Message: "empty"}, "p.yaml:1:1: warning: empty"},
		{configfile.Problem{File: "s.yaml", Message: "too large"}, "s.yaml: too large"},
		{configfile.Problem{Field: "x", Message: "bad"}, "x: bad"},
		{configfile.Problem{Message: "bad"}, "bad"},
	} {
		if got := c.p.Error(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.p, got, c.want)
		}
	}
}

func TestErrorAs(t *testing.T) {
	e := &configfile.Error{Problems: []configfile.Problem{{File: "f", Line: 1, Col: 2, Message: "a"}, {File: "f", Line: 3, Col: 4, Message: "b"}}}
	err := fmt.Errorf("loading: %w", e)
	var ce *configfile.Error
	if !errors.As(err, &ce) || len(ce.Problems) != 2 {
		t.Fatalf("errors.As *Error: %v", err)
	}
	var p *configfile.Problem
	if !errors.As(err, &p) || p.Line != 1 {
		t.Fatalf("errors.As *Problem: %v", p)
	}
	var v configfile.Problem
	if !errors.As(err, &v) || v.Line != 1 {
		t.Fatalf("errors.As Problem: %v", v)
	}
	if got, want := e.Error(), "f:1:2: a\nf:3:4: b"; got != want {
		t.Errorf("Error: %q, want %q", got, want)
	}
}
