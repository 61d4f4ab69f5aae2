package anthropic_test

import (
	"testing"

	"github.com/tollgate-dev/tollgate/internal/providertest"
	"github.com/tollgate-dev/tollgate/model"
)

// redirects describes this provider to the shared tests of redirects.
var redirects = providertest.Redirects{
	Key:       testKey,
	KeyHeader: "X-Api-Key",
	Path:      "/v1/messages",
	New:       func(t *testing.T, baseURL string) model.Model { return newModel(t, baseURL, nil) },
}

// TestRedirectToAnotherOriginRefused: a server that redirects the request
// (307, which resends the body and, to the same host name, the key) to
// another origin gets the call failed, not retried, and the other origin
// receives nothing: neither the key nor the conversation.
func TestRedirectToAnotherOriginRefused(t *testing.T) {
	providertest.TestRedirectToAnotherOriginRefused(t, redirects)
}

// TestRedirectWithinOriginFollowed: a redirect to another path of the base
// URL's own scheme, host and port is followed, with the key.
func TestRedirectWithinOriginFollowed(t *testing.T) {
	providertest.TestRedirectWithinOriginFollowed(t, redirects)
}
