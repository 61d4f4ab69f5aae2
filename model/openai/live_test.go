//go:build live

// Run against the real service with: go test -tags live -run Live ./model/openai
// It needs the key in the environment and makes a few small calls (costs
// apply). The model defaults to gpt-4.1-mini; set TOLLGATE_LIVE_OPENAI_MODEL to change it.
package openai_test

import (
	"os"
	"testing"

	"github.com/tollgate-dev/tollgate/model/modeltest"
	"github.com/tollgate-dev/tollgate/model/openai"
)

func TestLive(t *testing.T) {
	key, _ := openai.KeyFromEnv(os.Getenv("TOLLGATE_LIVE_OPENAI_BASE_URL"))
	if key == "" {
		t.Skip("no API key in the environment")
	}
	m, err := openai.New(&openai.Options{APIKey: key, BaseURL: os.Getenv("TOLLGATE_LIVE_OPENAI_BASE_URL")})
	if err != nil {
		t.Fatal(err)
	}
	id := os.Getenv("TOLLGATE_LIVE_OPENAI_MODEL")
	if id == "" {
		id = "gpt-4.1-mini"
	}
	modeltest.Live(t, m, id)
}
