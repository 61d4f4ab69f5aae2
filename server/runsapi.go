package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/internal/bounded"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/internal/statecalls"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store"
)

// ownRun returns the run if it exists in p's tenant; otherwise it writes 404
// (another tenant's run is not found, not forbidden).
func (s *Server) ownRun(w http.ResponseWriter, r *http.Request, p Principal, id string) (store.Run, bool) {
	run, err := s.store.GetRun(r.Context(), id)
	if err != nil || run.Tenant != p.Tenant {
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			problemf(w, r, http.StatusInternalServerError, "reading the run failed")
			return run, false
		}
		problemf(w, r, http.StatusNotFound, "no run "+strconv.Quote(id))
		return run, false
	}
	return run, true
}

func (s *Server) startRun(w http.ResponseWriter, r *http.Request, p Principal) {
	wait, err := runWait(r)
	if err != nil {
		problemf(w, r, http.StatusBadRequest, err.Error())
		return
	}
	r = r.WithContext(context.WithValue(r.Context(), runWaitKey{}, wait))
	var req serverapi.StartRunRequest
	if !s.readJSON(w, r, maxPromptBytes, &req) {
		return
	}
	// An agent of other tenants is answered as an unknown one: its name
	// tells nothing of them.
	cfg, ok := s.agent(req.Agent, p.Tenant)
	if !ok {
		problemf(w, r, http.StatusNotFound, fmt.Sprintf("agent: no agent %q (GET /v1/agents lists those you may start)", req.Agent))
		return
	}
	if strings.TrimSpace(req.Prompt) == "" {
		problemf(w, r, http.StatusUnprocessableEntity, "prompt: the prompt is empty")
		return
	}
	owner := p.decider()
	id := runcore.NewRunID()
	if key := r.Header.Get("Idempotency-Key"); key != "" {
		if len(key) > maxIdempotencyKey {
			problemf(w, r, http.StatusBadRequest, fmt.Sprintf("the Idempotency-Key header is longer than %d bytes", maxIdempotencyKey))
			return
		}
		// The key names the run: the same key from the same principal is
		// the same run, however often the request is sent.
		sum := sha256.Sum256([]byte(p.Tenant + "\x00" + p.Name + "\x00" + key))
		id = "run_" + hex.EncodeToString(sum[:12])
		// What the request asks is stored with the run: the key sent again
		// with another agent or prompt is an error, not the old run.
		body := sha256.Sum256([]byte(req.Agent + "\x00" + req.Prompt))
		cfg.RequestDigest = "sha256:" + hex.EncodeToString(body[:])
		r = r.WithContext(context.WithValue(r.Context(), requestDigestKey{}, cfg.RequestDigest))
		if run, err := s.store.GetRun(r.Context(), id); err == nil {
			s.writeExisting(w, r, p, run)
			return
		}
	}
	if s.closing() {
		problemf(w, r, http.StatusServiceUnavailable, "the server is shutting down; start the run on another")
		return
	}
	if s.durable != nil {
		s.startDurable(w, r, p, runcore.DurableRun{RunID: id, Tenant: p.Tenant, Owner: owner, Config: cfg, Prompt: req.Prompt})
		return
	}
	created := make(chan store.Run, 1)
	stored := make(chan store.Run, 1) // the run as its end stored it
	failed := make(chan error, 1)
	started, full := s.driveCapped(id, p.Tenant, true, func(ctx context.Context) error {
		_, err := s.host.Start(withRun(ctx, p.Tenant, id), runs.StartRequest{
			RunID: id, Tenant: p.Tenant, Owner: owner, Config: cfg, Prompt: req.Prompt,
			Created: func(run store.Run) { created <- run },
			Drive: runs.Drive{OnEvent: s.runEvents(id), Ended: func(run store.Run) {
				select {
				case stored <- run: // once; never a wait of the run's goroutine
				default:
				}
			}},
		})
		failed <- err
		return err
	})
	if full {
		w.Header().Set("Retry-After", "5")
		writeProblem(w, r, serverapi.Problem{Type: serverapi.ProblemTooManyRuns, Title: "Too Many Requests", Status: http.StatusTooManyRequests,
			Detail: fmt.Sprintf("your tenant has %d runs running on this server, the most it may; start this one when one of them ends or halts", s.maxRuns)})
		return
	}
	if !started {
		// The same key is being started by a request in flight.
		s.waitStored(w, r, p, id)
		return
	}
	select {
	case run := <-created:
		if wait > 0 {
			run = s.awaitPart(r.Context(), run, failed, stored, wait)
		}
		w.Header().Set("Location", "/v1/runs/"+url.PathEscape(id))
		s.writeRun(w, r, http.StatusCreated, run)
	case err := <-failed:
		select {
		case run := <-created: // stored, and already ended or halted
			if wait > 0 {
				run = s.awaitPart(r.Context(), run, failed, stored, 0) // as it ended
			}
			w.Header().Set("Location", "/v1/runs/"+url.PathEscape(id))
			s.writeRun(w, r, http.StatusCreated, run)
			return
		default:
		}
		if errors.Is(err, store.ErrExists) {
			s.waitStored(w, r, p, id)
			return
		}
		// The agent is the server's, not the caller's: what failed is the
		// server configuration (CheckAgents finds most of it at start).
		// It is named as the user wrote it: the key of server.yaml (policy,
		// not the configuration's policyFile), at its line when known.
		problemf(w, r, http.StatusUnprocessableEntity, fmt.Sprintf("the run could not start: agent %q in the server configuration: %s", req.Agent, bounded.Cut(s.agentBuildProblem(req.Agent, err), 2000)))
	case <-r.Context().Done():
	}
}

// startDurable enqueues a durable run and answers with its stored record.
// The autonomy level in force for the tenant is the run's from its start (a
// worker builds the run's agent from its stored configuration).
func (s *Server) startDurable(w http.ResponseWriter, r *http.Request, p Principal, in runcore.DurableRun) {
	if lvl := s.autonomy.effective(runRef{in.Tenant, in.RunID}); lvl != "" {
		in.Config.Autonomy = lvl
	}
	// A client that goes away does not leave a run stored but not enqueued.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 30*time.Second)
	defer cancel()
	_, err := s.durable.Start(ctx, in)
	switch {
	case errors.Is(err, store.ErrExists):
		s.waitStored(w, r, p, in.RunID) // the same key, started by a request in flight
		return
	case errors.Is(err, runs.ErrEmptyPrompt):
		problemf(w, r, http.StatusUnprocessableEntity, "prompt: the prompt is empty")
		return
	case err != nil:
		// The error may name the database: it is logged, not shown.
		s.log.Error("enqueuing a durable run failed", "run", in.RunID, "error", err)
		problemf(w, r, http.StatusServiceUnavailable, "the run could not be enqueued for a worker (the server's log says why)")
		return
	}
	run, err := s.store.GetRun(r.Context(), in.RunID)
	if err != nil {
		problemf(w, r, http.StatusInternalServerError, "reading the run failed")
		return
	}
	run = s.awaitSettled(r.Context(), p, run, waitOf(r))
	w.Header().Set("Location", "/v1/runs/"+url.PathEscape(in.RunID))
	s.writeRun(w, r, http.StatusCreated, run)
}

// waitStored answers with a run another request is creating.
func (s *Server) waitStored(w http.ResponseWriter, r *http.Request, p Principal, id string) {
	for range 100 {
		if run, err := s.store.GetRun(r.Context(), id); err == nil && run.Tenant == p.Tenant {
			s.writeExisting(w, r, p, run)
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
	problemf(w, r, http.StatusConflict, "a run with this Idempotency-Key is being started; retry")
}

// requestDigestKey keys the RequestDigest of a keyed POST /v1/runs in its
// request's context.
type requestDigestKey struct{}

// runWaitKey keys the ?wait= of POST /v1/runs in its request's context.
type runWaitKey struct{}

// waitOf is the ?wait= of a POST /v1/runs (runWaitKey), zero for none.
func waitOf(r *http.Request) time.Duration {
	d, _ := r.Context().Value(runWaitKey{}).(time.Duration)
	return d
}

// writeExisting answers a keyed POST /v1/runs with the run its key named
// before (200), or 422 when that run was started for another agent or
// prompt (runs.RunConfig.RequestDigest; a run stored without one is
// answered as the same), after waiting for it as ?wait= asks.
func (s *Server) writeExisting(w http.ResponseWriter, r *http.Request, p Principal, run store.Run) {
	want, _ := r.Context().Value(requestDigestKey{}).(string)
	var got struct {
		RequestDigest string `json:"requestDigest"`
	}
	_ = json.Unmarshal(run.Config, &got)
	if want != "" && got.RequestDigest != "" && got.RequestDigest != want {
		writeProblem(w, r, serverapi.Problem{Type: serverapi.ProblemIdempotencyKeyReused, Title: "Idempotency-Key reused", Status: http.StatusUnprocessableEntity,
			Detail: "this Idempotency-Key started run " + run.ID + " with another agent or prompt; use a new key for a new run"})
		return
	}
	s.writeRun(w, r, http.StatusOK, s.awaitSettled(r.Context(), p, run, waitOf(r)))
}

func (s *Server) writeRun(w http.ResponseWriter, r *http.Request, status int, run store.Run) {
	v, err := s.runView(r.Context(), run)
	if err != nil {
		problemf(w, r, http.StatusInternalServerError, "reading the run failed")
		return
	}
	writeJSON(w, status, v)
}

func summary(run store.Run) serverapi.RunSummary {
	var cfg struct {
		Agent  string `json:"agent"`
		Source string `json:"source"`
	}
	_ = json.Unmarshal(run.Config, &cfg)
	return serverapi.RunSummary{ID: run.ID, Agent: cfg.Agent, Source: sourceOf(cfg.Agent, cfg.Source), Owner: run.Owner, Status: run.Status, CreatedAt: run.CreatedAt, UpdatedAt: run.UpdatedAt}
}

func (s *Server) runView(ctx context.Context, run store.Run) (serverapi.RunView, error) {
	v := serverapi.RunView{RunSummary: summary(run), Transcript: json.RawMessage("[]"), ToolCalls: json.RawMessage("[]"), Pending: []serverapi.ApprovalView{}}
	v.Autonomy = s.autonomy.effective(runRef{run.Tenant, run.ID})
	if v.Autonomy == "" {
		if cfg, err := runcore.LoadConfig(run); err == nil {
			v.Autonomy = cfg.Autonomy
		}
	}
	var res struct {
		Text       string          `json:"text"`
		Reason     string          `json:"reason"`
		Transcript json.RawMessage `json:"transcript"`
		ToolCalls  json.RawMessage `json:"toolCalls"`
	}
	if len(run.Result) > 0 {
		_ = json.Unmarshal(run.Result, &res)
		v.Text, v.Reason = res.Text, res.Reason
	}
	var st struct {
		Messages  json.RawMessage                    `json:"messages"`
		ToolCalls json.RawMessage                    `json:"toolCalls"`
		Batch     []statecalls.Call[json.RawMessage] `json:"batch"`
	}
	if !run.Status.Finished() && len(run.State) > 0 {
		_ = json.Unmarshal(run.State, &st)
		res.Transcript, res.ToolCalls = st.Messages, st.ToolCalls
		if batch := statecalls.Append(nil, st.Batch); len(batch) > 0 {
			// The turn in progress's finished calls join the others:
			// re-encoded only then (most reads have none).
			var calls []json.RawMessage
			_ = json.Unmarshal(st.ToolCalls, &calls)
			res.ToolCalls, _ = json.Marshal(append(calls, batch...))
		}
	}
	if isJSONArray(res.Transcript) {
		v.Transcript = res.Transcript
	}
	if isJSONArray(res.ToolCalls) {
		v.ToolCalls = res.ToolCalls
	}
	if claudeSession(run) {
		calls, err := s.toolCalls(ctx, run)
		if err != nil {
			return v, err
		}
		v.ToolCalls = calls
	}
	if run.Status == store.RunPending {
		for a, err := range store.AllApprovals(ctx, s.store, store.ApprovalFilter{Tenant: run.Tenant, RunID: run.ID, Status: store.StatusPending}) {
			if err != nil {
				return v, err
			}
			v.Pending = append(v.Pending, s.approvalView(ctx, a, &run))
		}
	}
	return v, nil
}

func isJSONArray(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '['
}

// pageParams reads ?limit= and ?cursor=.
func pageParams(w http.ResponseWriter, r *http.Request) (limit int, cursor string, ok bool) {
	q := r.URL.Query()
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			problemf(w, r, http.StatusBadRequest, "limit: want a positive number")
			return 0, "", false
		}
		limit = n
	}
	return limit, q.Get("cursor"), true
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request, p Principal) {
	limit, cursor, ok := pageParams(w, r)
	if !ok {
		return
	}
	f := store.RunFilter{Tenant: p.Tenant, Limit: limit, Cursor: cursor, Status: store.RunStatus(r.URL.Query().Get("status"))}
	switch r.URL.Query().Get("order") {
	case "", "oldest":
	case "newest":
		f.Newest = true
	default:
		problemf(w, r, http.StatusBadRequest, "order: want oldest or newest")
		return
	}
	switch f.Status {
	case "", store.RunRunning, store.RunPending, store.RunResuming, store.RunDone, store.RunIncomplete, store.RunError, store.RunCancelled:
	default:
		problemf(w, r, http.StatusBadRequest, "status: want running, pending, resuming, done, incomplete, error or cancelled")
		return
	}
	page, err := s.store.ListRuns(r.Context(), f)
	if errors.Is(err, store.ErrBadCursor) {
		problemf(w, r, http.StatusBadRequest, "cursor: not a cursor of this listing")
		return
	}
	if err != nil {
		problemf(w, r, http.StatusInternalServerError, "listing runs failed")
		return
	}
	out := serverapi.RunPage{Runs: []serverapi.RunSummary{}, Next: page.Next}
	for _, run := range page.Runs {
		out.Runs = append(out.Runs, summary(run))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request, p Principal) {
	run, ok := s.ownRun(w, r, p, r.PathValue("id"))
	if !ok {
		return
	}
	s.writeRun(w, r, http.StatusOK, run)
}

func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request, p Principal) {
	run, ok := s.ownRun(w, r, p, r.PathValue("id"))
	if !ok {
		return
	}
	cancelRun := s.host.Cancel
	if s.durable != nil && durableRun(run) {
		cancelRun = s.durable.Cancel
	}
	err := cancelRun(r.Context(), run.ID, p.decider())
	switch {
	case errors.Is(err, runs.ErrNotResumable), errors.Is(err, store.ErrConflict):
		writeProblem(w, r, serverapi.Problem{Status: http.StatusConflict, Detail: "the run has ended or changed; it cannot be cancelled"})
		return
	case err != nil:
		problemf(w, r, http.StatusInternalServerError, "cancelling failed")
		return
	}
	run, _ = s.store.GetRun(r.Context(), run.ID)
	s.writeRun(w, r, http.StatusAccepted, run)
}
