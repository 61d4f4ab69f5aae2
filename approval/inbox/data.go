package inbox

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/builtin"
	"github.com/tollgate-dev/tollgate/internal/argcheck"
	"github.com/tollgate-dev/tollgate/mcptool"
	"github.com/tollgate-dev/tollgate/tool"
)

// CheckData reports whether data can answer req, by the request's kind:
//
//   - an approval (tool.KindApproval): data, when present, is the call's
//     edited arguments: a JSON object that fits the tool's input schema
//     held in the request (approval.RequestData.Schema). A request with no
//     schema (a hook's, or one stored before schemas were) takes any
//     object; the agent validates the arguments again when the run goes on,
//     but an edit that fails then has used the approval up;
//   - a question (tool.KindQuestion): data is the answer to its questions,
//     as builtin.ParseQuestionAnswer reads it; empty data is no answer;
//   - an MCP server's elicitation (a question, input or authorization
//     request whose Data is an mcptool.ElicitData): data is read by
//     mcptool.ElicitAnswer against the server's form (the answers to its
//     questions, the content, or a decline or cancel);
//   - any other kind (input): data, when present, is a JSON value, given to
//     the tool as it is.
//
// The error is a [*DataError].
func CheckData(req tool.Request, data json.RawMessage) error {
	if d, err := mcptool.ParseElicitData(req); err == nil && req.Kind != tool.KindApproval {
		if _, _, err := mcptool.ElicitAnswer(d, bytes.TrimSpace(data)); err != nil {
			return &DataError{Kind: req.Kind, What: "the answer to MCP server " + strconv.Quote(d.Server), Problems: []string{err.Error()}}
		}
		return nil
	}
	switch req.Kind {
	case tool.KindApproval:
		return checkEdit(req, data)
	case tool.KindQuestion:
		return checkAnswer(req, data)
	}
	if len(data) > 0 && !json.Valid(data) {
		return &DataError{Kind: req.Kind, What: "the value", Problems: []string{"not JSON"}}
	}
	return nil
}

// checkEdit validates edited arguments against the input schema the
// request carries (what the person was shown).
func checkEdit(req tool.Request, data json.RawMessage) error {
	if len(data) == 0 {
		return nil
	}
	var obj map[string]any
	if err := json.Unmarshal(data, &obj); err != nil || obj == nil {
		return &DataError{Kind: req.Kind, What: "the edited arguments",
			Problems: []string{"not a JSON object: the whole new arguments of the call"}}
	}
	rd, err := approval.ParseRequestData(req)
	if err != nil || rd.Schema == nil {
		return nil // a hook's request, or one stored before schemas were recorded
	}
	v, err := argcheck.New(rd.Schema)
	if err != nil {
		return &DataError{Kind: req.Kind, What: "the tool's input schema", Problems: []string{"does not resolve: " + err.Error()}}
	}
	if err := v.Validate(data); err != nil {
		return &DataError{Kind: req.Kind, What: "the arguments do not fit " + rd.Tool + "'s input schema",
			Problems: strings.Split(strings.TrimSpace(err.Error()), "\n")}
	}
	return nil
}

// checkAnswer validates the answer to a question request.
func checkAnswer(req tool.Request, data json.RawMessage) error {
	qs, err := builtin.ParseQuestions(req)
	if err != nil {
		return &DataError{Kind: req.Kind, What: "the questions", Problems: []string{err.Error()}}
	}
	if _, err := builtin.ParseQuestionAnswer(qs, bytes.TrimSpace(data)); err != nil {
		return &DataError{Kind: req.Kind, What: "the answer", Problems: []string{err.Error()}}
	}
	return nil
}
