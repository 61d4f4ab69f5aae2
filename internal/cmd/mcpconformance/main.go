// Command mcpconformance is the client that the MCP conformance suite
// (npm @modelcontextprotocol/conformance) drives: it connects to the
// suite's server through tollgate's MCP client (package mcptool), as a user's
// mcp.json would, and does what the scenario asks.
//
// Usage, as the suite runs it:
//
//	MCP_CONFORMANCE_SCENARIO=tools_call mcpconformance http://localhost:PORT/mcp
//
// MCP_CONFORMANCE_CONTEXT, when set, is a JSON object with the scenario's
// settings (a pre-registered client_id and client_secret). The client opens
// the server with mcptool.Open; an elicitation is accepted as a person who
// takes the form's defaults would; an OAuth authorization goes through
// mcptool.NewOAuthHandler, with a "browser" that follows the authorization
// server's redirect to the loopback redirect URL and reads the code there.
// It exits 1 when the server fails to open or the scenario's tool call
// fails.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/mcptool"
	"github.com/tollgate-dev/tollgate/tool"
)

// redirectURL is the loopback redirect URL the client registers; the suite's
// authorization server redirects there with the code.
const redirectURL = "http://localhost:3000/callback"

// clientMetadataURL is the client ID metadata document URL the suite expects
// in auth/basic-cimd.
const clientMetadataURL = "https://conformance-test.local/client-metadata.json"

// calls names the tool each scenario calls, and its arguments.
var calls = map[string]struct {
	tool string
	args string
}{
	"tools_call":                          {"add_numbers", `{"a":5,"b":3}`},
	"elicitation-sep1034-client-defaults": {"test_client_elicitation_defaults", `{}`},
	"sse-retry":                           {"test_reconnection", `{}`},
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: MCP_CONFORMANCE_SCENARIO=NAME mcpconformance SERVER_URL")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Getenv("MCP_CONFORMANCE_SCENARIO"), os.Getenv("MCP_CONFORMANCE_CONTEXT")); err != nil {
		fmt.Fprintln(os.Stderr, "mcpconformance:", err)
		os.Exit(1)
	}
}

func run(serverURL, scenario, settings string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var sctx struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if settings != "" {
		if err := json.Unmarshal([]byte(settings), &sctx); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %v", err)
		}
	}
	sc := &mcptool.ServerConfig{URL: serverURL, Timeout: time.Minute}
	if strings.HasPrefix(scenario, "auth/") {
		sc.OAuth = &mcptool.OAuthConfig{ClientMetadataURL: clientMetadataURL, ClientID: sctx.ClientID, ClientSecret: sctx.ClientSecret}
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	set, err := mcptool.Open(ctx, &mcptool.Config{Servers: map[string]*mcptool.ServerConfig{"conformance": sc}}, &mcptool.Options{
		Logger: logger,
		Client: &mcp.Implementation{Name: "tollgate-conformance", Version: "dev"},
		Elicit: acceptDefaults,
		OAuth: func(name string, sc *mcptool.ServerConfig) (auth.OAuthHandler, error) {
			return mcptool.NewOAuthHandler(name, sc, &mcptool.OAuthOptions{Fetch: followRedirect, RedirectURL: redirectURL, Logger: logger})
		},
	})
	if err != nil {
		return err
	}
	defer set.Close()
	st := set.Servers()[0]
	if st.State != mcptool.StateReady {
		return fmt.Errorf("server %s: %v", st.State, st.Err)
	}
	name, args := calls[scenario].tool, calls[scenario].args
	if strings.HasPrefix(scenario, "auth/") {
		name, args = "test-tool", `{}`
	}
	if name == "" {
		return nil
	}
	for _, t := range set.Tools() {
		mt := t.(*mcptool.Tool)
		if mt.Listed().Name != name {
			continue
		}
		res, err := mt.Call(ctx, json.RawMessage(args))
		if err != nil {
			return fmt.Errorf("call %s: %w", name, err)
		}
		if res.IsError {
			return fmt.Errorf("call %s: error result: %s", name, res.Output)
		}
		return nil
	}
	return fmt.Errorf("the server has no tool %q", name)
}

// acceptDefaults answers an elicitation as a person who accepts the form
// as offered: empty content, so the schema's defaults fill it.
func acceptDefaults(_ context.Context, req tool.Request) (tool.Answer, error) {
	return tool.Answer{ID: req.ID, OK: true}, nil
}

// followRedirect is the person's browser: it opens the authorization URL,
// which the suite's authorization server answers at once with a redirect to
// the redirect URL, and reads the code, state and iss from it.
func followRedirect(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, args.URL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	_ = resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.String() == "" {
		return nil, errors.New("the authorization server did not redirect")
	}
	q := loc.Query()
	return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}
