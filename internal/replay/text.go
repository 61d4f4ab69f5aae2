package replay

import (
	"fmt"
	"io"
	"strconv"
)

// WriteText writes r for a person: the totals, then each change with its
// examples, one line each. Text from the records (arguments) is quoted, so
// that no control character reaches the terminal as it is.
func WriteText(w io.Writer, r Report) error {
	_, err := fmt.Fprintf(w, "replayed %d call(s) of %d run(s) against %s: %d unchanged, %d changed\n",
		r.Calls, r.Runs, r.Policy, r.Unchanged, r.Calls-r.Unchanged)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "approvals saved: %d (of which a person had declined %d); approvals added: %d\n", r.ApprovalsSaved, r.SavedDeclined, r.ApprovalsAdded)
	for _, c := range r.Changes {
		fmt.Fprintf(w, "\n%s -> %s: %d\n", c.From, c.To, c.Count)
		for _, e := range c.Examples {
			was := e.WasBy
			if was == "" {
				was = "runtime:default"
			}
			fmt.Fprintf(w, "  %s %s %s %s: was %s (%s), now %s\n", e.RunID, strconv.Quote(e.CallID), strconv.Quote(e.Tool), strconv.Quote(e.Args), was, e.Outcome, e.By)
		}
	}
	if len(r.Shadow) > 0 {
		fmt.Fprintf(w, "\nshadow rules (decide nothing; how often they would have voted):\n")
		for _, sc := range r.Shadow {
			fmt.Fprintf(w, "  %s %s: %d\n", sc.Rule, sc.Decision, sc.Count)
		}
	}
	return nil
}
