package runs_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/tool"
)

// A builder that makes the agent from the model and tools alone must not run
// a configuration that denies a tool: the host refuses the run, naming the
// field, before anything is stored or any tool runs; at resume, the run stays
// halted and its approval unused.
func TestHostRefusesUnappliedGovernance(t *testing.T) {
	ctx := context.Background()
	save := &testkit.Counter{Name: "transfer_funds"}
	script := func() model.Model {
		return testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer_funds", map[string]string{"name": "todo"})})
	}
	modelOnly := runs.BuilderFunc(func(ctx context.Context, cfg runs.RunConfig) (*runs.Built, error) {
		return &runs.Built{Options: agent.Options{Model: script(), Tools: agent.ToolList{save}}}, nil
	})
	s := memory.New(nil)
	h := newHost(t, s, modelOnly, "host-a", time.Minute)
	cfg := testConfig(t)
	cfg.Deny = []string{"transfer_*"}
	_, err := h.Start(ctx, runs.StartRequest{RunID: "run_1", Config: cfg, Prompt: "save"})
	var fe *runs.FieldError
	if !errors.As(err, &fe) || fe.Field != runcore.FieldDeny || !strings.Contains(err.Error(), `["transfer_*"]`) {
		t.Fatalf("start with an unapplied deny: %v, want a FieldError naming deny", err)
	}
	if save.Count() != 0 {
		t.Fatalf("the denied tool ran %d times", save.Count())
	}
	if _, err := s.GetRun(ctx, "run_1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the refused run was stored: %v", err)
	}

	// A run started by a builder that applies its policy halts on an
	// approval; a host whose builder ignores the policy does not resume it.
	cfg = testConfig(t)
	cfg.PolicyFile = "/srv/policy.yaml"
	b := &testBuilder{m: script(), tools: agent.ToolList{save}}
	applying := runs.BuilderFunc(func(ctx context.Context, cfg runs.RunConfig) (*runs.Built, error) {
		built, err := b.Build(ctx, cfg)
		if err == nil {
			built.Applied = []string{runcore.FieldPolicyFile}
		}
		return built, err
	})
	res, err := newHost(t, s, applying, "host-b", time.Minute).Start(ctx, runs.StartRequest{RunID: "run_2", Config: cfg, Prompt: "save"})
	if err != nil || res.Status != agent.StatusPending {
		t.Fatalf("start: %+v %v", res, err)
	}
	if _, err := h.Answer(ctx, "run_2", res.Pending[0].ID, store.Answer{Approve: true, By: tool.PrincipalOf("person:bob")}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Resume(ctx, runs.ResumeRequest{RunID: "run_2"}); !errors.As(err, &fe) || fe.Field != runcore.FieldPolicyFile {
		t.Fatalf("resume by a builder that ignores the policy: %v, want a FieldError naming policyFile", err)
	}
	run, err := s.GetRun(ctx, "run_2")
	if err != nil || run.Status != store.RunPending || run.Lease != nil {
		t.Fatalf("refused resume left the run %+v %v, want pending without a lease", run, err)
	}
	if save.Count() != 0 {
		t.Fatalf("transfer_funds ran %d times", save.Count())
	}
}
