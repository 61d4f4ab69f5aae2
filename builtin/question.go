package builtin

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tollgate-dev/tollgate/tool"
)

// Limits of the question tool's input and of an answer.
const (
	maxQuestions      = 10
	maxOptions        = 20
	maxQuestionText   = 2000     // bytes of a question, header, label or description
	maxAnswerDataSize = 64 << 10 // bytes of an answer's data
)

// QuestionOption is one choice offered with a question.
type QuestionOption struct {
	Label       string `json:"label" jsonschema:"the choice, as the user will see and pick it"`
	Description string `json:"description,omitempty" jsonschema:"what choosing it means"`
}

// Question is one question of the question tool.
type Question struct {
	Question string           `json:"question" jsonschema:"the question, complete and self-contained"`
	Header   string           `json:"header,omitempty" jsonschema:"a short label for the question (a few words)"`
	Options  []QuestionOption `json:"options,omitempty" jsonschema:"choices to offer; the user may also answer in their own words"`
	Multiple bool             `json:"multiple,omitempty" jsonschema:"whether several choices may be picked"`
}

// questionInput is the input of the question tool, and the Data of the
// pending request it makes (kind [tool.KindQuestion]).
type questionInput struct {
	Questions []Question `json:"questions" jsonschema:"the questions to ask, in order"`
}

// questionAnswer is the Data of an answer to a question request: one list of
// answers per question, in order (one element unless the question allows
// several). [ParseQuestionAnswer] also reads the shorter forms it lists.
type questionAnswer struct {
	Answers [][]string `json:"answers"`
}

func (b *builtins) questionTool() (tool.Tool, error) {
	s, err := jsonschema.For[questionInput](nil)
	if err != nil {
		return nil, err
	}
	one, maxQ, maxO, maxT := 1, maxQuestions, maxOptions, maxQuestionText
	qs := s.Properties["questions"]
	qs.MinItems, qs.MaxItems = &one, &maxQ
	q := qs.Items
	q.Properties["question"].MinLength, q.Properties["question"].MaxLength = &one, &maxT
	q.Properties["header"].MaxLength = &maxT
	q.Properties["options"].MaxItems = &maxO
	o := q.Properties["options"].Items
	o.Properties["label"].MinLength, o.Properties["label"].MaxLength = &one, &maxT
	o.Properties["description"].MaxLength = &maxT
	desc := "Ask the user one or more questions and wait for the answers: to clear up an ambiguous request, " +
		"get a preference or a decision, or offer choices. Give options when there are natural choices (the " +
		"user may still answer in their own words); set multiple when several may be picked. The answers come " +
		"back as the result. Do not ask what you can find out yourself."
	return tool.New(toolQuestion, desc, b.question, &tool.FuncOptions{
		Hints:       &tool.Hints{ReadOnly: true},
		InputSchema: s,
		Source:      source,
	})
}

func (b *builtins) question(ctx context.Context, in questionInput) (tool.Result, error) {
	if err := checkQuestions(in.Questions); err != nil {
		return tool.Error(err.Error()), nil
	}
	ans := tool.InvocationFrom(ctx).Answer
	if ans == nil {
		data, err := json.Marshal(in)
		if err != nil {
			return tool.Errorf("question: %v", err), nil
		}
		var r [8]byte
		_, _ = rand.Read(r[:])
		return tool.Pending(tool.Request{
			ID:     "question_" + hex.EncodeToString(r[:]),
			Kind:   tool.KindQuestion,
			Prompt: questionPrompt(in.Questions),
			Data:   data,
		}), nil
	}
	answers, err := ParseQuestionAnswer(in.Questions, ans.Data)
	if err != nil {
		return tool.Errorf("the user's answer could not be read: %v", err), nil
	}
	if answers == nil {
		return tool.Result{Output: "The user gave no answer.", Metadata: map[string]any{"answers": [][]string{}}}, nil
	}
	var out strings.Builder
	for i, q := range in.Questions {
		fmt.Fprintf(&out, "Q: %s\nA: %s\n", q.Question, strings.Join(answers[i], "; "))
	}
	return tool.Result{Output: out.String(), Metadata: map[string]any{"answers": answers}}, nil
}

func checkQuestions(qs []Question) error {
	if len(qs) == 0 || len(qs) > maxQuestions {
		return fmt.Errorf("give between 1 and %d questions (got %d)", maxQuestions, len(qs))
	}
	for i, q := range qs {
		if strings.TrimSpace(q.Question) == "" {
			return fmt.Errorf("questions[%d].question is empty", i)
		}
		if len(q.Options) > maxOptions {
			return fmt.Errorf("questions[%d] has %d options; at most %d", i, len(q.Options), maxOptions)
		}
		for j, o := range q.Options {
			if strings.TrimSpace(o.Label) == "" {
				return fmt.Errorf("questions[%d].options[%d].label is empty", i, j)
			}
		}
	}
	return nil
}

// questionPrompt renders the questions as the request's prompt.
func questionPrompt(qs []Question) string {
	var b strings.Builder
	for i, q := range qs {
		if i > 0 {
			b.WriteByte('\n')
		}
		if q.Header != "" {
			fmt.Fprintf(&b, "[%s] ", q.Header)
		}
		b.WriteString(q.Question)
		for j, o := range q.Options {
			fmt.Fprintf(&b, "\n  %d. %s", j+1, o.Label)
			if o.Description != "" {
				fmt.Fprintf(&b, ": %s", o.Description)
			}
		}
	}
	return b.String()
}

// ParseQuestions returns the questions of a pending request of kind
// [tool.KindQuestion] made by the question tool (its Data is the tool's
// input, {"questions": [...]}). It is what a host shows the user.
func ParseQuestions(req tool.Request) ([]Question, error) {
	if req.Kind != tool.KindQuestion {
		return nil, fmt.Errorf("request %s is of kind %q, not %q", req.ID, req.Kind, tool.KindQuestion)
	}
	var in questionInput
	if err := json.Unmarshal(req.Data, &in); err != nil {
		return nil, fmt.Errorf("request %s: the questions are unreadable: %v", req.ID, err)
	}
	if err := checkQuestions(in.Questions); err != nil {
		return nil, fmt.Errorf("request %s: %v", req.ID, err)
	}
	return in.Questions, nil
}

// ParseQuestionAnswer reads the Data of an answer to the questions qs and
// returns one list of answers per question. It accepts
// {"answers": [["a"], ["b", "c"]]}, the bare list ([["a"], ["b", "c"]]),
// one string per question (["a", "b"]), and for a single question one
// string ("a"). Empty data means no answer (nil, nil). It is an error when
// the number of answers differs from the number of questions, a question
// that does not allow several gets several, an answer is empty, or the data
// exceeds 64 KiB.
func ParseQuestionAnswer(qs []Question, data json.RawMessage) ([][]string, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || bytes.Equal(data, []byte("null")) {
		return nil, nil
	}
	if len(data) > maxAnswerDataSize {
		return nil, fmt.Errorf("the answer is %d bytes; at most %d", len(data), maxAnswerDataSize)
	}
	var answers, lists [][]string
	var wrapped questionAnswer
	var flat []string
	var single string
	switch {
	case json.Unmarshal(data, &wrapped) == nil && wrapped.Answers != nil:
		answers = wrapped.Answers
	case json.Unmarshal(data, &lists) == nil:
		answers = lists
	case json.Unmarshal(data, &flat) == nil:
		for _, s := range flat {
			answers = append(answers, []string{s})
		}
	case json.Unmarshal(data, &single) == nil && len(qs) == 1:
		answers = [][]string{{single}}
	default:
		return nil, errors.New(`want {"answers": [["choice"], ...]} with one list per question`)
	}
	if len(answers) != len(qs) {
		return nil, fmt.Errorf("%d answers for %d questions", len(answers), len(qs))
	}
	for i, a := range answers {
		if len(a) == 0 {
			return nil, fmt.Errorf("answer %d is empty", i+1)
		}
		if len(a) > 1 && !qs[i].Multiple {
			return nil, fmt.Errorf("question %d takes one answer, got %d", i+1, len(a))
		}
		for _, s := range a {
			if strings.TrimSpace(s) == "" {
				return nil, fmt.Errorf("answer %d holds an empty choice", i+1)
			}
		}
	}
	return answers, nil
}
