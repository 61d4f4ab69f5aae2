package runs

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// Drive says how one part of a run is driven by [Host.Start] or [Host.Resume].
type Drive struct {
	// WaitFor, if set, answers pending requests in this process (a terminal
	// prompt, an automatic yes or no); otherwise the run halts and is stored.
	WaitFor tool.WaitFunc
	// OnEvent, if set, sees every event of the agent as it happens, on the
	// goroutine that called Start or Resume.
	OnEvent func(agent.Event)
	// Ended, if set, is called once the part's end is stored (the run
	// ended, or halted for an answer), before Start or Resume returns, with
	// the run as that write stored it: a host that answers with the run
	// need not read it again. It is not called when the end was not
	// stored, nor for a part a stopping host released.
	Ended func(store.Run)
}

// StartRequest starts a run.
type StartRequest struct {
	// RunID is the new run's ID; empty for a new random one ("run_" and 16
	// hex digits).
	RunID string
	// Tenant is stored with the run.
	Tenant string
	// Owner is the principal who started the run, stored as its text form
	// ([store.Run.Owner]; read back with [store.Run.OwnerPrincipal]); zero
	// for no one. A kind that is not one of tool's principal kinds is an
	// error.
	Owner tool.Principal
	// Config must be resolved ([RunConfig.Resolve]).
	Config RunConfig
	// Prompt is the user's message; it must not be empty.
	Prompt string
	// History is an earlier conversation the run starts from.
	History []model.Message
	// Created, if set, is called once the run is stored (before its first
	// model turn), with the run as stored; a host that answers a request
	// while the run goes on in the background reports it from here.
	Created func(store.Run)
	Drive
}

// Start stores a new run and drives it until it ends or halts on a pending
// request (then it is stored with its requests, and its lease released). It
// returns the agent's result and error; storing failures are returned too.
func (h *Host) Start(ctx context.Context, req StartRequest) (*agent.Result, error) {
	id, cfg, err := checkStart(req)
	if err != nil {
		return nil, err
	}
	built, err := h.buildRun(ctx, req.Tenant, id, req.Owner, cfg)
	if err != nil {
		return nil, err
	}
	defer runcore.CloseBuilt(built)
	claimed, err := h.create(ctx, id, req, cfg, built)
	if err != nil {
		return nil, err
	}
	if req.Created != nil {
		req.Created(claimed)
	}
	d := h.newDriver(claimed, cfg, built, req.Drive)
	return d.drive(ctx, func(ctx context.Context, a *agent.Agent) iter2 {
		return a.Stream(ctx, req.Prompt, agent.WithRunID(id), agent.WithHistory(req.History...))
	})
}

// checkStart checks req and returns the new run's ID and its configuration
// with the files that govern it pinned as they are now: every later build
// of its agent (resume, takeover) refuses one that changed.
func checkStart(req StartRequest) (id string, cfg RunConfig, err error) {
	if req.Prompt == "" {
		return "", cfg, ErrEmptyPrompt
	}
	if err := runcore.CheckConfig(req.Config); err != nil {
		return "", cfg, err
	}
	if err := runcore.CheckOwner(req.Owner); err != nil {
		return "", cfg, err
	}
	if id = req.RunID; id == "" {
		id = runcore.NewRunID()
	}
	cfg, err = runcore.PinFiles(req.Config)
	return id, cfg, err
}

// buildRun builds the agent of run id of tenant, started by owner, when
// cfg's governing files are as pinned.
func (h *Host) buildRun(ctx context.Context, tenant, id string, owner tool.Principal, cfg RunConfig) (*Built, error) {
	ctx = runcore.WithBuildRun(runcore.WithBuildTenant(ctx, tenant), id, owner)
	return runcore.BuildPinned(ctx, h.build, cfg)
}

// create stores the new run id, running and leased to this host, with its
// run.started event and the MCP logins made while its agent was built.
func (h *Host) create(ctx context.Context, id string, req StartRequest, cfg RunConfig, built *Built) (store.Run, error) {
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return store.Run{}, err
	}
	started := store.Event{Tenant: req.Tenant, RunID: id, Type: runcore.EventRunStarted, Data: runcore.StartedData(cfg, req.Owner, false)}
	claimed, err := h.store.CreateRun(ctx, store.CreateRunRequest{
		Run:    store.Run{ID: id, Tenant: req.Tenant, Owner: req.Owner.String(), Status: store.RunRunning, Config: cfgJSON},
		Holder: h.holder, LeaseTTL: h.ttl,
		Events: append([]store.Event{started}, runcore.LoginEvents(req.Tenant, id, req.Owner, built)...),
	})
	if err != nil {
		return store.Run{}, fmt.Errorf("runs: storing run %s: %w", id, err)
	}
	return claimed, nil
}
