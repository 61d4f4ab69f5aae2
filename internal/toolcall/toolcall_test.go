package toolcall

import (
	"context"
	"testing"

	"github.com/tollgate-dev/tollgate/tool"
)

type nopReporter struct{}

func (nopReporter) Progress(tool.Progress) {}
func (nopReporter) Notice(tool.Notice)     {}

// Each setter copies the invocation: what it sets reaches the derived
// context only, and the other fields are kept.
func TestSettersCopy(t *testing.T) {
	base := With(context.Background(), &tool.Invocation{CallID: "c1"})
	rep := WithReporter(base, nopReporter{})
	ans := WithAnswer(rep, tool.Answer{ID: "req_1", OK: true})
	got := tool.InvocationFrom(ans)
	if got.CallID != "c1" || got.Reporter == nil || got.Answer == nil || got.Answer.ID != "req_1" {
		t.Fatalf("invocation %+v", got)
	}
	if b := tool.InvocationFrom(base); b.Reporter != nil || b.Answer != nil {
		t.Fatalf("the parent's invocation changed: %+v", b)
	}
	if w := tool.InvocationFrom(Without(ans)); w.CallID != "" || w.Answer != nil || w.Reporter != nil {
		t.Fatalf("Without kept %+v", w)
	}
}
