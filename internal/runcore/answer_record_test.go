package runcore

import (
	"encoding/json"
	"testing"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/tool"
)

// A durable run's recorded answer reads in every form it was written in: the
// text form of a principal (before answerers were typed), a principal
// object in "by", and this version's person name or "principal" object; a
// record written now reads back naming the same answerer.
func TestAwaitRecordAnswerForms(t *testing.T) {
	alice := tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}
	for _, tc := range []struct {
		in   string
		want tool.Principal
	}{
		{`{"answer":{"id":"req_1","ok":false,"by":"runtime","reason":"expired"}}`, approval.Runtime},
		{`{"answer":{"id":"req_1","ok":true,"by":"person:alice"}}`, alice},
		{`{"answer":{"id":"req_1","ok":true,"by":"flag:--approve=yes"}}`, tool.Principal{Kind: tool.PrincipalFlag, Name: "--approve=yes"}},
		{`{"answer":{"id":"req_1","ok":true,"by":{"kind":"runtime"}}}`, approval.Runtime},
		{`{"answer":{"id":"req_1","ok":true,"by":{"kind":"person","name":"alice"}}}`, alice},
		{`{"answer":{"id":"req_1","ok":true,"by":"alice"}}`, alice},
		{`{"answer":{"id":"req_1","ok":true,"principal":{"kind":"hook","name":"gate"}}}`, tool.Principal{Kind: tool.PrincipalHook, Name: "gate"}},
	} {
		var rec awaitRecord
		if err := json.Unmarshal([]byte(tc.in), &rec); err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if rec.Answer == nil || rec.Answer.Who() != tc.want {
			t.Errorf("%s: answer %+v, want it by %s", tc.in, rec.Answer, tc.want)
		}
	}
	for _, ans := range []tool.Answer{
		{ID: "req_1", Principal: approval.Runtime, Reason: usedReason},
		{ID: "req_1", OK: true, By: "runtime"},
		{ID: "req_1", OK: true, By: "bench"},
	} {
		b, err := json.Marshal(awaitRecord{Answer: &ans})
		if err != nil {
			t.Fatal(err)
		}
		var rec awaitRecord
		if err := json.Unmarshal(b, &rec); err != nil || rec.Answer == nil || rec.Answer.Who() != ans.Who() {
			t.Errorf("%s read back as %+v (%v), want it by %s", b, rec.Answer, err, ans.Who())
		}
	}
}
