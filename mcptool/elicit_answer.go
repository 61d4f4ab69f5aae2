package mcptool

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tollgate-dev/tollgate/builtin"
)

// maxElicitQuestions is how many fields a form may have to be asked as
// questions: the question tool's limit.
const maxElicitQuestions = 10

// elicitSchema reads a form's requested schema and returns it with the
// names of its fields, sorted (the order a JSON object's keys arrive in is
// not kept).
func elicitSchema(raw json.RawMessage) (*jsonschema.Schema, []string, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return &jsonschema.Schema{Type: "object"}, nil, nil
	}
	if len(raw) > maxElicitSchemaBytes {
		return nil, nil, fmt.Errorf("requestedSchema is %d bytes; at most %d", len(raw), maxElicitSchemaBytes)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, nil, fmt.Errorf("requestedSchema: %v", err)
	}
	var names []string
	for name, p := range s.Properties {
		if p != nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return &s, names, nil
}

// elicitQuestions returns the fields of a form-mode elicitation's requested
// schema (MCP specification 2025-11-25, "Elicitation: Requested schema") as
// the question tool's questions ([builtin.Question]), one per field in the
// order of the fields' names: the question is the field's title or name
// with its description, its default (SEP-1034) and, for numbers and
// booleans, what to type; the options are the field's enum values
// (SEP-1330: enum, oneOf or anyOf of const with title; for an array,
// those of its items, with several answers allowed) or yes and no. It
// fails for a form of no field or more than 10, which are not asked as
// questions.
func elicitQuestions(schema json.RawMessage) ([]builtin.Question, error) {
	s, names, err := elicitSchema(schema)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 || len(names) > maxElicitQuestions {
		return nil, fmt.Errorf("a form of %d fields is not asked as questions (1 to %d are)", len(names), maxElicitQuestions)
	}
	var qs []builtin.Question
	for _, name := range names {
		qs = append(qs, fieldQuestion(name, s.Properties[name], slices.Contains(s.Required, name)))
	}
	return qs, nil
}

func fieldQuestion(name string, p *jsonschema.Schema, required bool) builtin.Question {
	text := printable(cmp.Or(p.Title, name))
	if p.Description != "" {
		text += ": " + printable(p.Description)
	}
	switch p.Type {
	case "integer":
		text += " (a whole number)"
	case "number":
		text += " (a number)"
	}
	if len(p.Default) > 0 {
		text += " (default " + printable(string(p.Default)) + ")"
	}
	if !required {
		text += " (optional)"
	}
	q := builtin.Question{Question: text, Header: printable(name)}
	choices := p
	if p.Type == "array" && p.Items != nil {
		q.Multiple, choices = true, p.Items
	}
	for _, c := range enumOf(choices) {
		q.Options = append(q.Options, builtin.QuestionOption{Label: printable(c.value), Description: printable(c.title)})
	}
	if p.Type == "boolean" {
		q.Options = []builtin.QuestionOption{{Label: "yes"}, {Label: "no"}}
	}
	return q
}

type enumChoice struct{ value, title string }

// enumOf returns the string choices of s: its enum, or the consts of its
// oneOf or anyOf with their titles (SEP-1330).
func enumOf(s *jsonschema.Schema) []enumChoice {
	var out []enumChoice
	for _, v := range s.Enum {
		if str, ok := v.(string); ok {
			out = append(out, enumChoice{value: str})
		}
	}
	for _, alt := range append(slices.Clone(s.OneOf), s.AnyOf...) {
		if alt == nil || alt.Const == nil {
			continue
		}
		if str, ok := (*alt.Const).(string); ok {
			out = append(out, enumChoice{value: str, title: alt.Title})
		}
	}
	return out
}

// ElicitAnswer reads the data of an answer to the pending request an
// elicitation d became, and returns the action the server is told and,
// for accept, the form's content. The action is "accept", "decline" or
// "cancel" (MCP specification 2025-11-25). The data, at most 64 KiB, is
// one of:
//
//   - {"action": "decline"} or {"action": "cancel"};
//   - {"action": "accept", "content": {...}}: the form's content, the
//     fields left out taking their defaults;
//   - the answers to its questions, in a form [builtin.ParseQuestionAnswer]
//     reads, each turned into its field's type (a number, yes or no, a list
//     of choices);
//   - nothing: accept, with the form's defaults.
//
// The content must fit the requested schema, defaults applied. Errors say
// which field and why.
func ElicitAnswer(d *ElicitData, data json.RawMessage) (action string, content map[string]any, err error) {
	data = bytes.TrimSpace(data)
	if len(data) > maxElicitAnswerBytes {
		return "", nil, fmt.Errorf("the answer is %d bytes; at most %d", len(data), maxElicitAnswerBytes)
	}
	var act struct {
		Action  *string         `json:"action"`
		Content json.RawMessage `json:"content"`
	}
	if len(data) > 0 && data[0] == '{' && json.Unmarshal(data, &act) == nil && act.Action != nil {
		switch *act.Action {
		case elicitDecline, elicitCancel:
			if len(act.Content) > 0 && string(act.Content) != "null" {
				return "", nil, fmt.Errorf("content: only an accept has content")
			}
			return *act.Action, nil, nil
		case elicitAccept:
			data = act.Content
		default:
			return "", nil, fmt.Errorf("action %q: want accept, decline or cancel", *act.Action)
		}
		content, err = elicitContent(data)
	} else {
		content, err = questionContent(d, data)
	}
	if err != nil {
		return "", nil, err
	}
	if d.Mode == "url" {
		return elicitAccept, nil, nil
	}
	if err := fitForm(d.RequestedSchema, content); err != nil {
		return "", nil, err
	}
	return elicitAccept, content, nil
}

// questionContent turns the answers to d's questions into the form's
// content.
func questionContent(d *ElicitData, data json.RawMessage) (map[string]any, error) {
	content := map[string]any{}
	if len(data) == 0 || string(data) == "null" || d.Mode == "url" {
		return content, nil
	}
	s, names, err := elicitSchema(d.RequestedSchema)
	if err != nil {
		return nil, err
	}
	qs, err := elicitQuestions(d.RequestedSchema)
	if err != nil {
		return nil, fmt.Errorf("%v: give the content as {\"action\": \"accept\", \"content\": {...}}", err)
	}
	answers, err := builtin.ParseQuestionAnswer(qs, data)
	if err != nil {
		return nil, err
	}
	for i, name := range names {
		v, err := fieldValue(s.Properties[name], answers[i])
		if err != nil {
			return nil, fmt.Errorf("field %q: %v", name, err)
		}
		content[name] = v
	}
	return content, nil
}

// fieldValue turns a person's typed answer into a value of p's type.
func fieldValue(p *jsonschema.Schema, typed []string) (any, error) {
	if p.Type == "array" {
		items := p.Items
		if items == nil {
			items = &jsonschema.Schema{}
		}
		out := []any{}
		for _, s := range typed {
			if err := inEnum(items, s); err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	if len(typed) != 1 {
		return nil, fmt.Errorf("takes one answer, got %d", len(typed))
	}
	s := strings.TrimSpace(typed[0])
	switch p.Type {
	case "integer":
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a whole number", s)
		}
		return n, nil
	case "number":
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", s)
		}
		return f, nil
	case "boolean":
		switch strings.ToLower(s) {
		case "yes", "y", "true":
			return true, nil
		case "no", "n", "false":
			return false, nil
		}
		return nil, fmt.Errorf("%q: answer yes or no", s)
	}
	if err := inEnum(p, s); err != nil {
		return nil, err
	}
	return typed[0], nil
}

// inEnum checks s against the choices of p, if it has any.
func inEnum(p *jsonschema.Schema, s string) error {
	choices := enumOf(p)
	if len(choices) == 0 {
		return nil
	}
	var names []string
	for _, c := range choices {
		if c.value == s {
			return nil
		}
		names = append(names, strconv.Quote(c.value))
	}
	return fmt.Errorf("%q is not one of %s", s, strings.Join(names, ", "))
}

// fitForm checks content against the requested schema with its defaults
// applied, as the SDK will before it sends it.
func fitForm(schema json.RawMessage, content map[string]any) error {
	s, _, err := elicitSchema(schema)
	if err != nil {
		return err
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return fmt.Errorf("requestedSchema: %v", err)
	}
	c := maps.Clone(content)
	if c == nil {
		c = map[string]any{}
	}
	if err := r.ApplyDefaults(&c); err != nil {
		return fmt.Errorf("the form's defaults: %v", err)
	}
	// Validate the content as JSON would carry it (integers as numbers).
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if err := r.Validate(v); err != nil {
		return errors.New("the answer does not fit the form: " + err.Error())
	}
	return nil
}
