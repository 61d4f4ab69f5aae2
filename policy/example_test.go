package policy_test

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/tool"
)

// A policy file with an autonomy level and two rules, judging three calls.
func ExamplePolicy() {
	src := `
autonomy: supervised
rules:
  - id: no-etc
    tool: "*_file"
    args:
      path: {pathPrefix: /etc}
    decision: deny
    reason: /etc is off limits
  - id: ask-network
    risk: network
    decision: ask
    reason: the network needs a person
`
	p, problems, err := policy.ParsePolicy("policy.yaml", strings.NewReader(src))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("problems:", len(problems))
	for _, c := range []approval.Call{
		{Tool: "read_file", Args: json.RawMessage(`{"path":"notes.txt"}`), Hints: &tool.Hints{ReadOnly: true}},
		{Tool: "read_file", Args: json.RawMessage(`{"path":"/etc/shadow"}`), Hints: &tool.Hints{ReadOnly: true}},
		{Tool: "fetch", Args: json.RawMessage(`{"url":"https://example.com"}`), Hints: &tool.Hints{ReadOnly: true, OpenWorld: true}},
	} {
		v := p.Evaluate(c).Verdict
		fmt.Printf("%s %s: %s by %s (%s)\n", c.Tool, c.Args, v.Decision, v.By, v.Reason)
	}
	// Output:
	// problems: 0
	// read_file {"path":"notes.txt"}: allow by autonomy:supervised (read_only risk at autonomy supervised: allow)
	// read_file {"path":"/etc/shadow"}: deny by rule:no-etc (/etc is off limits)
	// fetch {"url":"https://example.com"}: ask by rule:ask-network (the network needs a person)
}
