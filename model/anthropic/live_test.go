//go:build live

// Run against the real service with: go test -tags live -run Live ./model/anthropic
// It needs the key in the environment and makes a few small calls (costs
// apply). The model defaults to claude-haiku-4-5; set TOLLGATE_LIVE_ANTHROPIC_MODEL to change it.
package anthropic_test

import (
	"os"
	"testing"

	"github.com/tollgate-dev/tollgate/model/anthropic"
	"github.com/tollgate-dev/tollgate/model/modeltest"
)

func TestLive(t *testing.T) {
	key, _ := anthropic.KeyFromEnv()
	if key == "" {
		t.Skip("no API key in the environment")
	}
	m, err := anthropic.New(&anthropic.Options{APIKey: key})
	if err != nil {
		t.Fatal(err)
	}
	id := os.Getenv("TOLLGATE_LIVE_ANTHROPIC_MODEL")
	if id == "" {
		id = "claude-haiku-4-5"
	}
	modeltest.Live(t, m, id)
}
