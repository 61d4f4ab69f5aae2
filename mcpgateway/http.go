package mcpgateway

import (
	"cmp"
	"context"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/tool"
)

// The defaults of [HTTPOptions].
const (
	// defaultMaxBodyBytes bounds one HTTP request body.
	defaultMaxBodyBytes = 4 << 20
	// defaultSessionIdle closes a client session idle this long.
	defaultSessionIdle = 30 * time.Minute
	// defaultMaxRequests bounds the HTTP requests served at once.
	defaultMaxRequests = 256
	// defaultMaxSessionsPerClient bounds the sessions one token has open.
	defaultMaxSessionsPerClient = 32
)

// HTTPOptions configures [Gateway.Handler]. A nil *HTTPOptions means all
// defaults (and no tokens).
type HTTPOptions struct {
	// Verify returns the principal of a bearer token, or false for a token
	// it does not know (the request is refused with 401). Nil: no token is
	// asked for; serve loopback addresses only then. It must not log or
	// keep the token.
	Verify func(token string) (tool.Principal, bool)
	// Authenticate, if set, is used instead of Verify: it returns who a
	// bearer token is, its tenant too, or an error. [ErrUnknownToken] is
	// refused with 401; any other error with 403 and the error's text,
	// which must say why the token may not call tools here (a role, a
	// tenant) and never hold the token. Sessions are bound to the tenant
	// and the principal: another token cannot take one up.
	Authenticate func(token string) (Client, error)
	// MaxBodyBytes bounds one request body (413 beyond); zero means 4 MiB.
	MaxBodyBytes int64
	// SessionIdle closes a session idle this long; zero means 30 min.
	SessionIdle time.Duration
	// MaxRequests bounds the requests served at once, each open stream
	// (a call's answer, a session's GET stream) one of them; more are
	// refused with 503 at once, so that a client that floods holds no
	// more. Zero means 256.
	MaxRequests int
	// MaxSessionsPerClient bounds the sessions one token (all requests
	// without a token alike) has open at once: an initialize beyond it is
	// refused with 429 and a sentence saying so, until one of its
	// sessions ends (the client's DELETE, or SessionIdle). Zero means 32.
	MaxSessionsPerClient int
}

// Handler returns the gateway as a streamable HTTP handler (MCP
// specification 2025-11-25, "Transports: Streamable HTTP"): with
// Verify, every request needs a bearer token it knows, and the token's
// principal asks for the session's calls ([gate.Call].Principal); requests
// with a Host that is not a loopback name arriving on a loopback address
// are refused (DNS rebinding), as are cross-origin requests from a
// browser (Origin, Sec-Fetch-Site); bodies, idle sessions and the
// requests served at once are bounded.
func (gw *Gateway) Handler(opts *HTTPOptions) http.Handler {
	var o HTTPOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = defaultMaxBodyBytes
	}
	if o.SessionIdle <= 0 {
		o.SessionIdle = defaultSessionIdle
	}
	if o.MaxRequests <= 0 {
		o.MaxRequests = defaultMaxRequests
	}
	if o.MaxSessionsPerClient <= 0 {
		o.MaxSessionsPerClient = defaultMaxSessionsPerClient
	}
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return gw.server }, &mcp.StreamableHTTPOptions{
		Logger:              gw.opts.Logger,
		MaxRequestBodyBytes: o.MaxBodyBytes,
		SessionTimeout:      o.SessionIdle,
	})
	h = gw.capSessions(o.MaxSessionsPerClient, o.SessionIdle, o.MaxBodyBytes, h)
	if o.Authenticate != nil {
		h = authenticate(o.Authenticate, h)
	} else if o.Verify != nil {
		verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
			p, ok := o.Verify(token)
			if !ok {
				return nil, auth.ErrInvalidToken
			}
			return &auth.TokenInfo{UserID: p.Name, Extra: map[string]any{principalKind: string(p.Kind)}}, nil
		}
		h = auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	}
	return limit(o.MaxRequests, http.NewCrossOriginProtection().Handler(h))
}

// limit serves at most n requests of h at once and refuses the others
// with 503 and Retry-After.
func limit(n int, h http.Handler) http.Handler {
	slots := make(chan struct{}, n)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
			h.ServeHTTP(w, r)
		default:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "too many requests at once", http.StatusServiceUnavailable)
		}
	})
}

// principalKind is the key of a token's principal kind in
// auth.TokenInfo.Extra.
const principalKind = "tollgate.principal.kind"

// tokenPrincipal is the principal of the bearer token req came with
// ([Gateway.Handler]), or the zero principal.
func tokenPrincipal(req *mcp.CallToolRequest) tool.Principal {
	if req.Extra == nil || req.Extra.TokenInfo == nil || req.Extra.TokenInfo.UserID == "" {
		return tool.Principal{}
	}
	kind, _ := req.Extra.TokenInfo.Extra[principalKind].(string)
	if kind == "" {
		kind = string(tool.PrincipalPerson)
	}
	name, _ := req.Extra.TokenInfo.Extra[principalName].(string)
	return tool.Principal{Kind: tool.PrincipalKind(kind), Name: cmp.Or(name, req.Extra.TokenInfo.UserID)}
}
