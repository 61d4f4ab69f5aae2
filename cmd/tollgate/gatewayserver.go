package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/layer"
	"github.com/tollgate-dev/tollgate/internal/layerstore"
	"github.com/tollgate-dev/tollgate/internal/runbuild"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/internal/serveconfig"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/mcpgateway"
	"github.com/tollgate-dev/tollgate/mcptool"
	"github.com/tollgate-dev/tollgate/sandbox"
	"github.com/tollgate-dev/tollgate/server"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// Bounds of the conversation of `tollgate gateway --server` with the
// server: one long poll, one request's time, an answer's size, the
// records waiting to be sent.
const (
	remotePoll       = 50 * time.Second
	remoteTimeout    = 15 * time.Second
	maxRemoteAnswer  = 1 << 20
	maxRemoteRecords = 256
)

// remoteInbox is the inbox of `tollgate gateway --server URL`: a call that
// needs a person is an approval on that server's page (POST
// /v1/gate/asks), waited for by long polls; the records of the sessions
// are sent after the calls, in the background. Any failure to reach the
// server refuses the call (fail closed).
type remoteInbox struct {
	base    string // the server's URL, no trailing slash
	token   string
	client  *http.Client
	logger  *slog.Logger
	records chan remoteRecord
	wg      sync.WaitGroup
}

// remoteRecord is a record of a session to send, or its end.
type remoteRecord struct {
	s   mcpgateway.Session
	rec gate.Record
	end bool
}

// newRemoteInbox checks the URL and starts the records' sender; Close
// stops it.
func newRemoteInbox(rawURL, token string, logger *slog.Logger) (*remoteInbox, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--server %q is not an http or https URL", rawURL)
	}
	r := &remoteInbox{base: strings.TrimRight(u.String(), "/"), token: token, client: &http.Client{}, logger: logger,
		records: make(chan remoteRecord, maxRemoteRecords)}
	r.wg.Add(1)
	go r.sendRecords()
	return r, nil
}

// check asks the server, once at start, about an ask that does not exist:
// an agent token of a server that serves the gateway routes is answered
// 404 "no such asked call". A token the server refuses (401), one that may
// not call tools (403), or a server without a gateway: section is an
// error: nothing could be asked of it. No answer is a warning: the
// server may come up later, and until it does asks are refused.
func (r *remoteInbox) check(ctx context.Context) (warning string, err error) {
	ctx, cancel := context.WithTimeout(ctx, remoteCheckTimeout)
	defer cancel()
	err = r.do(ctx, http.MethodGet, "/v1/gate/asks/gw_start_check/req_start_check", nil, http.StatusNotFound, nil)
	var status *remoteStatusError
	switch {
	case err == nil:
		return "", nil
	case errors.As(err, &status) && status.code == http.StatusNotFound && strings.Contains(status.detail, "no MCP gateway"):
		return "", fmt.Errorf("--server %s: %s", r.base, status.detail)
	case errors.As(err, &status) && (status.code == http.StatusUnauthorized || status.code == http.StatusForbidden):
		return "", fmt.Errorf("--server %s refuses the --token-file token: %w", r.base, err)
	case errors.As(err, &status):
		return fmt.Sprintf("--server %s: %v", r.base, err), nil
	}
	return fmt.Sprintf("--server %s cannot be reached now (%v): calls that need a person are refused until it can", r.base, err), nil
}

// remoteCheckTimeout bounds the check at start.
const remoteCheckTimeout = 10 * time.Second

// remoteStatusError is an answer of the server with a status not wanted.
type remoteStatusError struct {
	code   int
	status string
	detail string
}

func (e *remoteStatusError) Error() string {
	return fmt.Sprintf("tollgate's server answered %s: %s", e.status, e.detail)
}

// Close sends the records still waiting, for at most remoteTimeout.
func (r *remoteInbox) Close() {
	close(r.records)
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(remoteTimeout):
		r.logger.Warn("gateway: records not sent to the server before exit")
	}
}

// Ask implements [mcpgateway.Inbox].
func (r *remoteInbox) Ask(ctx context.Context, s mcpgateway.Session, c gate.Call, p *gate.Pending, posted func(string)) (*tool.Answer, error) {
	var v serverapi.GateAskView
	if err := r.do(ctx, http.MethodPost, "/v1/gate/asks", serverapi.GateAskRequest{Session: s, Call: c, Pending: *p}, http.StatusCreated, &v); err != nil {
		return nil, err
	}
	if v.RunID == "" || v.ApprovalID != p.Request.ID {
		return nil, errors.New("the server's answer names another approval")
	}
	if posted != nil {
		posted(r.base + "/#run=" + url.PathEscape(v.RunID))
	}
	path := "/v1/gate/asks/" + url.PathEscape(v.RunID) + "/" + url.PathEscape(v.ApprovalID)
	for {
		var got serverapi.GateAskView
		start := time.Now()
		err := r.do(ctx, http.MethodGet, path+"?wait="+remotePoll.String(), nil, http.StatusOK, &got)
		if err == nil && got.Status == store.StatusPending {
			// A server that answers at once is not asked again at once.
			if time.Since(start) < time.Second {
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
			if ctx.Err() == nil {
				continue
			}
		}
		if err != nil || ctx.Err() != nil {
			// No one may approve what no longer waits.
			r.withdraw(context.WithoutCancel(ctx), path)
			return nil, cmpErr(ctx.Err(), err)
		}
		switch got.Status {
		case store.StatusApproved, store.StatusDenied:
			if got.Answer == nil || got.Answer.OK != (got.Status == store.StatusApproved) {
				return nil, errors.New("the server's decision has no answer")
			}
			return got.Answer, nil
		case store.StatusExpired:
			return nil, nil
		}
		return nil, fmt.Errorf("the server says the approval is %q", got.Status)
	}
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func (r *remoteInbox) withdraw(ctx context.Context, path string) {
	ctx, cancel := context.WithTimeout(ctx, remoteTimeout)
	defer cancel()
	if err := r.do(ctx, http.MethodDelete, path, nil, http.StatusOK, nil); err != nil {
		r.logger.Warn("gateway: the approval could not be withdrawn on the server", "error", err)
	}
}

// Record implements [mcpgateway.Inbox]: the record is sent in the
// background; when maxRemoteRecords wait already, it is dropped with a
// warning (the records file keeps it).
func (r *remoteInbox) Record(_ context.Context, s mcpgateway.Session, rec gate.Record) {
	defer func() { _ = recover() }() // sent after Close: dropped
	select {
	case r.records <- remoteRecord{s: s, rec: rec}:
	default:
		r.logger.Warn("gateway: too many records wait for the server; one is not sent", "tool", rec.Name)
	}
}

// End implements [mcpgateway.Inbox]: sent after the session's records.
func (r *remoteInbox) End(_ context.Context, s mcpgateway.Session) {
	defer func() { _ = recover() }() // after Close: dropped
	select {
	case r.records <- remoteRecord{s: s, end: true}:
	default:
		r.logger.Warn("gateway: too many records wait for the server; a session's end is not sent")
	}
}

func (r *remoteInbox) sendRecords() {
	defer r.wg.Done()
	for rr := range r.records {
		ctx, cancel := context.WithTimeout(context.Background(), remoteTimeout)
		path, body := "/v1/gate/records", serverapi.GateRecordRequest{Session: rr.s, Record: rr.rec}
		if rr.end {
			path, body = "/v1/gate/sessions/end", serverapi.GateRecordRequest{Session: rr.s}
		}
		if err := r.do(ctx, http.MethodPost, path, body, http.StatusNoContent, nil); err != nil {
			r.logger.Warn("gateway: a record could not be sent to the server", "error", err)
		}
		cancel()
	}
}

// do sends one request with the token and reads the JSON answer into out
// when its status is want; any other status is an error with the
// server's detail.
func (r *remoteInbox) do(ctx context.Context, method, path string, body any, want int, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+r.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return fmt.Errorf("tollgate's server could not be reached: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxRemoteAnswer+1))
	if err != nil || len(b) > maxRemoteAnswer {
		return errors.New("tollgate's server's answer could not be read")
	}
	if resp.StatusCode != want {
		var prob struct {
			Detail string `json:"detail"`
		}
		_ = json.Unmarshal(b, &prob)
		return &remoteStatusError{code: resp.StatusCode, status: resp.Status, detail: oneLineHeader(prob.Detail)}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return errors.New("tollgate's server's answer is not what was expected")
	}
	return nil
}

// serveGatewayOptions is the gateway: section of server.yaml as the
// server's options: with mcp files, the gateway mounted at /mcp (its
// policy, hooks, records, pins and upstream servers, opened with ctx and
// closed by the function returned), asking on the page at pageURL unless
// the section names its own. The hooks' commands may write none of
// protect (the server's own files) and read none of hide (its store's).
func serveGatewayOptions(ctx context.Context, env *cliEnv, g *serveconfig.GatewayConfig, pageURL string, st store.Store, protect, hide []string, logger *slog.Logger) (*server.GatewayOptions, func(), error) {
	o := &server.GatewayOptions{Tenants: g.Tenants, PageURL: cmp.Or(g.PageURL, pageURL)}
	if len(g.MCPFiles) == 0 {
		return o, func() {}, nil
	}
	notice := func(line string) { fmt.Fprintln(env.stderr, "tollgate serve: gateway: "+oneLine(line, 2000)) }
	f := &gatewayFlags{mcp: g.MCPFiles, policy: g.PolicyFile, hooks: g.HooksFiles, records: g.RecordsFile, pins: g.PinsFile,
		hooksSandbox: cmp.Or(g.HooksSandbox, string(sandbox.Workspace)), protect: protect, hide: hide, inServe: true}
	gopts, closeGate, err := gatewayGate(ctx, f, g.Workdir, notice, logger)
	if err != nil {
		closeGate()
		return nil, nil, err
	}
	gopts.ApprovalTTL = g.ApprovalTTL
	if ls, ok := st.(layerstore.Layers); ok {
		withGatewayLayer(&gopts, runcore.NewLayerSource(ls), g.Workdir)
	}
	confine, release, err := toolsSandbox(env, g.Workdir, nil, nil, f.mcp)
	if err != nil {
		closeGate()
		return nil, nil, err
	}
	cfg, err := runbuild.LoadMCP(f.mcp, notice)
	if err != nil {
		release()
		closeGate()
		return nil, nil, fmt.Errorf("mcp: %w", unwrapField(err))
	}
	relay := &mcpgateway.Relay{}
	set, err := mcptool.Open(ctx, cfg, &mcptool.Options{Logger: logger, LookupEnv: env.lookupEnv, Sandbox: confine, Forward: relay.Forward()})
	if err != nil {
		release()
		closeGate()
		return nil, nil, fmt.Errorf("mcp: %w", err)
	}
	for _, st := range set.Servers() {
		notice("mcp: " + runbuild.MCPStatusLine(st))
	}
	o.New = func(inbox mcpgateway.Inbox) (*mcpgateway.Gateway, error) {
		return mcpgateway.New(ctx, set, &mcpgateway.Options{Gate: gopts, Workspace: g.Workdir, Relay: relay, PinsFile: g.PinsFile, Logger: logger, Inbox: inbox})
	}
	return o, func() { _ = set.Close(); release(); closeGate() }, nil
}

// withGatewayLayer has the calls of the mounted gateway decided with the
// rule layer of their client's tenant too, as a served run's are: its deny
// rules vote, its allow rules answer the asks they cover. Outside a
// call (tools/list, which asks the authorizers about each tool with no
// client session) no tenant is known and the layer says nothing: an empty
// layer, so that it neither hides every tool nor answers anything; every
// call of the mounted gateway has its session (the gateway has an inbox).
func withGatewayLayer(o *gate.Options, src *runcore.LayerSource, workdir string) {
	get := func(ctx context.Context) (*layer.Layer, error) {
		s, ok := mcpgateway.SessionFrom(ctx)
		if !ok {
			return layer.Compile(0, nil)
		}
		return src.Getter(s.Client.Tenant, workdir)(ctx)
	}
	o.Authorizers, o.Hooks = runcore.LayerVotes(o.Authorizers, o.Hooks, get)
}
