package server

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/approval/inbox"
	"github.com/tollgate-dev/tollgate/builtin"
	"github.com/tollgate-dev/tollgate/internal/bounded"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// Limits of request bodies.
const (
	// MaxBodyBytes bounds a JSON request body (1 MiB), except a prompt's.
	MaxBodyBytes = 1 << 20
	// MaxPromptBytes bounds the body of POST /v1/runs (4 MiB).
	MaxPromptBytes = 4 << 20
	// MaxBodyDepth bounds the nesting of a JSON request body.
	MaxBodyDepth = 64
	// MaxIdempotencyKey bounds the Idempotency-Key header, in bytes.
	MaxIdempotencyKey = 255
)

// StartRunRequest is the body of POST /v1/runs.
type StartRunRequest struct {
	// Agent names one of the server's agents.
	Agent string `json:"agent"`
	// Prompt is the user's message; not empty.
	Prompt string `json:"prompt"`
}

// AgentInfo is an agent of the server, as GET /v1/agents lists it.
type AgentInfo struct {
	Name string `json:"name"`
	// Model is the model reference ("openai:gpt-4.1-mini").
	Model string `json:"model"`
	// Autonomy is the agent's configured autonomy level (the tenant's or a
	// run's may override it).
	Autonomy string `json:"autonomy,omitempty"`
}

// RunSummary is a run in a listing.
type RunSummary struct {
	// ID is the run's ID ("run_" and 16 hex digits unless its starter chose one).
	ID string `json:"id"`
	// Agent is the name of the agent in the server's configuration.
	Agent string `json:"agent"`
	// Source is what started the run: "agent", "claude-code", "codex",
	// "command-line" or "mcp" (an MCP client's session; [RunContext.Source]).
	Source string `json:"source"`
	// Owner is the principal who started the run, as text ("person:alice").
	Owner string `json:"owner"`
	// Status is the run's status (running, pending, done, failed, ...).
	Status store.RunStatus `json:"status"`
	// CreatedAt is when the run was stored; UpdatedAt when it last changed
	// (RFC 3339).
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// RunView is GET /v1/runs/{id}: the run with its transcript (the agent's
// messages), the record of every finished tool call with its decision and
// votes, and its pending approvals.
type RunView struct {
	RunSummary
	// Autonomy is the autonomy level the run's next part is built with
	// (its own override, else its tenant's, else the agent's).
	Autonomy string `json:"autonomy,omitempty"`
	// Text is the final answer of a done run; Reason why a run failed or
	// stopped.
	Text   string `json:"text,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Transcript is the agent's messages ([model.Message] as JSON).
	Transcript json.RawMessage `json:"transcript"`
	// ToolCalls are the agent's tool call records ([gate.Record]).
	ToolCalls json.RawMessage `json:"toolCalls"`
	// Pending are the approvals that wait for an answer.
	Pending []ApprovalView `json:"pending"`
}

// RunPage is GET /v1/runs.
type RunPage struct {
	Runs []RunSummary `json:"runs"`
	// Next is the cursor of the next page (?cursor=), empty at the end.
	Next string `json:"next,omitempty"`
}

// ApprovalView is an approval as the API shows it: what a person needs to
// decide, and how it was decided.
type ApprovalView struct {
	ID     string       `json:"id"`
	RunID  string       `json:"runId"`
	Agent  string       `json:"agent,omitempty"`
	Status store.Status `json:"status"`
	Kind   tool.Kind    `json:"kind"`
	// Tool and CallID name the tool call.
	Tool   string `json:"tool"`
	CallID string `json:"callId"`
	// Prompt is the request's question, as the agent wrote it.
	Prompt string `json:"prompt"`
	// Arguments are the call's arguments; ArgumentsPretty the same,
	// indented for display.
	Arguments       json.RawMessage `json:"arguments,omitempty"`
	ArgumentsPretty string          `json:"argumentsPretty,omitempty"`
	// ArgsDigest is the digest a decision must send back: the approval
	// covers these arguments only.
	ArgsDigest string      `json:"argsDigest"`
	Hints      *tool.Hints `json:"hints,omitempty"`
	// Risk is the call's risk: as the run's policy file judges it (its
	// risk declarations, then the hints; RiskFrom says which: "hints" or
	// "declared:GLOB"), else from the hints alone (approval.RiskOf).
	Risk     approval.Risk `json:"risk,omitempty"`
	RiskFrom string        `json:"riskFrom,omitempty"`
	// RuleAt is where the rule that asked is written in the run's policy
	// file ("policy.yaml:12:5"), when it is one.
	RuleAt string `json:"ruleAt,omitempty"`
	// RulePolicy, with RuleAt, is the agent whose policy file GET
	// /v1/agents/{name}/policy shows, RuleAt's file as it is now; empty
	// when the server's configuration no longer names that file.
	RulePolicy string `json:"rulePolicy,omitempty"`
	// AskedBy is the rule, hook or autonomy level that asked
	// ("rule:review-notes"), and Reason why.
	AskedBy string `json:"askedBy,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// RunOwner is the principal who started the run.
	RunOwner  string     `json:"runOwner,omitempty"`
	CreatedAt time.Time  `json:"createdAt"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	// SecondsLeft is the time left to decide, in whole seconds, when the
	// request expires and is still pending.
	SecondsLeft *int64 `json:"secondsLeft,omitempty"`
	// InputSchema is the tool's JSON Schema, to edit the arguments against.
	InputSchema *jsonschema.Schema `json:"inputSchema,omitempty"`
	// DecidedBy, Actor, DecisionReason, DecidedAt and EditedArguments record
	// the decision. DecidedBy is who decided ({"kind": "person", "name":
	// "alice"}); Actor, present only when someone acted on DecidedBy's
	// behalf (an administrator at the command line), is who did.
	DecidedBy       approval.Principal `json:"decidedBy,omitzero"`
	Actor           approval.Principal `json:"actor,omitzero"`
	DecisionReason  string             `json:"decisionReason,omitempty"`
	DecidedAt       *time.Time         `json:"decidedAt,omitempty"`
	EditedArguments json.RawMessage    `json:"editedArguments,omitempty"`
	// Questions, on a request of kind question, are the questions the model
	// asks (each with its options and whether it takes several answers):
	// what a person answers with a decision's answer.
	Questions []builtin.Question `json:"questions,omitempty"`
	// Context is what the run says around the call: its source, prompt,
	// workspace, the model's stated intent and the earlier decisions on the
	// same tool; absent when the run cannot be read.
	Context *RunContext `json:"context,omitempty"`
}

// ApprovalPage is GET /v1/approvals.
type ApprovalPage struct {
	Approvals []ApprovalView `json:"approvals"`
	Next      string         `json:"next,omitempty"`
}

// DecisionRequest is the body of POST /v1/approvals/{id}/decision. Who
// decides is the authenticated principal, never a field.
type DecisionRequest struct {
	// Decision is "approve" or "deny".
	Decision string `json:"decision"`
	// Reason explains the decision; on deny, the model sees it.
	Reason string `json:"reason,omitempty"`
	// EditedArgs, on approve, replace the call's arguments (a JSON object,
	// validated against the tool's input schema here and authorized again
	// when the run goes on).
	EditedArgs json.RawMessage `json:"editedArgs,omitempty"`
	// ArgsDigest must be the argsDigest the person was shown: what they saw
	// is what runs (412 otherwise). Required to approve.
	ArgsDigest string `json:"argsDigest"`
	// Answer, on approve, answers a request of kind question (required
	// there): {"answers": [["choice"], ...]} with one list per question, or
	// a shorter form builtin.ParseQuestionAnswer reads (["a", "b"], or "a"
	// for one question). An option's label or the person's own words; 422
	// when it does not fit the questions. On an input request, the value.
	Answer json.RawMessage `json:"answer,omitempty"`
}

// AutonomyRequest is the body of PUT /v1/autonomy: seed 000's set_autonomy.
type AutonomyRequest struct {
	// Level is full_auto, supervised, cautious or manual; empty removes the
	// override.
	Level string `json:"level"`
	// Run, when set, changes one run's level (approver role); otherwise the
	// tenant's (admin role).
	Run string `json:"run,omitempty"`
}

// readJSON decodes a bounded JSON body into v with [decodeBody]; on
// failure it writes the problem (413 over max bytes, 400 otherwise).
// The body must arrive within the server's BodyReadTimeout: a slower one is
// 408, and the connection is closed.
func (s *Server) readJSON(w http.ResponseWriter, r *http.Request, max int64, v any) bool {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(s.bodyTimeout))
	body, err := bounded.Read(r.Body, "body", bounded.Limits{MaxBytes: max})
	_ = rc.SetReadDeadline(time.Time{})
	if errors.Is(err, os.ErrDeadlineExceeded) {
		w.Header().Set("Connection", "close")
		problemf(w, r, http.StatusRequestTimeout, fmt.Sprintf("the body did not arrive within %s", s.bodyTimeout))
		return false
	}
	if bounded.IsLimit(err) {
		problemf(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than %d bytes", max))
		return false
	}
	if err == nil {
		err = decodeBody("body", body, max, v)
	}
	if err != nil {
		problemf(w, r, http.StatusBadRequest, err.Error())
		return false
	}
	return true
}

// decodeBody decodes the JSON object b (named name in errors) into v, as
// every request body and WebSocket message is read: at most max bytes and
// [MaxBodyDepth] levels, no key given twice in one object (Go keeps the
// last value, a proxy or log may keep the first: "deny" logged, "approve"
// done), and no field v does not have.
func decodeBody(name string, b []byte, max int64, v any) error {
	if err := bounded.CheckJSON(name, b, bounded.Limits{MaxBytes: max, MaxDepth: MaxBodyDepth}); err != nil {
		return err
	}
	if err := bounded.UniqueKeys(name, b); err != nil {
		return err
	}
	if err := exactKeys(name, b, reflect.TypeOf(v)); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("the %s is not the expected JSON object: %w", name, err)
	}
	return nil
}

// exactKeys checks that every key of the JSON value b that encoding/json
// would decode into a field of the struct type t (through pointers,
// slices, arrays and nested structs) is that field's name exactly:
// encoding/json also matches a name in another case ("Decision" for
// "decision"), and keeps the last of two such keys, where a proxy or a log
// matching names exactly keeps the one it knows ({"decision":"deny",
// "Decision":"approve"} logged as deny, decided as approve). A key that is
// no field's name in any case is left to DisallowUnknownFields. b is valid
// JSON (bounded.CheckJSON).
func exactKeys(name string, b []byte, t reflect.Type) error {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		if t.Kind() != reflect.Pointer {
			var elems []json.RawMessage
			if json.Unmarshal(b, &elems) != nil {
				return nil
			}
			for _, e := range elems {
				if err := exactKeys(name, e, t.Elem()); err != nil {
					return err
				}
			}
			return nil
		}
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t.Implements(reflect.TypeFor[json.Unmarshaler]()) || reflect.PointerTo(t).Implements(reflect.TypeFor[json.Unmarshaler]()) {
		return nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(b, &obj) != nil {
		return nil // not an object: the decoder says what is wrong
	}
	fields := jsonFields(t)
	for k, v := range obj {
		ft, ok := fields[k]
		if !ok {
			for f := range fields {
				if strings.EqualFold(f, k) {
					return fmt.Errorf("the %s has the key %q; names are case-sensitive: want %q", name, bounded.Cut(k, 64), f)
				}
			}
			continue
		}
		if err := exactKeys(name, v, ft); err != nil {
			return err
		}
	}
	return nil
}

// jsonFields returns the JSON names of the fields of the struct type t, as
// encoding/json names them (the json tag's name, else the Go name; fields
// tagged "-" and unexported ones left out; embedded structs' fields
// promoted), with each field's type.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		n, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && n == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				for k, v := range jsonFields(et) {
					if _, ok := out[k]; !ok {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		out[cmp.Or(n, f.Name)] = f.Type
	}
	return out
}

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
	var req StartRunRequest
	if !s.readJSON(w, r, MaxPromptBytes, &req) {
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
	owner := p.Decider()
	id := runs.NewRunID()
	if key := r.Header.Get("Idempotency-Key"); key != "" {
		if len(key) > MaxIdempotencyKey {
			problemf(w, r, http.StatusBadRequest, fmt.Sprintf("the Idempotency-Key header is longer than %d bytes", MaxIdempotencyKey))
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
			s.writeExisting(w, r, run)
			return
		}
	}
	if s.closing() {
		problemf(w, r, http.StatusServiceUnavailable, "the server is shutting down; start the run on another")
		return
	}
	if s.durable != nil {
		s.startDurable(w, r, p, runs.DurableRun{RunID: id, Tenant: p.Tenant, Owner: owner, Config: cfg, Prompt: req.Prompt})
		return
	}
	created := make(chan store.Run, 1)
	failed := make(chan error, 1)
	started, full := s.driveCapped(id, p.Tenant, true, func(ctx context.Context) error {
		_, err := s.host.Start(withRun(ctx, p.Tenant, id), runs.StartRequest{
			RunID: id, Tenant: p.Tenant, Owner: owner, Config: cfg, Prompt: req.Prompt,
			Created: func(run store.Run) { created <- run },
			Drive:   runs.Drive{OnEvent: s.metrics.onEvent},
		})
		failed <- err
		return err
	})
	if full {
		w.Header().Set("Retry-After", "5")
		writeProblem(w, r, Problem{Type: ProblemTooManyRuns, Title: "Too Many Requests", Status: http.StatusTooManyRequests,
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
		w.Header().Set("Location", "/v1/runs/"+url.PathEscape(id))
		s.writeRun(w, r, http.StatusCreated, run)
	case err := <-failed:
		select {
		case run := <-created: // stored, and already ended or halted
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
		problemf(w, r, http.StatusUnprocessableEntity, fmt.Sprintf("the run could not start: agent %q in the server configuration: %s", req.Agent, bounded.Cut(s.config.agentBuildProblem(req.Agent, err), 2000)))
	case <-r.Context().Done():
	}
}

// startDurable enqueues a durable run and answers with its stored record.
// The autonomy level in force for the tenant is the run's from its start (a
// worker builds the run's agent from its stored configuration).
func (s *Server) startDurable(w http.ResponseWriter, r *http.Request, p Principal, in runs.DurableRun) {
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
	w.Header().Set("Location", "/v1/runs/"+url.PathEscape(in.RunID))
	s.writeRun(w, r, http.StatusCreated, run)
}

// waitStored answers with a run another request is creating.
func (s *Server) waitStored(w http.ResponseWriter, r *http.Request, p Principal, id string) {
	for range 100 {
		if run, err := s.store.GetRun(r.Context(), id); err == nil && run.Tenant == p.Tenant {
			s.writeExisting(w, r, run)
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

// writeExisting answers a keyed POST /v1/runs with the run its key named
// before (200), or 422 when that run was started for another agent or
// prompt (runs.RunConfig.RequestDigest; a run stored without one is
// answered as the same).
func (s *Server) writeExisting(w http.ResponseWriter, r *http.Request, run store.Run) {
	want, _ := r.Context().Value(requestDigestKey{}).(string)
	var got struct {
		RequestDigest string `json:"requestDigest"`
	}
	_ = json.Unmarshal(run.Config, &got)
	if want != "" && got.RequestDigest != "" && got.RequestDigest != want {
		writeProblem(w, r, Problem{Type: ProblemIdempotencyKeyReused, Title: "Idempotency-Key reused", Status: http.StatusUnprocessableEntity,
			Detail: "this Idempotency-Key started run " + run.ID + " with another agent or prompt; use a new key for a new run"})
		return
	}
	s.writeRun(w, r, http.StatusOK, run)
}

func (s *Server) writeRun(w http.ResponseWriter, r *http.Request, status int, run store.Run) {
	v, err := s.runView(r.Context(), run)
	if err != nil {
		problemf(w, r, http.StatusInternalServerError, "reading the run failed")
		return
	}
	writeJSON(w, status, v)
}

func summary(run store.Run) RunSummary {
	var cfg struct {
		Agent  string `json:"agent"`
		Source string `json:"source"`
	}
	_ = json.Unmarshal(run.Config, &cfg)
	return RunSummary{ID: run.ID, Agent: cfg.Agent, Source: sourceOf(cfg.Agent, cfg.Source), Owner: run.Owner, Status: run.Status, CreatedAt: run.CreatedAt, UpdatedAt: run.UpdatedAt}
}

func (s *Server) runView(ctx context.Context, run store.Run) (RunView, error) {
	v := RunView{RunSummary: summary(run), Transcript: json.RawMessage("[]"), ToolCalls: json.RawMessage("[]"), Pending: []ApprovalView{}}
	v.Autonomy = s.autonomy.effective(runRef{run.Tenant, run.ID})
	if v.Autonomy == "" {
		if cfg, err := runs.LoadConfig(run); err == nil {
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
		Messages  json.RawMessage `json:"messages"`
		ToolCalls json.RawMessage `json:"toolCalls"`
	}
	if !run.Status.Finished() && len(run.State) > 0 {
		_ = json.Unmarshal(run.State, &st)
		res.Transcript, res.ToolCalls = st.Messages, st.ToolCalls
	}
	if isJSONArray(res.Transcript) {
		v.Transcript = res.Transcript
	}
	if isJSONArray(res.ToolCalls) {
		v.ToolCalls = res.ToolCalls
	}
	if claudeSession(run) {
		calls, err := claudeToolCalls(ctx, s.store, run)
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

func (s *Server) listAgents(w http.ResponseWriter, r *http.Request, p Principal) {
	out := []AgentInfo{}
	for name, cfg := range s.agents {
		if _, ok := s.agent(name, p.Tenant); !ok {
			continue
		}
		out = append(out, AgentInfo{Name: name, Model: cfg.Model.Provider, Autonomy: cfg.Autonomy})
		if cfg.Model.Provider != "script" {
			out[len(out)-1].Model = cfg.Model.String()
		}
	}
	slices.SortFunc(out, func(a, b AgentInfo) int { return strings.Compare(a.Name, b.Name) })
	writeJSON(w, http.StatusOK, map[string]any{"agents": out})
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
	out := RunPage{Runs: []RunSummary{}, Next: page.Next}
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
	err := cancelRun(r.Context(), run.ID, p.Decider())
	switch {
	case errors.Is(err, runs.ErrNotResumable), errors.Is(err, store.ErrConflict):
		writeProblem(w, r, Problem{Status: http.StatusConflict, Detail: "the run has ended or changed; it cannot be cancelled"})
		return
	case err != nil:
		problemf(w, r, http.StatusInternalServerError, "cancelling failed")
		return
	}
	run, _ = s.store.GetRun(r.Context(), run.ID)
	s.writeRun(w, r, http.StatusAccepted, run)
}

// findApproval returns the approval with the request ID id in p's tenant,
// or writes 404.
func (s *Server) findApproval(w http.ResponseWriter, r *http.Request, p Principal, id string) (store.Approval, bool) {
	a, err := s.inbox(nil).Find(r.Context(), inbox.Query{Tenant: p.Tenant, ID: id})
	if err != nil {
		writeProblem(w, r, findProblem(err, id))
		return store.Approval{}, false
	}
	return a, true
}

// findProblem is the problem of an error of inbox.Find: 404 for a request
// ID that names no single request of the tenant.
func findProblem(err error, id string) Problem {
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, inbox.ErrAmbiguous) || errors.Is(err, inbox.ErrNoID) {
		return Problem{Status: http.StatusNotFound, Detail: "no approval " + strconv.Quote(id)}
	}
	return Problem{Status: http.StatusInternalServerError, Detail: "reading the approval failed"}
}

func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request, p Principal) {
	limit, cursor, ok := pageParams(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	f := store.ApprovalFilter{Tenant: p.Tenant, Limit: limit, Cursor: cursor, RunID: q.Get("run"), Status: store.Status(q.Get("status"))}
	switch f.Status {
	case "", store.StatusPending, store.StatusApproved, store.StatusDenied, store.StatusExpired, store.StatusUsed:
	default:
		problemf(w, r, http.StatusBadRequest, "status: want pending, approved, denied, expired or used")
		return
	}
	page, err := s.store.ListApprovals(r.Context(), f)
	if errors.Is(err, store.ErrBadCursor) {
		problemf(w, r, http.StatusBadRequest, "cursor: not a cursor of this listing")
		return
	}
	if err != nil {
		problemf(w, r, http.StatusInternalServerError, "listing approvals failed")
		return
	}
	out := ApprovalPage{Approvals: []ApprovalView{}, Next: page.Next}
	runsSeen := map[string]*store.Run{}
	for _, a := range page.Approvals {
		run, ok := runsSeen[a.RunID]
		if !ok {
			if got, err := s.store.GetRun(r.Context(), a.RunID); err == nil {
				run = &got
			}
			runsSeen[a.RunID] = run
		}
		out.Approvals = append(out.Approvals, s.approvalView(r.Context(), a, run))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getApproval(w http.ResponseWriter, r *http.Request, p Principal) {
	a, ok := s.findApproval(w, r, p, r.PathValue("id"))
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, s.viewOf(r.Context(), a))
}

// approvalView shows a; run (may be nil) adds the agent and the owner.
func (s *Server) approvalView(ctx context.Context, a store.Approval, run *store.Run) ApprovalView {
	v := ApprovalView{
		ID: a.ID, RunID: a.RunID, Status: a.Status, Kind: a.Kind, Tool: a.Tool, CallID: a.CallID, Prompt: a.Prompt,
		ArgsDigest: a.Digest, CreatedAt: a.CreatedAt, ExpiresAt: a.ExpiresAt,
		DecidedBy: a.DecidedBy, Actor: a.Actor, DecisionReason: a.Reason, DecidedAt: a.DecidedAt, EditedArguments: a.Data,
	}
	now := s.now()
	if a.Status == store.StatusPending && a.Expired(now) {
		v.Status = store.StatusExpired
	}
	if a.ExpiresAt != nil && v.Status == store.StatusPending {
		left := int64(a.ExpiresAt.Sub(now) / time.Second)
		v.SecondsLeft = &left
	}
	if a.Kind == tool.KindQuestion {
		showQuestions(&v, a)
	} else if d, err := approval.ParseRequestData(a.Request); err == nil {
		v.Arguments, v.Hints, v.AskedBy, v.Reason, v.InputSchema = d.Args, d.Hints, d.By.String(), d.Reason, d.Schema
		v.Risk = approval.RiskOf(d.Hints)
		s.showPolicy(&v, a, run, d.Args)
		var buf bytes.Buffer
		if json.Indent(&buf, d.Args, "", "  ") == nil {
			v.ArgumentsPretty = buf.String()
		}
	}
	v.Context = runContext(a, run)
	if run != nil {
		v.RunOwner = run.Owner
		if cfg, err := runs.LoadConfig(*run); err == nil {
			v.Agent = cfg.Agent
		}
		if claudeSession(*run) {
			v.Agent = s.sessionContext(ctx, v.Context, a, *run)
		}
	}
	return v
}

func (s *Server) decide(w http.ResponseWriter, r *http.Request, p Principal) {
	var req DecisionRequest
	a, ok := s.findApproval(w, r, p, r.PathValue("id"))
	if !ok {
		return
	}
	if !s.readJSON(w, r, MaxBodyBytes, &req) {
		return
	}
	v, prob := s.decideOn(r.Context(), p, a, req)
	if prob != nil {
		writeProblem(w, r, *prob)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// decideCore records p's decision on the approval id of p's tenant: the
// checks and answers of POST /v1/approvals/{id}/decision, for HTTP and the
// WebSocket alike.
func (s *Server) decideCore(ctx context.Context, p Principal, id string, req DecisionRequest) (ApprovalView, *Problem) {
	a, err := s.inbox(nil).Find(ctx, inbox.Query{Tenant: p.Tenant, ID: id})
	if err != nil {
		prob := findProblem(err, id)
		return ApprovalView{}, &prob
	}
	return s.decideOn(ctx, p, a, req)
}

// decideOn is decideCore on the approval a, read from the store in p's
// tenant by the caller: each decision reads its approval and its run once.
// The checks are the inbox's (approval/inbox); the role, the body's
// fields and the problems are the API's.
func (s *Server) decideOn(ctx context.Context, p Principal, a store.Approval, req DecisionRequest) (ApprovalView, *Problem) {
	if !p.Has(RoleApprover) {
		return ApprovalView{}, &Problem{Type: ProblemForbidden, Title: "Forbidden", Status: http.StatusForbidden, Detail: "deciding needs the approver role"}
	}
	d := inbox.Decision{By: p.Decider(), Reason: req.Reason, Digest: req.ArgsDigest}
	switch req.Decision {
	case "approve":
		d.Approve = true
	case "deny":
	default:
		return ApprovalView{}, &Problem{Status: http.StatusBadRequest, Detail: `decision: want "approve" or "deny"`}
	}
	data, prob := decisionData(a, req, d.Approve)
	if prob != nil {
		return ApprovalView{}, prob
	}
	d.Data = data
	if req.ArgsDigest == "" && d.Approve {
		return ApprovalView{}, &Problem{Status: http.StatusBadRequest, Detail: "argsDigest: required; send the argsDigest of the approval you were shown"}
	}
	// The run is read once, when the answer is recorded, for its kind and
	// for the view: what the view shows of it (owner, agent) does not
	// change with the decision.
	var run *store.Run
	answer := func(ctx context.Context, runID, id string, ans store.Answer) (store.Approval, error) {
		run = s.readRun(ctx, runID)
		if s.durable != nil && run != nil && durableRun(*run) {
			return s.durable.Answer(ctx, runID, id, ans) // records it, then wakes the waiting workflow
		}
		return s.host.Answer(ctx, runID, id, ans)
	}
	got, err := s.inbox(answer).Decide(ctx, a, d)
	if err != nil {
		return ApprovalView{}, decisionProblem(err, a.ID)
	}
	if run == nil {
		return s.viewOf(ctx, got), nil // the same decision again: nothing was recorded
	}
	if got.DecidedAt != nil {
		s.metrics.decisionLatency.Observe(got.DecidedAt.Sub(got.CreatedAt).Seconds())
	}
	return s.approvalView(ctx, got, run), nil
}

// inbox is the approvals driver on the server's store; answer records a
// decision (nil: the store's Decide).
func (s *Server) inbox(answer inbox.AnswerFunc) *inbox.Inbox {
	return inbox.New(s.store, &inbox.Options{Answer: answer, Now: s.now, Log: s.log})
}

// decisionProblem is the problem of an error of inbox.Decide.
func decisionProblem(err error, id string) *Problem {
	var decided *inbox.DecidedError
	var bad *inbox.DataError
	switch {
	case errors.Is(err, inbox.ErrDataOnDeny):
		return &Problem{Status: http.StatusBadRequest, Detail: "editedArgs: only an approval edits the arguments"}
	case errors.Is(err, inbox.ErrDigestMismatch):
		return &Problem{Type: ProblemDigestMismatch, Title: "Arguments changed", Status: http.StatusPreconditionFailed,
			Detail: "argsDigest is not the digest of this approval's arguments: reload the approval and decide on what it shows"}
	case errors.Is(err, store.ErrExpired):
		return &Problem{Type: ProblemExpired, Title: "Approval expired", Status: http.StatusGone,
			Detail: "the request expired before it was decided; the run goes on without the call"}
	case errors.As(err, &decided):
		by := decided.Approval.DecidedBy.String()
		if !decided.Approval.Actor.IsZero() {
			by += "; recorded by " + decided.Approval.Actor.String()
		}
		return &Problem{Type: ProblemDecided, Title: "Already decided", Status: http.StatusConflict,
			Detail: fmt.Sprintf("the approval is %s (by %s)", decided.Approval.Status, by)}
	case errors.As(err, &bad):
		detail := "editedArgs do not fit the tool's input schema"
		if bad.Kind != tool.KindApproval {
			detail = "editedArgs: " + bad.What + " does not fit the " + string(bad.Kind) + " request"
		}
		return &Problem{Type: ProblemInvalidEdit, Title: "Invalid edited arguments", Status: http.StatusUnprocessableEntity,
			Detail: detail, Errors: bad.Problems}
	case errors.Is(err, store.ErrNotFound):
		return &Problem{Status: http.StatusNotFound, Detail: "no approval " + strconv.Quote(id)}
	}
	return &Problem{Status: http.StatusInternalServerError, Detail: "storing the decision failed"}
}

func (s *Server) viewOf(ctx context.Context, a store.Approval) ApprovalView {
	return s.approvalView(ctx, a, s.readRun(ctx, a.RunID))
}

// readRun returns the run id, or nil when it cannot be read.
func (s *Server) readRun(ctx context.Context, id string) *store.Run {
	run, err := s.store.GetRun(ctx, id)
	if err != nil {
		return nil
	}
	return &run
}

func (s *Server) getAutonomy(w http.ResponseWriter, r *http.Request, p Principal) {
	writeJSON(w, http.StatusOK, map[string]string{"scope": "tenant", "level": string(s.autonomy.ofTenant(p.Tenant))})
}

func (s *Server) putAutonomy(w http.ResponseWriter, r *http.Request, p Principal) {
	var req AutonomyRequest
	if !s.readJSON(w, r, MaxBodyBytes, &req) {
		return
	}
	change, prob := s.setAutonomy(r.Context(), p, req)
	if prob != nil {
		writeProblem(w, r, *prob)
		return
	}
	writeJSON(w, http.StatusOK, change)
}

// setAutonomy is seed 000's set_autonomy, for HTTP and the WebSocket: it
// appends an autonomy.changed event and applies it.
func (s *Server) setAutonomy(ctx context.Context, p Principal, req AutonomyRequest) (AutonomyChange, *Problem) {
	var level approval.Autonomy
	if req.Level != "" {
		a, err := approval.ParseAutonomy(req.Level)
		if err != nil {
			return AutonomyChange{}, &Problem{Status: http.StatusUnprocessableEntity, Detail: "level: " + err.Error()}
		}
		level = a
	}
	change := AutonomyChange{Scope: "tenant", Run: req.Run, Level: level, By: p.Decider().String()}
	ev := store.Event{Tenant: p.Tenant, Type: EventAutonomyChanged}
	if req.Run != "" {
		if !p.Has(RoleApprover) {
			return change, &Problem{Type: ProblemForbidden, Title: "Forbidden", Status: http.StatusForbidden, Detail: "setting a run's autonomy level needs the approver role"}
		}
		run, err := s.store.GetRun(ctx, req.Run)
		if err != nil || run.Tenant != p.Tenant {
			return change, &Problem{Status: http.StatusNotFound, Detail: "no run " + strconv.Quote(req.Run)}
		}
		if run.Status.Finished() {
			return change, &Problem{Status: http.StatusConflict, Detail: "the run has ended"}
		}
		change.Scope, ev.RunID = "run", run.ID
	} else if !p.Has(RoleAdmin) {
		return change, &Problem{Type: ProblemForbidden, Title: "Forbidden", Status: http.StatusForbidden, Detail: "setting the tenant's autonomy level needs the admin role"}
	}
	ev.Data, _ = json.Marshal(change)
	seqs, err := s.store.AppendEvents(ctx, ev)
	if err != nil {
		return change, &Problem{Status: http.StatusInternalServerError, Detail: "storing the change failed"}
	}
	ev.Seq = seqs[0]
	s.autonomy.apply(ev)
	return change, nil
}

func (s *Server) mintTicket(w http.ResponseWriter, r *http.Request, p Principal) {
	t, exp, err := s.tickets.mint(p, s.now())
	var many *errTooManyTickets
	if errors.As(err, &many) {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int((many.retry+time.Second-1)/time.Second))))
		writeProblem(w, r, Problem{Type: ProblemTooManyTickets, Title: "Too Many Requests", Status: http.StatusTooManyRequests, Detail: many.detail})
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"ticket": t, "expiresAt": exp})
}
