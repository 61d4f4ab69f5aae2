package runs_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
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

// countingBuilder counts the builds of a testBuilder.
type countingBuilder struct {
	*testBuilder
	builds atomic.Int64
}

// Build builds as testBuilder does and declares the policy and the Claude
// Code settings applied: these tests are about the files' pins, not their
// content.
func (c *countingBuilder) Build(ctx context.Context, cfg runs.RunConfig) (*runs.Built, error) {
	c.builds.Add(1)
	built, err := c.testBuilder.Build(ctx, cfg)
	if built != nil {
		built.Applied = []string{runcore.FieldPolicyFile, runcore.FieldClaude}
	}
	return built, err
}

// haltedRun starts a run whose policy lies in conf/ below the workspace and
// whose Claude Code project settings are on, halts it on an approval and
// approves it; it returns the host, the store, the builder and the workspace.
func haltedRun(t *testing.T) (*runs.Host, store.Store, *countingBuilder, string) {
	t.Helper()
	ctx := context.Background()
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "conf"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "conf", "policy.yaml"), []byte("rules: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := runs.RunConfig{AgentConfig: runs.AgentConfig{Model: runs.ModelRef{Provider: "script", Name: "s.yaml"}, Workdir: ".", PolicyFile: "conf/policy.yaml", Claude: &runs.ClaudeConfig{Project: true}}}.Resolve(ws)
	if err != nil {
		t.Fatal(err)
	}
	transfer := &testkit.Counter{Name: "transfer_funds"}
	b := &countingBuilder{testBuilder: &testBuilder{m: testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer_funds", map[string]int{"amount": 5})}), tools: agent.ToolList{transfer}}}
	s := memory.New(nil)
	h := newHost(t, s, b, "host-a", time.Minute)
	res, err := h.Start(ctx, runs.StartRequest{RunID: "run_1", Config: cfg, Prompt: "pay"})
	if err != nil || res.Status != agent.StatusPending {
		t.Fatalf("start: %+v %v", res, err)
	}
	if _, err := h.Answer(ctx, "run_1", res.Pending[0].ID, store.Answer{Approve: true, By: tool.PrincipalOf("person:bob")}); err != nil {
		t.Fatal(err)
	}
	return h, s, b, ws
}

// A run pins its policy and the absent project settings files when it
// starts; a resume after the policy's directory was swapped for another (a
// sandboxed command may rename a directory it cannot write into) refuses,
// naming the file, builds nothing and leaves the run pending. Restored, the
// run resumes.
func TestResumeRefusesSwappedPolicy(t *testing.T) {
	ctx := context.Background()
	h, s, b, ws := haltedRun(t)
	run, err := s.GetRun(ctx, "run_1")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := runcore.LoadConfig(run)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Pins) != 3 || cfg.Pins[0].SHA256 == "" || !cfg.Pins[1].Absent || !cfg.Pins[2].Absent {
		t.Fatalf("stored pins %+v", cfg.Pins)
	}
	conf := filepath.Join(ws, "conf")
	if err := os.Rename(conf, conf+".orig"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(conf, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(conf, "policy.yaml"), []byte("autonomy: full_auto\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := b.builds.Load()
	_, err = h.Resume(ctx, runs.ResumeRequest{RunID: "run_1"})
	if !errors.Is(err, runs.ErrGoverningFileChanged) || !strings.Contains(err.Error(), filepath.Join(conf, "policy.yaml")) {
		t.Fatalf("resume after the swap: %v", err)
	}
	if b.builds.Load() != before {
		t.Error("the agent was built from a swapped policy")
	}
	if run, _ := s.GetRun(ctx, "run_1"); run.Status != store.RunPending || run.Lease != nil {
		t.Fatalf("run after the refusal: %s %+v", run.Status, run.Lease)
	}
	// Gone altogether is refused as well.
	if err := os.RemoveAll(conf); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Resume(ctx, runs.ResumeRequest{RunID: "run_1"}); !errors.Is(err, runs.ErrGoverningFileChanged) || !strings.Contains(err.Error(), "vanished") {
		t.Fatalf("resume without the policy: %v", err)
	}
	if err := os.Rename(conf+".orig", conf); err != nil {
		t.Fatal(err)
	}
	if res, err := h.Resume(ctx, runs.ResumeRequest{RunID: "run_1"}); err != nil || res.Status != agent.StatusDone {
		t.Fatalf("resume with the policy restored: %+v %v", res, err)
	}
}

// A project settings file that did not exist when the run started and
// appeared while it waited (planted by a tool) is refused on resume.
func TestResumeRefusesPlantedSettings(t *testing.T) {
	ctx := context.Background()
	h, _, b, ws := haltedRun(t)
	if err := os.MkdirAll(filepath.Join(ws, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(ws, ".claude", "settings.local.json")
	if err := os.WriteFile(planted, []byte(`{"hooks":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	before := b.builds.Load()
	_, err := h.Resume(ctx, runs.ResumeRequest{RunID: "run_1"})
	if !errors.Is(err, runs.ErrGoverningFileChanged) || !strings.Contains(err.Error(), planted+" appeared") {
		t.Fatalf("resume with a planted settings file: %v", err)
	}
	if b.builds.Load() != before {
		t.Error("the agent was built with a planted settings file")
	}
}

// A configuration stored before runs pinned their files has no pins and is
// not checked; one whose governing file has no pin is refused.
func TestCheckPinsOldAndIncomplete(t *testing.T) {
	ws := t.TempDir()
	pol := filepath.Join(ws, "policy.yaml")
	if err := os.WriteFile(pol, []byte("rules: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := []byte(`{"version":1,"model":{"provider":"openai","name":"m"},"workdir":"` + ws + `","policyFile":"` + pol + `"}`)
	var cfg runs.RunConfig
	if err := json.Unmarshal(old, &cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pol, []byte("autonomy: full_auto\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := runcore.CheckPins(cfg); err != nil {
		t.Fatalf("a configuration without pins: %v", err)
	}
	pinned, err := runcore.PinFiles(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := runcore.CheckPins(pinned); err != nil {
		t.Fatalf("unchanged: %v", err)
	}
	pinned.HooksFiles = []string{filepath.Join(ws, "hooks.yaml")}
	if err := runcore.CheckPins(pinned); err == nil || !strings.Contains(err.Error(), "hooks.yaml was not pinned") {
		t.Fatalf("an unpinned governing file: %v", err)
	}
	if _, err := runcore.PinFiles((runs.RunConfig{AgentConfig: runs.AgentConfig{Workdir: ws, PolicyFile: ws}})); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("pinning a directory: %v", err)
	}
}

// A durable run pins its files when it is prepared; a recovery (here the
// first drive) after its policy changed builds nothing and runs no tool,
// also when the engine's input lost the pins: the stored run's are used.
func TestDurableRefusesChangedPolicy(t *testing.T) {
	for _, lost := range []bool{false, true} {
		ctx := context.Background()
		st := memory.New(nil)
		ws := t.TempDir()
		pol := filepath.Join(ws, "policy.yaml")
		if err := os.WriteFile(pol, []byte("rules: []\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		transfer := &testkit.Counter{Name: "transfer_funds"}
		b := &countingBuilder{testBuilder: &testBuilder{m: testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer_funds", map[string]int{"amount": 5})}), tools: agent.ToolList{transfer}}}
		d, err := runcore.NewDurable(st, b, nil)
		if err != nil {
			t.Fatal(err)
		}
		input := runcore.DurableRun{RunID: "run_d", Config: runs.RunConfig{Version: runcore.ConfigVersion, AgentConfig: runs.AgentConfig{Workdir: ws, PolicyFile: pol}}, Prompt: "move 5"}
		if err := runcore.PrepareDurable(ctx, st, &input); err != nil {
			t.Fatal(err)
		}
		if len(input.Config.Pins) != 1 {
			t.Fatalf("pins %+v", input.Config.Pins)
		}
		if lost {
			input.Config.Pins = nil
		}
		if err := os.WriteFile(pol, []byte("autonomy: full_auto\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		eng := newFakeEngine()
		eng.execution(-1)
		// Without the check the run would wait for an approval: cancel it there.
		h := newHost(t, st, b, "host-a", time.Minute)
		eng.onWait = func(string) {
			if err := h.Cancel(ctx, "run_d", tool.Principal{Kind: tool.PrincipalPerson, Name: "test"}); err != nil {
				t.Errorf("cancel: %v", err)
			}
		}
		_, err = d.Drive(ctx, eng, input)
		if !errors.Is(err, runs.ErrGoverningFileChanged) {
			t.Fatalf("lost pins %v: drive after the policy changed: %v", lost, err)
		}
		if b.builds.Load() != 0 || transfer.Count() != 0 {
			t.Fatalf("lost pins %v: built %d times, the tool ran %d times", lost, b.builds.Load(), transfer.Count())
		}
	}
}
