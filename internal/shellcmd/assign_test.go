package shellcmd

import (
	"slices"
	"testing"
)

func TestAssignsAndSetsVariables(t *testing.T) {
	an := Analyze("A=1 B='x y' go test && sudo git status")
	if len(an.Commands) < 3 {
		t.Fatalf("commands: %+v", an.Commands)
	}
	if got := an.Commands[0].Assigns; !slices.Equal(got, []string{"A=1", "B='x y'"}) {
		t.Errorf("Assigns of go = %q", got)
	}
	for _, c := range an.Commands[1:] {
		if len(c.Assigns) > 0 {
			t.Errorf("%s has Assigns %q", c.Program, c.Assigns)
		}
	}
	if an.SetsVariables {
		t.Error("SetsVariables for prefix assignments only")
	}
	for _, s := range []string{"PATH=.; go", "export PATH=.", "declare -x A=1", "for PATH in .; do :; done", ": ${A:=1}", "((A=1))"} {
		if !Analyze(s).SetsVariables {
			t.Errorf("%q: SetsVariables false", s)
		}
	}
}
