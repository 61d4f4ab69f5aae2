package runbuild_test

import (
	"os"
	"testing"

	"github.com/tollgate-dev/tollgate/sandbox"
)

// The test binary is the sandbox helper of the commands the builds confine:
// started as one, it runs sandbox.Main and never reaches the tests.
func TestMain(m *testing.M) {
	sandbox.Main()
	os.Exit(m.Run())
}
