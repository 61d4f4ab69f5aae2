package providertest

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tollgate-dev/tollgate/model"
)

// Redirects describes one provider for [TestRedirectToAnotherOriginRefused]
// and [TestRedirectWithinOriginFollowed], the tests of how every HTTP
// provider treats a redirect from the server it calls.
type Redirects struct {
	// Key is the API key New gives the provider; it must reach no other
	// origin and appear in no error.
	Key string
	// KeyHeader is the request header that carries Key ("X-Api-Key",
	// "Authorization").
	KeyHeader string
	// Path is the path, below the base URL, that a call is sent to
	// ("/v1/messages", "/v1/chat/completions").
	Path string
	// New opens the provider, with Key and fast retries, on baseURL (a
	// local server's URL, with or without a path prefix). The model must be
	// a [model.Streamer]. New fails t if the provider cannot be opened.
	New func(t *testing.T, baseURL string) model.Model
}

// TestRedirectToAnotherOriginRefused checks that a server that redirects the
// request (307, which resends the body and, to the same host name, the key)
// to another origin gets the call failed, not retried, on Generate and
// Stream, and the other origin receives nothing: neither the key nor the
// conversation.
func TestRedirectToAnotherOriginRefused(t *testing.T, d Redirects) {
	var reached atomic.Int32
	var leaked atomic.Value
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		leaked.Store(r.Header.Get(d.KeyHeader))
		http.Error(w, "no", http.StatusTeapot)
	}))
	defer other.Close()
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	m := d.New(t, srv.URL)
	s, ok := m.(model.Streamer)
	if !ok {
		t.Fatalf("%T is not a model.Streamer", m)
	}
	req := &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}, Model: "m"}
	check := func(what string, err error) {
		t.Helper()
		var pe *model.ProviderError
		if !errors.As(err, &pe) {
			t.Fatalf("%s: err = %v, want a *model.ProviderError", what, err)
		}
		if pe.Retryable || !strings.Contains(pe.Error(), "redirect") || !strings.Contains(pe.Error(), strings.TrimPrefix(other.URL, "http://")) {
			t.Errorf("%s: err = %v (retryable %v), want a final error naming the redirect and its target", what, err, pe.Retryable)
		}
		if strings.Contains(err.Error(), d.Key) {
			t.Errorf("%s: the key is in the error: %v", what, err)
		}
	}
	_, err := m.Generate(context.Background(), req)
	check("Generate", err)
	var serr error
	for _, e := range s.Stream(context.Background(), req) {
		if e != nil {
			serr = e
		}
	}
	check("Stream", serr)
	if n := reached.Load(); n != 0 {
		t.Errorf("the other origin received %d requests (key %q), want none", n, leaked.Load())
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("the server was asked %d times, want 2 (no retry of a refused redirect)", n)
	}
}

// TestRedirectWithinOriginFollowed checks that a redirect (308) to another
// path of the base URL's own scheme, host and port is followed, with the
// key.
func TestRedirectWithinOriginFollowed(t *testing.T, d Redirects) {
	var got atomic.Value
	mux := http.NewServeMux()
	mux.HandleFunc("/old"+d.Path, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/new"+d.Path, http.StatusPermanentRedirect)
	})
	mux.HandleFunc("/new"+d.Path, func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Get(d.KeyHeader))
		http.Error(w, "stop here", http.StatusBadRequest)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	m := d.New(t, srv.URL+"/old")
	_, err := m.Generate(context.Background(), &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}, Model: "m"})
	var pe *model.ProviderError
	if !errors.As(err, &pe) || pe.StatusCode != http.StatusBadRequest {
		t.Fatalf("err = %v, want the 400 of the redirect's target", err)
	}
	if k, _ := got.Load().(string); !strings.Contains(k, d.Key) {
		t.Errorf("the target within the origin got the key header %q, want the key", k)
	}
}
