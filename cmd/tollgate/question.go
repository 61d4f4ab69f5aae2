package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tollgate-dev/tollgate/approval/inbox"
	"github.com/tollgate-dev/tollgate/builtin"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// choice turns what a person typed for question q into an answer: a number
// picks that option (1-based), anything else is the person's own words. For
// a question that allows several answers, commas separate them.
func choice(q builtin.Question, typed string) []string {
	parts := []string{typed}
	if q.Multiple {
		parts = strings.Split(typed, ",")
	}
	var out []string
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if n, err := strconv.Atoi(p); err == nil && n >= 1 && n <= len(q.Options) {
			p = q.Options[n-1].Label
		}
		out = append(out, p)
	}
	return out
}

// askQuestions asks the questions of a question request on the terminal,
// one after another. A line of "-" alone declines the request.
func askQuestions(ctx context.Context, w io.Writer, readLine func(context.Context) (string, error), req tool.Request) (tool.Answer, error) {
	qs, err := builtin.ParseQuestions(req)
	if err != nil {
		return tool.Answer{}, err
	}
	fmt.Fprintf(w, "\nthe agent asks (request %s):\n", safeText(req.ID))
	var answers [][]string
	for _, q := range qs {
		// The model's text: a header and labels stay on their line, a
		// question's further lines are marked as continuations.
		if q.Header != "" {
			fmt.Fprintf(w, "[%s] ", oneLineSafe(q.Header))
		}
		fmt.Fprintf(w, "%s\n", markLines(q.Question))
		for i, o := range q.Options {
			fmt.Fprintf(w, "  %d. %s", i+1, oneLineSafe(o.Label))
			if o.Description != "" {
				fmt.Fprintf(w, ": %s", oneLineSafe(o.Description))
			}
			fmt.Fprintln(w)
		}
		hint := "your answer"
		switch {
		case len(q.Options) > 0 && q.Multiple:
			hint = "numbers or words, separated by commas"
		case len(q.Options) > 0:
			hint = "a number or your own words"
		}
		for {
			fmt.Fprintf(w, "%s ('-' declines): ", hint)
			s, err := readLine(ctx)
			if err != nil {
				return tool.Answer{}, err
			}
			if s == "-" {
				return tool.Answer{ID: req.ID, OK: false, Reason: "the user declined to answer", Principal: osPerson()}, nil
			}
			if a := choice(q, s); len(a) > 0 {
				answers = append(answers, a)
				break
			}
		}
	}
	data, err := json.Marshal(map[string][][]string{"answers": answers})
	if err != nil {
		return tool.Answer{}, err
	}
	return tool.Answer{ID: req.ID, OK: true, Data: data, Principal: osPerson()}, nil
}

// newAnswerCmd is `tollgate approvals answer`: the answer to a question
// request (or the value of an input request), stored like an approval.
func newAnswerCmd(state *stateFlags, runID *string, env *cliEnv) *cobra.Command {
	var data string
	var decline, cancel bool
	as := &answerAs{state: state, runID: runID}
	c := &cobra.Command{
		Use:   "answer ID [ANSWER]...",
		Short: "Answer a question request (one ANSWER per question, or --data JSON)",
		Long: `Answer a question request of a halted run, then resume it with 'tollgate resume'.

Give one ANSWER per question, in order: an option's number picks that option,
anything else is your own words; for a question that allows several answers,
separate them with commas. Or give the whole answer as JSON with --data, e.g.
--data '{"answers": [["postgres"], ["auth", "search"]]}'. For a request of
another kind (input), --data is passed to the tool as it is.

An MCP server's request for input (elicitation) is answered the same way,
one ANSWER per field; --decline or --cancel tell the server that instead.`,
		Args: argsUsage(cobra.MinimumNArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			if decline || cancel {
				if decline == cancel || data != "" || len(args) != 1 {
					return usageErr("approvals answer: --decline and --cancel take no ANSWER, --data or each other")
				}
				data = `{"action":"decline"}`
				if cancel {
					data = `{"action":"cancel"}`
				}
			}
			if (data == "") == (len(args) == 1) {
				return usageErr("approvals answer: give either ANSWER arguments or --data, not both or neither")
			}
			return as.decide(c, env, args[0], "answered", "approvals answer", func(a store.Approval) (inbox.Decision, error) {
				raw := json.RawMessage(data)
				if data == "" {
					if a.Kind != tool.KindQuestion {
						return inbox.Decision{}, usageErr("approvals answer: request %s is of kind %q; give the answer with --data", a.ID, a.Kind)
					}
					qs, err := builtin.ParseQuestions(a.Request)
					if err != nil {
						return inbox.Decision{}, withCode(exitError, err)
					}
					if len(args)-1 != len(qs) {
						return inbox.Decision{}, usageErr("approvals answer: request %s asks %d question(s); got %d answer(s)", a.ID, len(qs), len(args)-1)
					}
					var answers [][]string
					for i, q := range qs {
						answers = append(answers, choice(q, args[i+1]))
					}
					if raw, err = json.Marshal(map[string][][]string{"answers": answers}); err != nil {
						return inbox.Decision{}, withCode(exitError, err)
					}
				}
				// The inbox checks the answer: a question's against its
				// questions, an input's value as JSON, an approval's edited
				// arguments against the tool's schema.
				return inbox.Decision{Approve: true, Data: raw}, nil
			})
		},
	}
	as.flags(c, "answered")
	c.Flags().StringVar(&data, "data", "", "the answer as JSON")
	c.Flags().BoolVar(&decline, "decline", false, "decline an MCP server's request for input (the server is told so)")
	c.Flags().BoolVar(&cancel, "cancel", false, "cancel an MCP server's request for input (the server is told so)")
	return c
}

// plainDecision refuses what approve and deny must not record on a: a
// question approved without an answer (the model would be told the user
// gave none: 'approvals answer' answers it), and a deny without a reason
// (the model is told the reason).
func plainDecision(a store.Approval, approve bool, reason string) error {
	if approve && a.Kind == tool.KindQuestion {
		return usageErr("approve: request %s is a question; answer it with 'tollgate approvals answer %s ANSWER...', or decline it with 'tollgate approvals deny --reason WHY'", field(a.ID), field(a.ID))
	}
	if !approve && strings.TrimSpace(reason) == "" {
		return usageErr("deny: --reason is required: the model is told why")
	}
	return nil
}
