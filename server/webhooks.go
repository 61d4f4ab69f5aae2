package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/tollgate-dev/tollgate/internal/glob"
	"github.com/tollgate-dev/tollgate/store"
)

// Webhook sends the events of one tenant to a URL as they are stored,
// signed per the Standard Webhooks specification (headers webhook-id: the
// event's "evt_SEQ", the same on every retry; webhook-timestamp;
// webhook-signature: v1 HMAC-SHA256). The body is
// {"type", "timestamp", "data": serverapi.StreamEvent}. Delivery follows the event
// log from the moment the server starts; a delivery that fails is retried
// with backoff (at most 5 times, 2xx is success) and then
// dropped with a log line.
type Webhook struct {
	// URL receives POST requests (http or https).
	URL string
	// Secret is the signing secret: "whsec_" and the base64 key, as
	// Standard Webhooks gives it.
	Secret string
	// Tenant is the tenant whose events are sent.
	Tenant string
	// Types are event type globs ("approval.*", "run.finished"); empty sends
	// every event.
	Types []string
}

// webhookAttempts is how often a webhook delivery is tried.
const webhookAttempts = 5

type webhook struct {
	Webhook
	signer *standardwebhooks.Webhook
	// shown is the URL as logs and errors show it: scheme, host and path,
	// without the user information or query that may hold a credential.
	shown string
}

func newWebhook(w Webhook) (*webhook, error) {
	u, err := url.Parse(w.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("server: webhook URL: not an http or https URL (not shown: it may hold a credential)")
	}
	shown := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
	if w.Secret == "" {
		return nil, fmt.Errorf("server: webhook %s: no signing secret", shown)
	}
	s, err := standardwebhooks.NewWebhook(w.Secret)
	if err != nil {
		return nil, fmt.Errorf("server: webhook %s: the secret is not whsec_ and base64", shown)
	}
	for _, g := range w.Types {
		if !glob.Valid(g) {
			return nil, fmt.Errorf("server: webhook %s: event type glob %q is empty or has control characters", shown, g)
		}
	}
	return &webhook{Webhook: w, signer: s, shown: shown}, nil
}

func (w *webhook) wants(typ string) bool {
	if len(w.Types) == 0 {
		return true
	}
	for _, g := range w.Types {
		if glob.Match(g, typ) {
			return true
		}
	}
	return false
}

// deliver follows the tenant's events after seq and posts each one wanted.
func (s *Server) deliver(ctx context.Context, w *webhook, after int64) {
	client := &http.Client{Timeout: 10 * time.Second}
	f := store.EventFilter{Tenant: w.Tenant, AfterSeq: after, Limit: store.MaxLimit}
	for ctx.Err() == nil {
		evs, err := s.store.ListEvents(ctx, f)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Error("webhook: reading events", "url", w.shown, "error", err)
			}
			return
		}
		for _, ev := range evs {
			f.AfterSeq = ev.Seq
			if w.wants(ev.Type) {
				s.post(ctx, client, w, ev)
			}
		}
		if len(evs) == 0 {
			if err := s.store.WaitEvents(ctx, f); err != nil {
				return
			}
		}
	}
}

func (s *Server) post(ctx context.Context, client *http.Client, w *webhook, ev store.Event) {
	body, err := json.Marshal(map[string]any{"type": ev.Type, "timestamp": ev.Time, "data": streamEvent(ev)})
	if err != nil {
		return
	}
	id := "evt_" + strconv.FormatInt(ev.Seq, 10)
	wait := 500 * time.Millisecond
	for attempt := 1; attempt <= webhookAttempts; attempt++ {
		now := s.now()
		sig, err := w.signer.Sign(id, now, body)
		if err != nil {
			return
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
		if err != nil {
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(standardwebhooks.HeaderWebhookID, id)
		req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
		req.Header.Set(standardwebhooks.HeaderWebhookSignature, sig)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				return
			}
			err = errors.New(resp.Status)
		}
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("webhook delivery failed", "url", w.shown, "event", id, "attempt", attempt, "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait *= 2
	}
	s.log.Error("webhook delivery dropped after every attempt", "url", w.shown, "event", id)
}
