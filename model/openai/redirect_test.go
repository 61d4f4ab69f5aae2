package openai_test

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

// TestRedirectToAnotherOriginRefused: a server that redirects the request
// (307, which resends the body and, to the same host name, the key) to
// another origin gets the call failed, not retried, and the other origin
// receives nothing: neither the key nor the conversation.
func TestRedirectToAnotherOriginRefused(t *testing.T) {
	var reached atomic.Int32
	var leaked atomic.Value
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		leaked.Store(r.Header.Get("Authorization"))
		http.Error(w, "no", http.StatusTeapot)
	}))
	defer other.Close()
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	m := newModel(t, srv.URL, nil)
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
		if strings.Contains(err.Error(), testKey) {
			t.Errorf("%s: the key is in the error: %v", what, err)
		}
	}
	_, err := m.Generate(context.Background(), req)
	check("Generate", err)
	var serr error
	for _, e := range m.Stream(context.Background(), req) {
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

// TestRedirectWithinOriginFollowed: a redirect to another path of the base
// URL's own scheme, host and port is followed, with the key.
func TestRedirectWithinOriginFollowed(t *testing.T) {
	var got atomic.Value
	mux := http.NewServeMux()
	mux.HandleFunc("/old/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/new/v1/chat/completions", http.StatusPermanentRedirect)
	})
	mux.HandleFunc("/new/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Get("Authorization"))
		http.Error(w, "stop here", http.StatusBadRequest)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	m := newModel(t, srv.URL+"/old", nil)
	_, err := m.Generate(context.Background(), &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}, Model: "m"})
	var pe *model.ProviderError
	if !errors.As(err, &pe) || pe.StatusCode != http.StatusBadRequest {
		t.Fatalf("err = %v, want the 400 of the redirect's target", err)
	}
	if k, _ := got.Load().(string); !strings.Contains(k, testKey) {
		t.Errorf("the target within the origin got the key header %q, want the key", k)
	}
}
