package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/tollgate-dev/tollgate/mcptool"
	"github.com/tollgate-dev/tollgate/tool"
)

// errElicitCancelled is the person's cancel of an MCP server's elicitation:
// the server is told "cancel", not "decline".
var errElicitCancelled = errors.New("cancelled at the terminal")

// elicitField is one field of a form-mode elicitation's schema, as the
// terminal asks it.
type elicitField struct {
	Type        string `json:"type"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Enum        []any  `json:"enum"`
	Default     any    `json:"default"`
}

// askElicitation asks the person at the terminal what an MCP server asks
// (mcptool.ElicitData): each field of a form in turn (an empty line keeps
// the field's default or leaves it out), or the link of URL mode; then
// accept, decline or cancel.
func askElicitation(ctx context.Context, w io.Writer, readLine func(context.Context) (string, error), req tool.Request, d *mcptool.ElicitData) (tool.Answer, error) {
	printPrompt(w, req.Prompt)
	content := map[string]any{}
	if d.Mode == "form" {
		var s struct {
			Properties map[string]elicitField `json:"properties"`
			Required   []string               `json:"required"`
		}
		if err := json.Unmarshal(d.RequestedSchema, &s); err != nil {
			return tool.Answer{}, fmt.Errorf("the form is unreadable: %v", err)
		}
		names := make([]string, 0, len(s.Properties))
		for n := range s.Properties {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			v, ok, err := askField(ctx, w, readLine, n, s.Properties[n], slices.Contains(s.Required, n))
			if err != nil {
				return tool.Answer{}, err
			}
			if ok {
				content[n] = v
			}
		}
	}
	for {
		fmt.Fprint(w, "[a]ccept, [d]ecline, [c]ancel? ")
		s, err := readLine(ctx)
		if err != nil {
			return tool.Answer{}, err
		}
		switch strings.ToLower(s) {
		case "a", "accept", "y", "yes":
			data, err := json.Marshal(content)
			if err != nil {
				return tool.Answer{}, err
			}
			return tool.Answer{ID: req.ID, OK: true, Data: data, Principal: osPerson()}, nil
		case "d", "decline", "n", "no":
			return tool.Answer{ID: req.ID, OK: false, Reason: "declined at the terminal", Principal: osPerson()}, nil
		case "c", "cancel":
			return tool.Answer{}, errElicitCancelled
		}
	}
}

// askField reads one field's value until it fits the field's type and enum;
// an empty line leaves it out (the server's default applies), unless it is
// required and has no default.
func askField(ctx context.Context, w io.Writer, readLine func(context.Context) (string, error), name string, f elicitField, required bool) (any, bool, error) {
	label := name
	if f.Title != "" {
		label = f.Title + " (" + name + ")"
	}
	fmt.Fprintf(w, "  %s", safeText(label))
	if f.Description != "" {
		fmt.Fprintf(w, ": %s", safeText(f.Description))
	}
	fmt.Fprintf(w, " [%s", safeText(f.Type))
	if len(f.Enum) > 0 {
		fmt.Fprintf(w, ", one of %s", safeText(fmt.Sprint(f.Enum)))
	}
	if f.Default != nil {
		fmt.Fprintf(w, ", default %s", safeText(fmt.Sprint(f.Default)))
	}
	fmt.Fprintln(w, "]")
	for {
		fmt.Fprint(w, "  > ")
		s, err := readLine(ctx)
		if err != nil {
			return nil, false, err
		}
		if s == "" {
			if required && f.Default == nil {
				fmt.Fprintln(w, "  a value is required")
				continue
			}
			return nil, false, nil
		}
		v, err := fieldValue(f, s)
		if err != nil {
			fmt.Fprintf(w, "  %v\n", err)
			continue
		}
		return v, true, nil
	}
}

// fieldValue reads s as a value of f's type, one of its enum if it has one.
func fieldValue(f elicitField, s string) (any, error) {
	var v any = s
	switch f.Type {
	case "integer":
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, errors.New("want a whole number")
		}
		v = n
	case "number":
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, errors.New("want a number")
		}
		v = x
	case "boolean":
		switch strings.ToLower(s) {
		case "y", "yes", "true":
			v = true
		case "n", "no", "false":
			v = false
		default:
			return nil, errors.New("want yes or no")
		}
	}
	if len(f.Enum) > 0 && !slices.ContainsFunc(f.Enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(v) }) {
		return nil, fmt.Errorf("want one of %v", f.Enum)
	}
	return v, nil
}
