package provider

import (
	"errors"
	"net/http"
	"net/url"
	"testing"
)

func TestOrigin(t *testing.T) {
	for _, c := range []struct{ a, b string }{
		{"https://API.example.com/v1", "https://api.example.com:443/other"},
		{"http://localhost/v1", "http://localhost:80"},
		{"http://[::1]:8080/", "http://[::1]:8080/x"},
		{"https://example.com./", "https://example.com/"},
	} {
		if origin(mustURL(t, c.a)) != origin(mustURL(t, c.b)) {
			t.Errorf("origin(%s) = %s, origin(%s) = %s, want equal", c.a, origin(mustURL(t, c.a)), c.b, origin(mustURL(t, c.b)))
		}
	}
	for _, c := range []struct{ a, b string }{
		{"https://api.example.com/v1", "http://api.example.com/v1"},
		{"http://127.0.0.1:18101/", "http://127.0.0.2:18101/"},
		{"http://127.0.0.1:18101/", "http://127.0.0.1:18102/"},
		{"https://api.example.com/", "https://api.example.com.evil.net/"},
	} {
		if origin(mustURL(t, c.a)) == origin(mustURL(t, c.b)) {
			t.Errorf("origin(%s) = origin(%s) = %s, want different", c.a, c.b, origin(mustURL(t, c.a)))
		}
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestClientCheckRedirect: the copy refuses another origin, asks the
// caller's own CheckRedirect within the origin, else stops after 10; the
// caller's client is left unchanged.
func TestClientCheckRedirect(t *testing.T) {
	base := "https://api.example.com/v1/"
	req := func(s string) *http.Request { return &http.Request{URL: mustURL(t, s)} }
	c := Client(nil, base)
	if c == http.DefaultClient || http.DefaultClient.CheckRedirect != nil {
		t.Fatal("Client changed http.DefaultClient")
	}
	if err := c.CheckRedirect(req("http://api.example.com/v1/x"), nil); !errors.Is(err, ErrRedirect) {
		t.Errorf("https to http: err = %v, want ErrRedirect", err)
	}
	if err := c.CheckRedirect(req("https://evil.example.net/v1/x"), nil); !errors.Is(err, ErrRedirect) {
		t.Errorf("another host: err = %v, want ErrRedirect", err)
	}
	if err := c.CheckRedirect(req("https://api.example.com:443/v2/x"), nil); err != nil {
		t.Errorf("same origin: err = %v, want nil", err)
	}
	if err := c.CheckRedirect(req("https://api.example.com/v2/x"), make([]*http.Request, 10)); err == nil || errors.Is(err, ErrRedirect) {
		t.Errorf("11th redirect: err = %v, want the limit", err)
	}
	mine := errors.New("mine")
	own := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return mine }}
	c = Client(own, base)
	if err := c.CheckRedirect(req("https://api.example.com/v2/x"), nil); err != mine {
		t.Errorf("same origin with the caller's CheckRedirect: err = %v, want its error", err)
	}
	if err := c.CheckRedirect(req("https://evil.example.net/"), nil); !errors.Is(err, ErrRedirect) {
		t.Errorf("another origin with the caller's CheckRedirect: err = %v, want ErrRedirect first", err)
	}
}
