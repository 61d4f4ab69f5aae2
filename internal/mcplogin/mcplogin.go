// Package mcplogin runs an OAuth login to an MCP server whose browser
// comes back to a page the host serves (tollgate serve's approvals page),
// rather than to a loopback port: [Start] returns the authorization URL at
// once, and the host hands the redirect's code to [Pending.Finish]. The
// login is package mcptool's OAuth handler's, kept where
// mcptool.OAuthOptions.Dir says.
package mcplogin

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/internal/mcptoken"
	"github.com/tollgate-dev/tollgate/mcptool"
)

// Pending is an OAuth login to an MCP server whose authorization a
// person gives in a browser that comes back to a redirect URL the host
// serves (a server's page, rather than a loopback port): [Start]
// returns it with the URL to send the person to; the host hands the
// redirect's code to [Pending.Finish].
type Pending struct {
	// URL is the authorization URL the person opens.
	URL string
	// State is the URL's state parameter, which the redirect carries back.
	State string

	codes chan *auth.AuthorizationResult
	done  chan error
	store *mcptoken.Store
	url   string
}

// ErrNoLoginNeeded is returned by [Start] when the server answered
// without asking for an authorization.
var ErrNoLoginNeeded = errors.New("the server did not ask for a login")

// Start starts the OAuth login, kept in o.Dir, to the streamable-HTTP
// server name (configuration sc): it connects to the server, meets its 401
// and, as mcptool.NewOAuthHandler does, finds the authorization server,
// registers (with o.RedirectURL as redirect URI) and builds the
// authorization URL, which it returns without waiting for the person. The
// login goes on in the background until ctx ends: ctx bounds the whole
// login, the person's time in the browser included. o.Fetch and o.Offer
// are ignored; o.Dir and o.RedirectURL are required. It fails for a
// server that is not streamable HTTP (no URL), which it never starts.
func Start(ctx context.Context, name string, sc *mcptool.ServerConfig, o *mcptool.OAuthOptions) (*Pending, error) {
	if o == nil || o.Dir == "" || o.RedirectURL == "" {
		return nil, errors.New("mcplogin: Start needs OAuthOptions.Dir and RedirectURL")
	}
	if sc == nil || sc.URL == "" || sc.Transport != nil {
		return nil, fmt.Errorf("mcp server %q: OAuth needs a streamable-HTTP server (url)", name)
	}
	p := &Pending{codes: make(chan *auth.AuthorizationResult, 1), done: make(chan error, 1), store: &mcptoken.Store{Dir: o.Dir}, url: sc.URL}
	urls := make(chan string, 1)
	opts := *o
	opts.Offer, opts.Fresh = nil, true
	opts.Fetch = func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		urls <- args.URL
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case res := <-p.codes:
			if res == nil {
				return nil, errors.New("the authorization was refused")
			}
			return res, nil
		}
	}
	go func() {
		set, err := mcptool.Open(ctx, &mcptool.Config{Servers: map[string]*mcptool.ServerConfig{name: sc}}, &mcptool.Options{
			Client: &mcp.Implementation{Name: "tollgate", Version: "dev"},
			OAuth: func(name string, sc *mcptool.ServerConfig) (auth.OAuthHandler, error) {
				return mcptool.NewOAuthHandler(name, sc, &opts)
			},
		})
		if err == nil {
			st := set.Servers()[0]
			if st.State != mcptool.StateReady {
				err = fmt.Errorf("server %s: %v", name, st.Err)
			}
			_ = set.Close()
		}
		p.done <- err
	}()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case u := <-urls:
		p.URL = u
		if pu, err := url.Parse(u); err == nil {
			p.State = pu.Query().Get("state")
		}
		return p, nil
	case err := <-p.done:
		if err == nil {
			err = ErrNoLoginNeeded
		}
		return nil, err
	}
}

// Finish hands the redirect's result to the login (nil: the person
// refused) and waits for it to end: the code exchanged (PKCE), the token
// stored, the server's tools listed. Call it once.
func (p *Pending) Finish(ctx context.Context, res *auth.AuthorizationResult) error {
	select {
	case p.codes <- res:
	default:
		return errors.New("mcplogin: the login was finished already")
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case err := <-p.done:
		if err != nil {
			return err
		}
	}
	l, err := p.store.Load(p.url)
	if err != nil {
		return err
	}
	if l == nil {
		return errors.New("the server connected without the login: nothing was stored")
	}
	return nil
}
