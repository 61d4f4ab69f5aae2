package serveconfig

import (
	"errors"
	"fmt"
	"net/url"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/tollgate-dev/tollgate/internal/glob"
	"github.com/tollgate-dev/tollgate/server"
)

// checkWebhook checks a webhook of server.yaml as server.New does, so that
// a bad one is reported at its line: an http or https URL (never shown: it
// may hold a credential), a whsec_ secret, valid event type globs.
func checkWebhook(w server.Webhook) error {
	u, err := url.Parse(w.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("webhook URL: not an http or https URL (not shown: it may hold a credential)")
	}
	shown := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
	if _, err := standardwebhooks.NewWebhook(w.Secret); err != nil {
		return fmt.Errorf("webhook %s: the secret is not whsec_ and base64", shown)
	}
	for _, g := range w.Types {
		if !glob.Valid(g) {
			return fmt.Errorf("webhook %s: event type glob %q is empty or has control characters", shown, g)
		}
	}
	return nil
}
