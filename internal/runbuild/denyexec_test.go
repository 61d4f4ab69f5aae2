//go:build linux

package runbuild_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/runbuild"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/runs"
)

// A program the policy denies outright is refused by bash's sandbox at
// exec, under a spelling the analysis of the script allows (a copy of the
// program under another name, in the workspace): the builder hands the
// policy's denied programs to the sandbox.
func TestPolicyDeniedProgramRefusedAtExec(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	victim := write(t, filepath.Join(ws, "victim"), "v\n")
	write(t, filepath.Join(dir, "policy.yaml"), `rules:
  - id: no-rm
    tool: bash
    command: {program: rm}
    decision: deny
    reason: no deleting
`)
	// A copy of rm in the workspace, made before the run (the sandbox does
	// not let a command read rm's own file to copy it).
	rm, err := os.ReadFile("/usr/bin/rm")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "x"), rm, 0o755); err != nil {
		t.Fatal(err)
	}
	script := "./x victim"
	m := calls(model.FuncCall{Name: "bash", Arguments: map[string]string{"command": script}})
	res := start(t, withModel(m, &runbuild.Options{}), config(t, dir, runs.RunConfig{AgentConfig: runs.AgentConfig{PolicyFile: "policy.yaml", Sandbox: &runs.SandboxConfig{}}}))
	tc := res.ToolCalls[0]
	if tc.Decision.Outcome != gate.OutcomeAllowed {
		t.Fatalf("the analysis no longer allows %q (%s by %s): pick another spelling it allows", script, tc.Decision.Outcome, tc.Decision.By)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Fatalf("the copy of rm ran: %v; output %q", err, tc.Output)
	}
	if !strings.Contains(tc.Output, "refused to execute") {
		t.Errorf("output %q: want the sandbox's refusal", tc.Output)
	}
}
