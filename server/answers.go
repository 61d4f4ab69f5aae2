package server

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/builtin"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// decisionData returns the data of a decision on a, from the body's
// answer or editedArgs, after the checks that belong to the API: one of
// the two at most, an answer only on a request that takes one, a question
// approved only with an answer (approving one without would tell the model
// "the user gave no answer"), and a deny only with a reason, which the
// model is told. Whether the data fits the request is the inbox's check.
func decisionData(a store.Approval, req serverapi.DecisionRequest, approve bool) (json.RawMessage, *serverapi.Problem) {
	edited, answer := present(req.EditedArgs), present(req.Answer)
	bad := func(detail string) (json.RawMessage, *serverapi.Problem) {
		return nil, &serverapi.Problem{Status: http.StatusBadRequest, Detail: detail}
	}
	switch {
	case !approve && strings.TrimSpace(req.Reason) == "":
		return bad("reason: required to deny; the model is told it")
	case !approve && (edited || answer):
		return bad("editedArgs, answer: only an approval sends them")
	case edited && answer:
		return bad("editedArgs and answer: send one; editedArgs edits an approval's call, answer answers a question")
	case answer && (a.Kind == tool.KindApproval || a.Kind == ""):
		return bad("answer: request " + a.ID + " is an approval; editedArgs edits its arguments")
	case approve && a.Kind == tool.KindQuestion && !answer:
		return bad("answer: required to answer a question; deny with a reason declines it")
	case answer:
		return req.Answer, nil
	case edited:
		return req.EditedArgs, nil
	}
	return nil, nil
}

// present reports whether a JSON field was sent with a value other than
// null.
func present(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s != "" && s != "null"
}

// showQuestions fills v for a request of kind question: its questions,
// and the risk of asking one, which runs nothing (read-only). The
// request's Data is the question tool's input, not an approval's.
func showQuestions(v *serverapi.ApprovalView, a store.Approval) {
	v.Risk = approval.RiskReadOnly
	if qs, err := builtin.ParseQuestions(a.Request); err == nil {
		v.Questions = qs
	}
}
