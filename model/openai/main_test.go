package openai_test

import (
	"os"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/providertest"
)

// TestMain lets the benchmarks run their model server in a child process
// (see providertest.NewBenchServer).
func TestMain(m *testing.M) {
	providertest.ServeBenchChild()
	os.Exit(m.Run())
}
