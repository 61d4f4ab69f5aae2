package approval_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/tool"
)

func TestPrincipalJSON(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want tool.Principal
	}{
		{`{"kind":"rule","name":"no-rm"}`, tool.Principal{Kind: tool.PrincipalRule, Name: "no-rm"}},
		{`{"kind":"runtime"}`, approval.Runtime},
		// The text form written before principals were typed.
		{`"rule:no-rm"`, tool.Principal{Kind: tool.PrincipalRule, Name: "no-rm"}},
		{`"flag:--approve=yes"`, tool.Principal{Kind: tool.PrincipalFlag, Name: "--approve=yes"}},
		{`"runtime"`, approval.Runtime},
		{`"default"`, approval.Default},
		{`"rule:shell:opaque"`, tool.Principal{Kind: tool.PrincipalRule, Name: "shell:opaque"}},
		{`"alice"`, tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}},
		{`"parent/rule:x"`, tool.Principal{Kind: tool.PrincipalPerson, Name: "parent/rule:x"}},
	} {
		var got tool.Principal
		if err := json.Unmarshal([]byte(tc.in), &got); err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.in, diff)
		}
		b, _ := json.Marshal(got)
		var back tool.Principal
		if err := json.Unmarshal(b, &back); err != nil || back != got {
			t.Errorf("%s: round trip through %s gave %+v, %v", tc.in, b, back, err)
		}
	}
	for _, bad := range []string{`{"kind":"god","name":"x"}`, `42`, `"` + strings.Repeat("a", 5000) + `"`} {
		var p tool.Principal
		if err := json.Unmarshal([]byte(bad), &p); err == nil {
			t.Errorf("%.40s: no error, got %+v", bad, p)
		}
	}
}

func TestPrincipalEncodesAsObject(t *testing.T) {
	b, err := json.Marshal(approval.Verdict{Decision: approval.Deny, By: tool.Principal{Kind: tool.PrincipalRule, Name: "no-rm"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"decision":"deny","by":{"kind":"rule","name":"no-rm"}}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
}
