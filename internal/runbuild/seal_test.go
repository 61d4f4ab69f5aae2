package runbuild_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/runbuild"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/sandbox"
)

// The workspace's .claude directory, which every sandboxed command of a
// run seals (creating it when it is missing), goes when the run's build is
// closed if the workspace had none when it was built and it is still
// empty; a directory the workspace had stays, and so does one that is not
// empty.
func TestClaudeSealLeavesNoTrace(t *testing.T) {
	t.Parallel()
	if _, err := sandbox.New(nil); err != nil {
		t.Skipf("no sandbox here: %v", err)
	}
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	claude := filepath.Join(ws, ".claude")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := config(t, dir, runs.RunConfig{AgentConfig: runs.AgentConfig{Sandbox: &runs.SandboxConfig{Bash: "workspace"}}})
	b := withModel(calls(), &runbuild.Options{})
	// buildWith builds, does what a run would do in between, and closes.
	buildWith := func(during func()) {
		t.Helper()
		built, err := b.Build(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		during()
		if err := built.Close(); err != nil {
			t.Fatal(err)
		}
	}
	mkdir := func() {
		if err := os.Mkdir(claude, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	buildWith(mkdir) // as a sandboxed command's seal makes it
	if _, err := os.Lstat(claude); err == nil {
		t.Error("the .claude directory made during the run stayed")
	}
	mkdir() // the workspace's own
	buildWith(func() {})
	if _, err := os.Stat(claude); err != nil {
		t.Errorf("the workspace's own .claude directory went: %v", err)
	}
	if err := os.Remove(claude); err != nil {
		t.Fatal(err)
	}
	buildWith(func() { mkdir(); write(t, filepath.Join(claude, "settings.json"), "{}") })
	if _, err := os.Stat(filepath.Join(claude, "settings.json")); err != nil {
		t.Errorf("a .claude directory with a file went: %v", err)
	}
}
