package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// runSummary is a run as `tollgate runs list --json` prints it.
type runSummary struct {
	ID        string          `json:"id"`
	Status    store.RunStatus `json:"status"`
	Owner     string          `json:"owner,omitempty"`
	Model     string          `json:"model,omitempty"`
	Workdir   string          `json:"workdir,omitempty"`
	CreatedAt time.Time       `json:"createdAt"`
	UpdatedAt time.Time       `json:"updatedAt"`
}

func summarize(r store.Run) runSummary {
	s := runSummary{ID: r.ID, Status: r.Status, Owner: r.Owner, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	var cfg runs.RunConfig
	if json.Unmarshal(r.Config, &cfg) == nil {
		s.Model, s.Workdir = cfg.Model.String(), cfg.Workdir
	}
	return s
}

// runDetail is a run as `tollgate runs show` prints it: the run without its
// state (the transcript; --state adds it), with its events.
type runDetail struct {
	ID        string          `json:"id"`
	Tenant    string          `json:"tenant,omitempty"`
	Owner     string          `json:"owner,omitempty"`
	Status    store.RunStatus `json:"status"`
	Config    json.RawMessage `json:"config,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	State     json.RawMessage `json:"state,omitempty"`
	Lease     *store.Lease    `json:"lease,omitempty"`
	CreatedAt time.Time       `json:"createdAt"`
	UpdatedAt time.Time       `json:"updatedAt"`
	Events    []store.Event   `json:"events"`
}

// writeJSON prints v as indented JSON, HTML characters as written.
func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return withCode(exitError, err)
	}
	_, err := w.Write(jsonSafe(buf.Bytes()))
	return err
}

func parseRunStatus(s string) (store.RunStatus, error) {
	switch st := store.RunStatus(s); st {
	case store.RunRunning, store.RunPending, store.RunResuming, store.RunDone, store.RunIncomplete, store.RunError, store.RunCancelled:
		return st, nil
	}
	return "", usageErr("--status %q: want running, pending, resuming, done, incomplete, error or cancelled", s)
}

func newRunsCmd(env *cliEnv) *cobra.Command {
	state := &stateFlags{}
	cmd := &cobra.Command{Use: "runs", Short: "List, show, cancel and prune the stored runs"}
	state.add(cmd.PersistentFlags(), env)

	var status string
	var jsonOut bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the stored runs, oldest first",
		Args:  argsUsage(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error {
			f := store.RunFilter{}
			if status != "" {
				st, err := parseRunStatus(status)
				if err != nil {
					return err
				}
				f.Status = st
			}
			s, err := state.open(c.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			out := []runSummary{}
			for r, err := range store.AllRuns(c.Context(), s, f) {
				if err != nil {
					return withCode(exitError, err)
				}
				out = append(out, summarize(r))
			}
			if jsonOut {
				return writeJSON(env.stdout, out)
			}
			tw := tabwriter.NewWriter(env.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTATUS\tUPDATED\tMODEL\tWORKDIR")
			for _, r := range out {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", field(r.ID), r.Status, r.UpdatedAt.Local().Format(time.DateTime), field(r.Model), field(r.Workdir))
			}
			return tw.Flush()
		},
	}
	list.Flags().StringVar(&status, "status", "", "only runs with this status: running, pending, resuming, done, incomplete, error or cancelled")
	list.Flags().BoolVar(&jsonOut, "json", false, "print a JSON array instead of a table")

	var withState, showJSON bool
	show := &cobra.Command{
		Use:   "show RUN_ID",
		Short: "Show one run: its tool calls, decisions and durations (--json: its configuration, result, lease and events)",
		Args:  argsUsage(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			s, err := state.open(c.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			r, err := s.GetRun(c.Context(), args[0])
			if err != nil {
				return withCode(exitError, noSuchRun(err, args[0]))
			}
			d := runDetail{ID: r.ID, Tenant: r.Tenant, Owner: r.Owner, Status: r.Status, Config: r.Config, Result: r.Result,
				Lease: r.Lease, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Events: []store.Event{}}
			if withState {
				d.State = r.State
			}
			var after int64
			for {
				evs, err := s.ListEvents(c.Context(), store.EventFilter{AllTenants: true, RunID: r.ID, AfterSeq: after, Limit: store.MaxLimit})
				if err != nil {
					return withCode(exitError, err)
				}
				if len(evs) == 0 {
					break
				}
				d.Events = append(d.Events, evs...)
				after = evs[len(evs)-1].Seq
			}
			if showJSON || withState {
				return writeJSON(env.stdout, d)
			}
			return printRunSummary(env.stdout, d)
		},
	}
	show.Flags().BoolVar(&showJSON, "json", false, "print the run as JSON: its configuration, result, lease and events")
	show.Flags().BoolVar(&withState, "state", false, "include the run's state (its transcript) in the JSON (implies --json)")

	cancel := &cobra.Command{
		Use:   "cancel RUN_ID",
		Short: "Cancel a run: a halted one at once, a running one at its next heartbeat",
		Args:  argsUsage(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			dir, err := state.resolve("")
			if err != nil {
				return err
			}
			storeURL, err := state.storeURL()
			if err != nil {
				return err
			}
			keyFile, err := state.keyFile(dir, "")
			if err != nil {
				return err
			}
			h, _, closeStore, err := openHost(c.Context(), env, storeURL, dir, keyFile, runs.BuilderFunc(func(context.Context, runs.RunConfig) (*runs.Built, error) {
				return nil, fmt.Errorf("cancel builds no agent")
			}), false)
			if err != nil {
				return err
			}
			defer closeStore()
			by := tool.Principal{Kind: tool.PrincipalPerson, Name: currentUser()}
			if err := h.Cancel(c.Context(), args[0], by); errors.Is(err, store.ErrNotFound) {
				return withCode(exitError, noSuchRun(err, args[0]))
			} else if err != nil {
				return withCode(exitError, err)
			}
			fmt.Fprintf(env.stdout, "cancelled run %s\n", field(args[0]))
			return nil
		},
	}

	var olderThan time.Duration
	var statuses []string
	prune := &cobra.Command{
		Use:   "prune",
		Short: "Delete finished runs (done, incomplete, error, cancelled) with their approvals and events",
		Long: `Delete stored runs with their approvals and events: the finished ones (done,
incomplete, error, cancelled) unless --status says which; a pending run only
when --status pending is given. A run that a process is driving (its lease
has not expired) is never deleted.`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error {
			if olderThan < 0 {
				return usageErr("runs prune: --older-than must not be negative, got %s", olderThan)
			}
			f := store.PruneFilter{}
			for _, s := range statuses {
				st, err := parseRunStatus(s)
				if err != nil {
					return err
				}
				f.Statuses = append(f.Statuses, st)
			}
			if olderThan > 0 {
				f.Before = time.Now().Add(-olderThan)
			}
			s, err := state.open(c.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			n, err := s.DeleteRuns(c.Context(), f)
			if err != nil {
				return withCode(exitError, err)
			}
			fmt.Fprintf(env.stdout, "deleted %d run(s)\n", n)
			return nil
		},
	}
	prune.Flags().DurationVar(&olderThan, "older-than", 0, "only runs last updated longer ago than this, e.g. 720h")
	prune.Flags().StringArrayVar(&statuses, "status", nil, "delete runs with this status instead of the finished ones; repeatable")

	cmd.AddCommand(list, show, cancel, prune)
	return cmd
}
