package mcptool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/tollgate-dev/tollgate/internal/mcptoken"
	"golang.org/x/oauth2"
)

// OAuthConfig is how tollgate registers as an OAuth client with the
// authorization server of a streamable-HTTP server (MCP specification
// 2025-11-25, "Authorization: Client registration approaches"); in mcp.json
// the "oauth" object with the keys "clientId", "clientSecret",
// "clientMetadataUrl" and "scopes". The ways are tried in the order client
// ID metadata document (when the server supports it), pre-registered
// client ID, then dynamic registration (RFC 7591), which needs no
// configuration.
type OAuthConfig struct {
	// ClientID is a client ID registered beforehand with the server's
	// authorization server.
	ClientID string
	// ClientSecret is the secret of ClientID, if it has one. It may use
	// ${NAME} and ${NAME:-default}, expanded when a login starts; it is
	// never logged.
	ClientSecret string
	// ClientMetadataURL is the https URL of a client ID metadata document
	// (draft-ietf-oauth-client-id-metadata-document) that names tollgate's
	// redirect URIs.
	ClientMetadataURL string
	// Scopes, if set, are the scopes asked for instead of those the
	// server's challenge or metadata name.
	Scopes []string
}

// ErrLoginRequired is returned (wrapped, with the server's name) when a
// server asks for an OAuth authorization and no person can log in there and
// then: run `tollgate mcp login SERVER`, then try again.
var ErrLoginRequired = errors.New("OAuth login required")

// OAuthOptions configures [NewOAuthHandler].
type OAuthOptions struct {
	// Dir is the directory that keeps the server's login, and where a
	// login made before is found: one file per server URL (named by the
	// URL's SHA-256), written 0600 through a new file renamed into place,
	// in a directory made 0700; a login is found only under the URL it was
	// issued for, and a file over 64 KiB or readable by others than its
	// owner is refused (log in again). The files hold secrets: keep Dir
	// outside every workspace a tool can read (tollgate keeps it in its
	// state directory). Empty keeps the login in memory only.
	Dir string
	// Fetch, if set, takes a person through the authorization at the
	// authorization server (a browser, say) and returns the code that came
	// back to RedirectURL. Nil means nobody can log in now: a server that
	// asks for authorization fails with [ErrLoginRequired].
	Fetch auth.AuthorizationCodeFetcher
	// RedirectURL is where the authorization server sends the person back,
	// a loopback URL (RFC 8252, section 7.3); required with Fetch.
	RedirectURL string
	// HTTPClient carries the requests to the authorization server and the
	// metadata documents; nil means http.DefaultClient. Either way a request
	// to a URL that is not https (or http on the loopback) is refused.
	HTTPClient *http.Client
	// LookupEnv resolves ${NAME} in the client secret; nil means none are set.
	LookupEnv func(string) (string, bool)
	// Logger is told of logins and refreshes, never of a token or a secret;
	// nil discards.
	Logger *slog.Logger
	// Fresh leaves a stored login unused, so that the server's 401 starts
	// a new login, which replaces it once done (tollgate mcp login).
	Fresh bool
	// Offer, if set with Fetch nil, is called when the server asks for an
	// authorization and nobody is logging in: a host with a person at a
	// terminal asks whether to log in now and, if so, returns the fetcher
	// and loopback redirect URL of a login (as Fetch and RedirectURL), and
	// done, called once the login is over. The login's token is stored as
	// `tollgate mcp login`'s is, and the request that met the 401 is tried
	// again. An error (the person said no: [ErrLoginRequired]) fails the
	// server as without Offer. A handler offers a login once.
	Offer func(ctx context.Context, server string) (fetch auth.AuthorizationCodeFetcher, redirectURL string, done func(), err error)
	// OnLogin, if set, is told of a login offered with Offer once it is
	// done, with the server's name (never a token), on the goroutine of
	// the request that met the 401.
	OnLogin func(server string)
}

// placeholderRedirect is the redirect URL of a handler that cannot log in:
// the SDK requires one, and no authorization ever goes there.
const placeholderRedirect = "http://127.0.0.1/callback"

// NewOAuthHandler returns the OAuth handler of the streamable-HTTP server
// name (its configuration sc): the go-sdk's authorization code handler
// (package auth), which on a 401 or a 403 insufficient_scope finds the
// server's protected resource metadata (RFC 9728) from WWW-Authenticate, the
// authorization server's metadata (RFC 8414), registers the client as
// [OAuthConfig] says, and runs the authorization code flow with PKCE S256
// and the resource indicator (RFC 8707) of sc.URL; on 403 it asks for the
// scopes it holds plus the new ones (step-up). The token it gets, and every
// refreshed one, is saved in o.Dir under sc.URL, and a saved token (with
// its refresh token) is used from the start, so that a login outlives the
// process. The token goes only to sc.URL: the store holds it under that URL
// and the transport sends it to that endpoint alone.
//
// It fails when sc has no URL, when the URL is neither https nor http on
// the loopback, or when the stored login cannot be read.
func NewOAuthHandler(name string, sc *ServerConfig, o *OAuthOptions) (auth.OAuthHandler, error) {
	if sc == nil || sc.URL == "" {
		return nil, fmt.Errorf("mcp server %q: OAuth needs a streamable-HTTP server (url)", name)
	}
	if !secureURL(sc.URL) {
		return nil, fmt.Errorf("mcp server %q: OAuth needs an https URL (or http on the loopback), not %s: the token would cross the network in clear", name, sc.URL)
	}
	var opts OAuthOptions
	if o != nil {
		opts = *o
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	base := opts.HTTPClient
	if base == nil {
		base = http.DefaultClient
	}
	hc := *base
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	hc.Transport = httpsOnly{rt}
	opts.HTTPClient = &hc
	if opts.LookupEnv == nil {
		opts.LookupEnv = func(string) (string, bool) { return "", false }
	}
	saver := &tokenSaver{name: name, resource: sc.URL, logger: opts.Logger}
	if opts.Dir != "" {
		saver.store = &mcptoken.Store{Dir: opts.Dir}
	}
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:         opts.RedirectURL,
		Client:              opts.HTTPClient,
		RequestRefreshToken: true,
		NewTokenSource:      saver.newTokenSource,
	}
	if opts.Fetch == nil {
		cfg.RedirectURL = placeholderRedirect
		cfg.AuthorizationCodeFetcher = func(context.Context, *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			return nil, ErrLoginRequired
		}
	} else {
		if opts.RedirectURL == "" {
			return nil, errors.New("mcptool: OAuthOptions.RedirectURL is required with Fetch")
		}
		cfg.AuthorizationCodeFetcher = opts.Fetch
	}
	oc := sc.OAuth
	if oc == nil {
		oc = &OAuthConfig{}
	}
	if oc.ClientMetadataURL != "" {
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: oc.ClientMetadataURL}
	}
	if oc.ClientID != "" {
		creds := &oauthex.ClientCredentials{ClientID: oc.ClientID}
		if oc.ClientSecret != "" {
			secret, err := expand(oc.ClientSecret, opts.LookupEnv)
			if err != nil {
				return nil, fmt.Errorf("mcp server %q: oauth.clientSecret: %w", name, err)
			}
			creds.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: secret}
		}
		cfg.PreregisteredClient = creds
	}
	cfg.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{
		Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs:  []string{cfg.RedirectURL},
			ClientName:    "tollgate",
			GrantTypes:    []string{"authorization_code", "refresh_token"},
			ResponseTypes: []string{"code"},
		},
	}
	if len(oc.Scopes) > 0 {
		scopes := append([]string(nil), oc.Scopes...)
		cfg.ScopeFilter = func([]string) []string { return scopes }
	}
	if saver.store != nil && !opts.Fresh {
		l, err := saver.store.Load(sc.URL)
		if err != nil {
			return nil, fmt.Errorf("mcp server %q: %w", name, err)
		}
		if l != nil {
			cfg.InitialTokenSource = saver.wrap(l.Config().TokenSource(
				context.WithValue(context.Background(), oauth2.HTTPClient, opts.HTTPClient), l.Token), l)
		}
	}
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return nil, fmt.Errorf("mcp server %q: oauth: %w", name, err)
	}
	if opts.Fetch == nil {
		return &noLogin{cur: h, name: name, sc: sc, opts: opts}, nil
	}
	return h, nil
}

// noLogin is a handler with a stored login (or none) and nobody logging
// in: a 401 or 403 fails at once with [ErrLoginRequired], without a
// request to the authorization server, unless the person takes the login
// offered (OAuthOptions.Offer): then a login handler replaces the stored
// one and authorizes.
type noLogin struct {
	name string
	sc   *ServerConfig
	opts OAuthOptions

	mu      sync.Mutex // held during an offered login
	cur     auth.OAuthHandler
	offered bool // a login was offered: it is not offered again
}

func (h *noLogin) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	cur := h.cur
	h.mu.Unlock()
	return cur.TokenSource(ctx)
}

func (h *noLogin) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	refused := fmt.Errorf("mcp server %q answered %d: %w: run `tollgate mcp login %s`", h.name, resp.StatusCode, ErrLoginRequired, h.name)
	if h.opts.Offer == nil {
		_ = resp.Body.Close()
		return refused
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.offered {
		_ = resp.Body.Close()
		return refused
	}
	h.offered = true
	fetch, redirect, done, err := h.opts.Offer(ctx, h.name)
	if err != nil {
		_ = resp.Body.Close()
		return fmt.Errorf("%w (%v)", refused, err)
	}
	defer done()
	o := h.opts
	o.Fetch, o.RedirectURL, o.Offer, o.Fresh = fetch, redirect, nil, true
	login, err := NewOAuthHandler(h.name, h.sc, &o)
	if err != nil {
		_ = resp.Body.Close()
		return err
	}
	if err := login.Authorize(ctx, req, resp); err != nil {
		return fmt.Errorf("mcp server %q: the login failed: %w", h.name, err)
	}
	h.opts.Logger.Info("mcp server: OAuth login offered at a 401 done", "server", h.name)
	h.cur = login
	if h.opts.OnLogin != nil {
		h.opts.OnLogin(h.name)
	}
	return nil
}

// secureURL reports whether u is https, or http to a loopback host
// (127.0.0.0/8, ::1, localhost), where nothing crosses the network.
func secureURL(u string) bool {
	p, err := url.Parse(u)
	if err != nil {
		return false
	}
	switch p.Scheme {
	case "https":
		return true
	case "http":
		h := p.Hostname()
		if h == "localhost" {
			return true
		}
		ip := net.ParseIP(h)
		return ip != nil && ip.IsLoopback()
	}
	return false
}

// httpsOnly refuses a request to an authorization server or metadata URL
// that is not [secureURL]: client secrets, codes and tokens go there.
type httpsOnly struct{ base http.RoundTripper }

func (t httpsOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if !secureURL(req.URL.String()) {
		return nil, fmt.Errorf("mcptool: OAuth request to %s refused: want https (or http on the loopback)", req.URL.Redacted())
	}
	return t.base.RoundTrip(req)
}

// tokenSaver saves the tokens of one server's handler in the store.
type tokenSaver struct {
	name, resource string
	store          *mcptoken.Store // nil: in memory only
	logger         *slog.Logger
}

// newTokenSource is the handler's NewTokenSource: called after a login with
// the client's configuration and the new token, which it saves.
func (s *tokenSaver) newTokenSource(ctx context.Context, cfg *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
	l := mcptoken.LoginOf(s.resource, cfg, tok)
	if err := s.save(l); err != nil {
		return nil, err
	}
	s.logger.Info("mcp server: OAuth login done", "server", s.name)
	return s.wrap(cfg.TokenSource(ctx, tok), l), nil
}

func (s *tokenSaver) save(l *mcptoken.Login) error {
	if s.store == nil {
		return nil
	}
	if err := s.store.Save(l); err != nil {
		return fmt.Errorf("mcp server %q: saving the OAuth login: %w", s.name, err)
	}
	return nil
}

// wrap returns a token source that saves each new token ts gives (a
// refresh) as l's.
func (s *tokenSaver) wrap(ts oauth2.TokenSource, l *mcptoken.Login) oauth2.TokenSource {
	return &savingSource{base: ts, saver: s, login: *l, last: l.Token.AccessToken}
}

// savingSource saves a token whose access token changed (a refresh).
type savingSource struct {
	base  oauth2.TokenSource
	saver *tokenSaver
	mu    sync.Mutex
	login mcptoken.Login
	last  string
}

func (s *savingSource) Token() (*oauth2.Token, error) {
	tok, err := s.base.Token()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if tok.AccessToken != s.last {
		s.last = tok.AccessToken
		s.login.Token = tok
		if err := s.saver.save(&s.login); err != nil {
			s.saver.logger.Warn("mcp server: OAuth token refreshed but not saved", "server", s.saver.name, "error", err)
		} else {
			s.saver.logger.Info("mcp server: OAuth token refreshed", "server", s.saver.name)
		}
	}
	return tok, nil
}
