package mcpgateway

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/tool"
)

// ErrUnknownToken is what [HTTPOptions].Authenticate returns for a token
// it does not know: the request is refused with 401.
var ErrUnknownToken = errors.New("unknown bearer token")

// Keys of a token's client in auth.TokenInfo.Extra.
const (
	principalName = "tollgate.principal.name"
	tenantKey     = "tollgate.tenant"
)

// clientKey carries the client [authenticate] found to its verifier.
type clientKey struct{}

// authenticate refuses a request whose bearer token authn does not take
// (401 for an unknown token, 403 with the reason for one that may not
// call tools here) and hands the token's client to the SDK's bearer
// check, whose TokenInfo binds a session to it: its UserID is the tenant
// and the name, so that a token of the same name in another tenant cannot
// take the session up.
func authenticate(authn func(string) (Client, error), h http.Handler) http.Handler {
	verify := func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		c, ok := ctx.Value(clientKey{}).(Client)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: c.Tenant + "\x00" + c.Principal.Name, Extra: map[string]any{
			principalKind: string(c.Principal.Kind), principalName: c.Principal.Name, tenantKey: c.Tenant,
		}}, nil
	}
	inner := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := strings.Fields(r.Header.Get("Authorization"))
		if len(f) != 2 || !strings.EqualFold(f[0], "bearer") {
			http.Error(w, "this endpoint needs an Authorization: Bearer token", http.StatusUnauthorized)
			return
		}
		c, err := authn(f[1])
		switch {
		case errors.Is(err, ErrUnknownToken):
			http.Error(w, "unknown bearer token", http.StatusUnauthorized)
			return
		case err != nil:
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		if c.Principal.Kind == "" {
			c.Principal.Kind = tool.PrincipalPerson
		}
		inner.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), clientKey{}, c)))
	})
}

// extraClient is the client of the bearer token a request came with
// (extra), or zero.
func extraClient(extra *mcp.RequestExtra) Client {
	if extra == nil || extra.TokenInfo == nil {
		return Client{}
	}
	tenant, _ := extra.TokenInfo.Extra[tenantKey].(string)
	return Client{Principal: tokenPrincipal(&mcp.CallToolRequest{Extra: extra}), Tenant: tenant}
}
