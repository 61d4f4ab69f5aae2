package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/builtin"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// questionModel asks two questions with the question tool (the first with
// options, the second with several answers allowed), then says as its
// final text the tool result it was given: what reached the model.
func questionModel() model.Model {
	return model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
		if testkit.Turn(req) == 0 {
			return model.Reply{ToolCalls: []model.FuncCall{testkit.Call("q1", "question", map[string][]builtin.Question{"questions": {
				{Question: "Which colour?", Header: "Colour", Options: []builtin.QuestionOption{{Label: "Blue"}, {Label: "Green", Description: "the calm one"}}},
				{Question: "Which days?", Options: []builtin.QuestionOption{{Label: "Mon"}, {Label: "Tue"}}, Multiple: true},
			}})}}, nil
		}
		last := req.Messages[len(req.Messages)-1]
		return model.Reply{Content: "saw: " + last.Content}, nil
	})
}

// questionTool is the builtin question tool.
func questionTool(t testing.TB) tool.Tool {
	t.Helper()
	ts, err := builtin.New(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range ts {
		if x.Spec().Name == "question" {
			return x
		}
	}
	t.Fatal("no question tool")
	return nil
}

// A question from the model is shown as its questions, read-only, and is
// answered over the API with an option and the person's own words: the
// model is told both. Approving it without an answer, an answer that does
// not fit, an answer with edited arguments, and a deny without a reason are
// refused before anything is recorded; another tenant does not see it.
func TestAnswerQuestion(t *testing.T) {
	f := newFixture(t, nil, questionModel(), nil, questionTool(t))
	id := f.startRun()
	a := f.pending(id)
	if a.Kind != tool.KindQuestion || len(a.Questions) != 2 || a.Questions[0].Question != "Which colour?" ||
		len(a.Questions[0].Options) != 2 || !a.Questions[1].Multiple || a.Risk != approval.RiskReadOnly {
		t.Fatalf("question view: %+v", a)
	}
	post := func(token string, req serverapi.DecisionRequest) (int, serverapi.Problem) {
		var prob serverapi.Problem
		return f.do("POST", "/v1/approvals/"+a.ID+"/decision", token, req, &prob), prob
	}
	for _, c := range []struct {
		name string
		req  serverapi.DecisionRequest
		code int
	}{
		{"approve without an answer", serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest}, http.StatusBadRequest},
		{"deny without a reason", serverapi.DecisionRequest{Decision: "deny", Reason: "  "}, http.StatusBadRequest},
		{"an answer on deny", serverapi.DecisionRequest{Decision: "deny", Reason: "no", Answer: []byte(`["Blue","Mon"]`)}, http.StatusBadRequest},
		{"answer and editedArgs", serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest, Answer: []byte(`["Blue","Mon"]`), EditedArgs: []byte(`{}`)}, http.StatusBadRequest},
		{"one answer for two questions", serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest, Answer: []byte(`["Blue"]`)}, http.StatusUnprocessableEntity},
		{"two answers to a single-answer question", serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest, Answer: []byte(`[["Blue","Green"],["Mon"]]`)}, http.StatusUnprocessableEntity},
	} {
		if code, prob := post(aliceToken, c.req); code != c.code {
			t.Errorf("%s: %d %+v, want %d", c.name, code, prob, c.code)
		}
	}
	if code, _ := post(bobToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest, Answer: []byte(`["Blue","Mon"]`)}); code != http.StatusNotFound {
		t.Fatalf("another tenant's answer: %d, want 404", code)
	}
	if got := f.pending(id); got.Status != store.StatusPending {
		t.Fatalf("after refused answers the request is %s", got.Status)
	}
	var got serverapi.ApprovalView
	ans := []byte(`{"answers":[["Blue"],["Mon","every other Friday"]]}`)
	if code := f.do("POST", "/v1/approvals/"+a.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest, Answer: ans}, &got); code != http.StatusOK {
		t.Fatalf("answer: %d %+v", code, got)
	}
	f.waitRun(id, store.RunDone)
	var run serverapi.RunView
	f.do("GET", "/v1/runs/"+id, aliceToken, nil, &run)
	if want := "saw: Q: Which colour?\nA: Blue\nQ: Which days?\nA: Mon; every other Friday\n"; run.Text != want {
		t.Fatalf("the model saw %q, want %q", run.Text, want)
	}
}

// Over the WebSocket, an "answer" message answers a question as the HTTP
// API does, and a "deny" without a reason is refused.
func TestAnswerQuestionWebSocket(t *testing.T) {
	f := newFixture(t, nil, questionModel(), nil, questionTool(t))
	id := f.startRun()
	a := f.pending(id)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	url := "ws" + strings.TrimPrefix(f.ts.URL, "http") + "/v1/ws?run=" + id
	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + aliceToken}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	reply := func(ref string) serverapi.WSMessage {
		for {
			var m serverapi.WSMessage
			if err := wsjson.Read(ctx, c, &m); err != nil {
				t.Fatal(err)
			}
			if m.Ref == ref {
				return m
			}
		}
	}
	_ = wsjson.Write(ctx, c, map[string]any{"v": 1, "type": "deny", "ref": "d", "id": a.ID})
	if m := reply("d"); m.Type != "error" || m.Problem.Status != http.StatusBadRequest || !strings.Contains(m.Problem.Detail, "reason") {
		t.Fatalf("deny without a reason: %+v", m)
	}
	_ = wsjson.Write(ctx, c, map[string]any{"v": 1, "type": "answer", "ref": "a", "id": a.ID, "argsDigest": a.ArgsDigest, "answer": []string{"Green", "Tue"}})
	if m := reply("a"); m.Type != "result" || m.Approval == nil || m.Approval.Status != store.StatusApproved {
		t.Fatalf("answer: %+v", m)
	}
	f.waitRun(id, store.RunDone)
	var run serverapi.RunView
	f.do("GET", "/v1/runs/"+id, aliceToken, nil, &run)
	if !strings.Contains(run.Text, "A: Green\n") || !strings.Contains(run.Text, "A: Tue\n") {
		t.Fatalf("the model saw %q", run.Text)
	}
}
