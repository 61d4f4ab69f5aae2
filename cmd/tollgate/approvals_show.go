package main

import (
	"fmt"
	"io"
	"time"

	"github.com/tollgate-dev/tollgate/store"
)

// approvalJSON is an approval request as `tollgate approvals show --json`
// and `list --json` print it: the store's record, its digest named
// argsDigest as in the HTTP API.
type approvalJSON struct {
	store.Approval
	// Digest hides the record's "digest" (same name, shallower, empty).
	Digest     string `json:"digest,omitempty"`
	ArgsDigest string `json:"argsDigest"`
}

// approvalsJSON returns as for printing as JSON (never null).
func approvalsJSON(as []store.Approval) []approvalJSON {
	out := make([]approvalJSON, 0, len(as))
	for _, a := range as {
		out = append(out, approvalJSON{Approval: a, ArgsDigest: a.Digest})
	}
	return out
}

// printApproval prints a as `tollgate approvals show` does without --json.
func printApproval(w io.Writer, a store.Approval) {
	fmt.Fprintf(w, "request %s (%s): %s\n", field(a.ID), field(string(a.Kind)), a.Status)
	fmt.Fprintf(w, "run: %s; call: %s; tool: %s\n", field(a.RunID), field(a.CallID), field(a.Tool))
	fmt.Fprintf(w, "prompt: %s\n", oneLine(a.Prompt, 500))
	if a.Digest != "" {
		fmt.Fprintf(w, "argsDigest: %s\n", field(a.Digest))
	}
	fmt.Fprintf(w, "asked: %s\n", a.CreatedAt.Local().Format(time.DateTime))
	if a.ExpiresAt != nil {
		fmt.Fprintf(w, "expires: %s\n", a.ExpiresAt.Local().Format(time.DateTime))
	}
	if !a.DecidedBy.IsZero() {
		line := "decided by: " + field(a.DecidedBy.String())
		if !a.Actor.IsZero() {
			line += " (answered by " + field(a.Actor.String()) + ")"
		}
		fmt.Fprintln(w, line)
	}
	if a.Reason != "" {
		fmt.Fprintf(w, "reason: %s\n", oneLine(a.Reason, 300))
	}
	fmt.Fprintf(w, "(all of it: tollgate approvals show --json %s)\n", field(a.ID))
}
