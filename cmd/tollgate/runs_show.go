package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// printRunSummary prints d as `tollgate runs show` does without --json: the
// run, then each tool call with its decision, who decided and how long it
// took, the requests it waits for and the answer.
func printRunSummary(w io.Writer, d runDetail) error {
	s := summarize(store.Run{ID: d.ID, Status: d.Status, Owner: d.Owner, Config: d.Config, CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt})
	fmt.Fprintf(w, "run %s: %s\n", field(d.ID), d.Status)
	if s.Model != "" {
		fmt.Fprintf(w, "model: %s\nworkdir: %s\n", field(s.Model), field(s.Workdir))
	}
	if d.Owner != "" {
		fmt.Fprintf(w, "owner: %s\n", field(d.Owner))
	}
	fmt.Fprintf(w, "started: %s; updated: %s\n", d.CreatedAt.Local().Format(time.DateTime), d.UpdatedAt.Local().Format(time.DateTime))
	var res agent.Result
	if len(d.Result) > 0 && json.Unmarshal(d.Result, &res) == nil {
		fmt.Fprintf(w, "turns: %d; tool calls: %d\n", res.Turns, len(res.ToolCalls))
		if len(res.ToolCalls) > 0 {
			tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "  CALL\tTOOL\tDECISION\tBY\tTOOK")
			for _, c := range res.ToolCalls {
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", field(c.ID), field(c.Name), callOutcome(c), field(c.Decision.By.String()), took(c.Duration))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		for _, p := range res.Pending {
			fmt.Fprintf(w, "waits for: %s (%s): %s\n", field(p.ID), field(string(p.Kind)), oneLine(p.Prompt, 200))
		}
		if res.Text != "" {
			fmt.Fprintf(w, "answer: %s\n", oneLine(res.Text, 300))
		}
		if res.Reason != "" {
			fmt.Fprintf(w, "reason: %s\n", oneLine(res.Reason, 300))
		}
	}
	fmt.Fprintf(w, "events: %d (all of it: tollgate runs show --json %s)\n", len(d.Events), field(d.ID))
	return nil
}

// took prints a duration for people: milliseconds under a second, else
// seconds with one decimal.
func took(d time.Duration) string {
	if d < time.Second {
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
}

// callOutcome is c's outcome as the summary says it: a question a person
// let go on was answered, not approved (as `tollgate run` prints it).
func callOutcome(c gate.Record) string {
	if c.Name == "question" && c.Decision.Outcome == gate.OutcomeApproved && c.Decision.By.Kind == tool.PrincipalPerson {
		return "answered"
	}
	return string(c.Decision.Outcome)
}
