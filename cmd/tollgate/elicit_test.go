package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/mcptool"
	"github.com/tollgate-dev/tollgate/tool"
)

// lines returns a readLine that gives ls in turn, then io.EOF-like errors.
func lines(ls ...string) func(context.Context) (string, error) {
	return func(context.Context) (string, error) {
		if len(ls) == 0 {
			return "", errors.New("no more input")
		}
		l := ls[0]
		ls = ls[1:]
		return l, nil
	}
}

// The terminal asks each field of an MCP server's form, keeps a bad value
// from passing, leaves an empty answer to the server's default, and
// accepts, declines or cancels as the person says.
func TestAskElicitation(t *testing.T) {
	d := &mcptool.ElicitData{Server: "docs", Mode: "form", Message: "Which region?",
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"count":{"type":"integer","default":3},"region":{"type":"string","enum":["eu","us"]}},"required":["region"]}`)}
	req := tool.Request{ID: "elicitation_1", Kind: tool.KindInput, Prompt: `MCP server "docs" asks: Which region?`}
	var w strings.Builder
	// count: empty (default); region: "mars" refused, then "us"; accept.
	a, err := askElicitation(context.Background(), &w, lines("", "mars", "us", "a"), req, d)
	if err != nil || !a.OK || string(a.Data) != `{"region":"us"}` || a.Who().Kind != tool.PrincipalPerson {
		t.Fatalf("answer %+v, %v\n%s", a, err, w.String())
	}
	if !strings.Contains(w.String(), "want one of [eu us]") || !strings.Contains(w.String(), "default 3") {
		t.Errorf("the terminal did not show the enum or the default:\n%s", w.String())
	}
	a, err = askElicitation(context.Background(), &w, lines("", "eu", "d"), req, d)
	if err != nil || a.OK {
		t.Errorf("decline: %+v, %v", a, err)
	}
	if _, err = askElicitation(context.Background(), &w, lines("", "eu", "c"), req, d); !errors.Is(err, errElicitCancelled) {
		t.Errorf("cancel: %v", err)
	}
}
