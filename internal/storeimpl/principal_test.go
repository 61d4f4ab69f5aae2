package storeimpl_test

import (
	"testing"

	"github.com/tollgate-dev/tollgate/internal/storeimpl"
	"github.com/tollgate-dev/tollgate/tool"
)

func TestPrincipalsFromText(t *testing.T) {
	person := func(n string) tool.Principal { return tool.Principal{Kind: tool.PrincipalPerson, Name: n} }
	for _, tc := range []struct {
		by, actor string
		wantBy    tool.Principal
		wantActor tool.Principal
	}{
		{"", "", tool.Principal{}, tool.Principal{}},
		{"person:alice", "", person("alice"), tool.Principal{}},
		{"person:alice", "person:root", person("alice"), person("root")},
		{"flag:--approve=yes", "", tool.Principal{Kind: tool.PrincipalFlag, Name: "--approve=yes"}, tool.Principal{}},
		{"runtime", "", tool.Principal{Kind: tool.PrincipalRuntime}, tool.Principal{}},
		// Written before principals were typed.
		{"alice", "", person("alice"), tool.Principal{}},
		{"uid:1000", "", person("uid:1000"), tool.Principal{}},
		{"alice (by root with --admin)", "", person("alice"), person("root")},
		{"person:bob (by root with --admin)", "", person("bob (by root with --admin)"), tool.Principal{}},
		// A name that only looks like the old form is a name: new rows
		// always start with a kind.
		{"person:x (by y with --admin)", "", person("x (by y with --admin)"), tool.Principal{}},
	} {
		by, actor := storeimpl.PrincipalsFromText(tc.by, tc.actor)
		if by != tc.wantBy || actor != tc.wantActor {
			t.Errorf("PrincipalsFromText(%q, %q) = %+v, %+v; want %+v, %+v", tc.by, tc.actor, by, actor, tc.wantBy, tc.wantActor)
		}
	}
}

// FuzzPrincipalText: every principal a store accepts reads back from its
// text columns as it was written.
func FuzzPrincipalText(f *testing.F) {
	f.Add("person", "alice", "person", "root")
	f.Add("person", "alice (by root with --admin)", "", "")
	f.Add("rule", "shell:opaque", "", "")
	f.Add("runtime", "", "", "")
	f.Add("flag", "--approve=yes", "person", "")
	f.Fuzz(func(t *testing.T, byKind, byName, actorKind, actorName string) {
		by := tool.Principal{Kind: tool.PrincipalKind(byKind), Name: byName}
		actor := tool.Principal{Kind: tool.PrincipalKind(actorKind), Name: actorName}
		if !by.Kind.Valid() || (!actor.IsZero() && !actor.Kind.Valid()) {
			return
		}
		gotBy, gotActor := storeimpl.PrincipalsFromText(storeimpl.PrincipalText(by), storeimpl.PrincipalText(actor))
		if gotBy != by || gotActor != actor {
			t.Fatalf("(%+v, %+v) read back as (%+v, %+v)", by, actor, gotBy, gotActor)
		}
	})
}
