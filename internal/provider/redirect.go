package provider

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// ErrRedirect is wrapped by the error of a request that the server
// redirected to another origin (scheme, host or port) than the base URL's,
// which [Client] refuses to follow.
var ErrRedirect = errors.New("redirect to another origin refused")

// maxRedirects is the number of redirects followed, as net/http's default.
const maxRedirects = 10

// Client returns a copy of c (http.DefaultClient when nil) that follows a
// redirect only to the origin (scheme, host and port, RFC 6454) of base, the
// API root from [BaseURL]; c's own CheckRedirect, if any, is then asked too,
// else at most 10 redirects are followed, as net/http does.
//
// A redirect elsewhere fails the request with an error wrapping
// [ErrRedirect] that names both origins, before anything is sent there:
// net/http would carry the request's header, which holds the API key
// (X-Api-Key or, to another port of the same host, Authorization) and any
// gateway credential of Options.Headers, and a 307 or 308 the request body,
// the conversation, to whatever host the server names, over plain http as
// well. Dropping the credential and following would still send the
// conversation to a host nobody configured, so the redirect is refused
// rather than followed without it. The same rule keeps every hop to the
// scheme and host that [BaseURL] checked: a key never goes over plain http
// to a host that is not loopback on any hop. The copy is made once, when a
// model is built; a request costs nothing more.
func Client(c *http.Client, base string) *http.Client {
	if c == nil {
		c = http.DefaultClient
	}
	want := ""
	if u, err := url.Parse(base); err == nil {
		want = origin(u)
	}
	cc := *c
	next := c.CheckRedirect
	cc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if got := origin(req.URL); want == "" || got != want {
			return fmt.Errorf("%w: the server redirected the request to %s, not %s, the base URL's origin; set the base URL to where the API is served", ErrRedirect, got, want)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		return nil
	}
	return &cc
}

// origin returns "scheme://host:port" of u, lower case, with the scheme's
// default port when u names none.
func origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return scheme + "://" + host + ":" + port
}
