//go:build linux

package sandbox_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/tollgate-dev/tollgate/sandbox"
)

// A host's main calls sandbox.Main first (this test binary does, in
// TestMain); then New, and Wrap on each command before it starts.
func ExampleSandbox_Wrap() {
	ws, _ := os.MkdirTemp("", "ws-")
	defer os.RemoveAll(ws)
	outside, _ := os.MkdirTemp("", "outside-")
	defer os.RemoveAll(outside)

	sb, err := sandbox.New(nil) // the helper is this binary
	if err != nil {
		fmt.Println(err)
		return
	}
	cmd := exec.Command("sh", "-c", "echo ok > inside.txt; echo no > "+filepath.Join(outside, "escape.txt")+" 2>/dev/null; true")
	cmd.Dir = ws
	if _, err := sb.Wrap(cmd, sandbox.Policy{Mode: sandbox.Workspace, Workspace: ws}); err != nil {
		fmt.Println(err)
		return
	}
	if err := cmd.Run(); err != nil {
		fmt.Println(err)
		return
	}
	_, in := os.Stat(filepath.Join(ws, "inside.txt"))
	_, out := os.Stat(filepath.Join(outside, "escape.txt"))
	fmt.Println("wrote inside:", in == nil)
	fmt.Println("wrote outside:", out == nil)
	// Output:
	// wrote inside: true
	// wrote outside: false
}
