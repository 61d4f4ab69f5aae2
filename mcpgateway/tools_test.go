package mcpgateway_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/mcpgateway"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/tool"
)

// noteTool is a gateway's own tool: note {text} answers "noted: TEXT".
func noteTool(t *testing.T) tool.Tool {
	t.Helper()
	nt, err := tool.New("note", "takes a note", func(_ context.Context, in textIn) (string, error) { return "noted: " + in.Text, nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	return nt
}

// The gateway's own tools are served under their own names beside the
// upstream's, which are then prefixed; the policy governs them by those
// names, and their calls are recorded.
func TestOwnToolsBesideUpstreams(t *testing.T) {
	f := setup(t, nil, &mcpgateway.Options{Tools: []tool.Tool{noteTool(t)}}, nil)
	res, err := f.client.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, "note") || !slices.Contains(names, "up__echo") || slices.Contains(names, "echo") {
		t.Errorf("tools/list = %v, want note and up__echo", names)
	}
	if r := call(t, f.client, "note", map[string]any{"text": "x"}); r.IsError || text(r) != "noted: x" {
		t.Errorf("note: %q", text(r))
	}
	if rec := f.records.last(t, "note"); !rec.Ran || rec.Decision.Outcome != gate.OutcomeAllowed {
		t.Errorf("record of note: ran %v, %s", rec.Ran, rec.Decision.Outcome)
	}
	if r := call(t, f.client, "up__echo", map[string]any{"text": "y"}); r.IsError || text(r) != "echo: y" {
		t.Errorf("up__echo: %q", text(r))
	}
}

// With tools and no MCP servers, the gateway serves those; a rule on a
// tool's name denies it; tools it could not name are refused.
func TestOwnToolsAlone(t *testing.T) {
	pol, err := policy.NewPolicy(policy.PolicySpec{Name: "p", Rules: []policy.Rule{
		{ID: "no-secret-notes", Tools: []string{"note"}, Args: []policy.ArgCondition{{Field: "text", Prefix: "secret"}}, Decision: approval.Deny, Reason: "no secrets in notes"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := mcpgateway.New(t.Context(), nil, &mcpgateway.Options{Tools: []tool.Tool{noteTool(t)}, Gate: gate.Options{Authorizers: []approval.Authorizer{pol}}})
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, gw, nil)
	if r := call(t, cs, "note", map[string]any{"text": "secret plans"}); !r.IsError || !strings.Contains(text(r), "no secrets in notes") {
		t.Errorf("note with a secret: %q, want refused", text(r))
	}
	if r := call(t, cs, "note", map[string]any{"text": "hi"}); r.IsError {
		t.Errorf("note: %q", text(r))
	}
	if _, err := mcpgateway.New(t.Context(), nil, nil); err == nil {
		t.Error("a gateway with neither servers nor tools was made")
	}
	bad, err := tool.New("a__b", "", func(context.Context, textIn) (string, error) { return "", nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mcpgateway.New(t.Context(), nil, &mcpgateway.Options{Tools: []tool.Tool{bad}}); err == nil || !strings.Contains(err.Error(), "__") {
		t.Errorf("a tool named a__b: %v, want refused", err)
	}
}
