package records_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/records"
	"github.com/tollgate-dev/tollgate/tool"
)

// An agent governed end to end, then audited: a policy from YAML denies
// reading under secret/ and sends transfers to a person; a BeforeTool hook
// caps the amount; the person answers from another goroutine (as an HTTP
// handler or a chat bot would); and the decision record of every call is
// written as JSON lines and read back.
func ExampleWriter() {
	type readArgs struct {
		Path string `json:"path"`
	}
	type transferArgs struct {
		To     string `json:"to"`
		Amount int    `json:"amount"`
	}
	read := tool.Must("read_file", "read a file", func(ctx context.Context, in readArgs) (string, error) {
		return "contents of " + in.Path, nil
	}, nil)
	transfer := tool.Must("transfer", "move money", func(ctx context.Context, in transferArgs) (string, error) {
		return fmt.Sprintf("sent %d to %s", in.Amount, in.To), nil
	}, nil)

	pol, _, err := policy.ParsePolicy("policy.yaml", strings.NewReader(`
rules:
  - id: no-secrets
    tool: read_file
    args: {path: {prefix: secret/}}
    decision: deny
    reason: secrets stay secret
  - id: review-transfers
    tool: transfer
    decision: ask
    reason: money moves only with a person
`))
	if err != nil {
		panic(err)
	}

	capAmount := (&hooks.Hooks{}).BeforeTool("cap-50", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		var a transferArgs
		if ev.Name != "transfer" || json.Unmarshal(ev.Args, &a) != nil || a.Amount <= 50 {
			return nil, nil
		}
		a.Amount = 50
		b, _ := json.Marshal(a)
		return hooks.Rewrite(b), nil
	})

	// The person: requests in, answers out.
	requests, answers := make(chan tool.Request), make(chan tool.Answer)
	go func() {
		for req := range requests {
			d, _ := approval.ParseRequestData(req) // the tool, arguments and who asked
			fmt.Printf("alice is asked: %s %s (%s)\n", d.Tool, d.Args, d.By)
			answers <- tool.Answer{ID: req.ID, OK: true, By: "alice"}
		}
	}()
	defer close(requests)

	var audit bytes.Buffer
	w := records.NewWriter(&audit, nil)
	turn := 0
	a, err := agent.New(&agent.Options{
		Model: model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
			turn++
			switch turn {
			case 1:
				return model.Reply{ToolCalls: []model.FuncCall{
					{ID: "c1", Name: "read_file", Arguments: json.RawMessage(`{"path":"secret/key.txt"}`)},
					{ID: "c2", Name: "read_file", Arguments: json.RawMessage(`{"path":"docs/readme.md"}`)},
				}}, nil
			case 2:
				return model.Reply{ToolCalls: []model.FuncCall{
					{ID: "c3", Name: "transfer", Arguments: json.RawMessage(`{"to":"bob","amount":100}`)},
				}}, nil
			}
			return model.Reply{Content: "done"}, nil
		}),
		Tools:       agent.ToolList{read, transfer},
		Hooks:       capAmount,
		Authorizers: []approval.Authorizer{pol},
		WaitFor: func(ctx context.Context, req tool.Request) (tool.Answer, error) {
			select {
			case requests <- req:
			case <-ctx.Done():
				return tool.Answer{}, ctx.Err()
			}
			select {
			case ans := <-answers:
				return ans, nil
			case <-ctx.Done():
				return tool.Answer{}, ctx.Err()
			}
		},
		OnRecord:    w.Record,
		MaxParallel: 1, // records in call order, for the output below
	})
	if err != nil {
		panic(err)
	}
	res, err := a.Run(context.Background(), "pay bob")
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, res.Text)

	// The audit trail: one JSON line per call, digests and decisions only.
	sc := bufio.NewScanner(&audit)
	for sc.Scan() {
		var l records.Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			panic(err)
		}
		fmt.Printf("%s %s: %s by %s, ran %v, arguments rewritten %v\n", l.Call, l.Tool, l.Outcome, l.By, l.Ran, l.ArgsDigest != l.RequestedDigest)
	}
	// Output:
	// alice is asked: transfer {"to":"bob","amount":50} (rule:review-transfers)
	// done done
	// c1 read_file: denied by rule:no-secrets, ran false, arguments rewritten false
	// c2 read_file: allowed by runtime:default, ran true, arguments rewritten false
	// c3 transfer: approved by person:alice, ran true, arguments rewritten true
}
