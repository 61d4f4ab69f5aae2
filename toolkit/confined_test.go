package toolkit_test

import (
	"context"
	"errors"
	"os/exec"
	"testing"

	"github.com/tollgate-dev/tollgate/builtin"
	"github.com/tollgate-dev/tollgate/tool"
	"github.com/tollgate-dev/tollgate/toolkit"
)

// The builtin bash never runs a model's commands unconfined by omission:
// New refuses it without a sandbox unless the caller says so, and accepts
// a sandbox, Unconfined, bash disabled, shadowed or no builtins at all.
func TestBashMustBeConfined(t *testing.T) {
	dir := t.TempDir()
	wrap := func(cmd *exec.Cmd) (bool, error) { return false, nil }
	if _, err := toolkit.New(&toolkit.Options{Workdir: dir}); !errors.Is(err, toolkit.ErrUnconfined) {
		t.Fatalf("New with bash and no sandbox: %v, want ErrUnconfined", err)
	}
	if _, err := toolkit.New(&toolkit.Options{Workdir: dir, Builtin: &builtin.Options{}}); !errors.Is(err, toolkit.ErrUnconfined) {
		t.Fatalf("New with builtin options but no sandbox: %v, want ErrUnconfined", err)
	}
	shadow, err := tool.New("bash", "my bash", func(_ context.Context, in struct{}) (string, error) { return "", nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]toolkit.Options{
		"sandbox":     {Workdir: dir, Builtin: &builtin.Options{Sandbox: wrap}},
		"unconfined":  {Workdir: dir, Unconfined: true},
		"disabled":    {Workdir: dir, Disable: []string{"bash"}},
		"shadowed":    {Workdir: dir, Extra: []tool.Tool{shadow}},
		"no builtins": {NoBuiltins: true},
	} {
		if _, err := toolkit.New(&o); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
