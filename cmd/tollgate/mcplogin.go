package main

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/spf13/cobra"

	"github.com/tollgate-dev/tollgate/internal/mcptoken"
	"github.com/tollgate-dev/tollgate/internal/runbuild"
	"github.com/tollgate-dev/tollgate/mcptool"
	"github.com/tollgate-dev/tollgate/runs"
)

// mcpLoginsDir is the directory of the OAuth logins to MCP servers in the
// state directory stateDir (mcptool.OAuthOptions.Dir: 0700, one 0600 file per
// server URL).
func mcpLoginsDir(stateDir string) string { return filepath.Join(stateDir, "mcp-oauth") }

// newMCPCmd is `tollgate mcp`: the OAuth logins to remote MCP servers.
func newMCPCmd(env *cliEnv) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Log in to remote MCP servers that use OAuth",
	}
	cmd.AddCommand(newMCPLoginCmd(env), newMCPLogoutCmd(env))
	return cmd
}

func newMCPLoginCmd(env *cliEnv) *cobra.Command {
	var files []string
	var state stateFlags
	var port int
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "login SERVER --mcp FILE",
		Short: "Log in to an MCP server with OAuth, in the browser",
		Long: `Log in to the streamable-HTTP MCP server SERVER of the --mcp files with OAuth
(MCP specification, "Authorization"): tollgate finds the server's
authorization server from its 401 answer, registers with it (the server's
"oauth" settings in mcp.json: a client ID metadata document, a
pre-registered clientId, else dynamic registration) and prints a URL. Open
it in your browser and approve; the browser comes back to a page this
command serves on 127.0.0.1, the code is exchanged (PKCE S256, with the
server's URL as resource), and the server's tools are listed to check.

The login is kept in the state directory (mcp-oauth/, files of mode 0600),
for this server's URL only, and later 'tollgate run --mcp FILE' uses it,
refreshing the token when it is about to expire. It is never put in a
tool's or server's environment, nor logged. Log in again when a run says
the server needs a login (a revoked token).

Exit status: 0 logged in, 1 the login failed, 2 usage.`,
		Args: argsUsage(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			name := args[0]
			sc, err := loginServer(files, name)
			if err != nil {
				return err
			}
			stateDir, err := state.resolve("")
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
			if err != nil {
				return withCode(exitError, fmt.Errorf("mcp login: the redirect listener: %w", err))
			}
			defer ln.Close()
			redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", ln.Addr().(*net.TCPAddr).Port)
			ctx, cancel := context.WithTimeout(c.Context(), timeout)
			defer cancel()
			fetch := loopbackFetcher(ln, func(url string) {
				fmt.Fprintf(env.stderr, "To log in to MCP server %s, open this URL in your browser:\n\n  %s\n\nWaiting for the authorization (at most %s)...\n", name, safeText(url), timeout)
			})
			login := *sc
			login.Timeout = min(timeout, 10*time.Minute) // the largest "timeout" mcp.json accepts
			set, err := mcptool.Open(ctx, &mcptool.Config{Servers: map[string]*mcptool.ServerConfig{name: &login}}, &mcptool.Options{
				LookupEnv: env.lookupEnv,
				OAuth: func(name string, sc *mcptool.ServerConfig) (auth.OAuthHandler, error) {
					return mcptool.NewOAuthHandler(name, sc, &mcptool.OAuthOptions{Dir: mcpLoginsDir(stateDir), Fetch: fetch, RedirectURL: redirect, LookupEnv: env.lookupEnv, Fresh: true})
				},
			})
			if err != nil {
				return withCode(exitError, fmt.Errorf("mcp login: %w", err))
			}
			defer set.Close()
			st := set.Servers()[0]
			if st.State != mcptool.StateReady {
				return withCode(exitError, fmt.Errorf("mcp login: server %s: %s", name, safeText(fmt.Sprint(st.Err))))
			}
			l, err := (&mcptoken.Store{Dir: mcpLoginsDir(stateDir)}).Load(sc.URL)
			if err != nil || l == nil {
				return withCode(exitError, fmt.Errorf("mcp login: server %s answered without asking for a login; nothing was stored", name))
			}
			fmt.Fprintf(env.stdout, "logged in to MCP server %s (%s): %d tools\n", name, safeText(sc.URL), st.Tools)
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&files, "mcp", nil, "MCP servers file (mcp.json) that defines SERVER; repeatable")
	cmd.Flags().IntVar(&port, "port", 0, "port of the loopback redirect URI, http://127.0.0.1:PORT/callback (0: any free port; set it when the client is registered with a fixed one)")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait for the authorization in the browser")
	state.add(cmd.Flags(), env)
	return cmd
}

func newMCPLogoutCmd(env *cliEnv) *cobra.Command {
	var files []string
	var state stateFlags
	cmd := &cobra.Command{
		Use:   "logout SERVER --mcp FILE",
		Short: "Forget the OAuth login to an MCP server",
		Args:  argsUsage(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			sc, err := loginServer(files, args[0])
			if err != nil {
				return err
			}
			stateDir, err := state.resolve("")
			if err != nil {
				return err
			}
			if err := (&mcptoken.Store{Dir: mcpLoginsDir(stateDir)}).Delete(sc.URL); err != nil {
				return withCode(exitError, fmt.Errorf("mcp logout: %w", err))
			}
			fmt.Fprintf(env.stdout, "logged out of MCP server %s\n", args[0])
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&files, "mcp", nil, "MCP servers file (mcp.json) that defines SERVER; repeatable")
	state.add(cmd.Flags(), env)
	return cmd
}

// loginServer returns the configuration of the streamable-HTTP server name
// in files, or a usage error.
func loginServer(files []string, name string) (*mcptool.ServerConfig, error) {
	if len(files) == 0 {
		return nil, usageErr("mcp: --mcp FILE is required (the mcp.json that defines %s)", name)
	}
	cfg, err := runbuild.LoadMCP(files, func(string) {})
	if err != nil {
		if fe, ok := errors.AsType[*runs.FieldError](err); ok {
			return nil, usageErr("--mcp: %w", fe.Err)
		}
		return nil, usageErr("--mcp: %w", err)
	}
	sc, ok := cfg.Servers[name]
	switch {
	case !ok:
		return nil, usageErr("mcp: no server %q in %s", name, cfg.File)
	case sc.URL == "":
		return nil, usageErr("mcp: server %q is not a streamable-HTTP server (no url); only those log in with OAuth", name)
	}
	return sc, nil
}

// maxCallbackQuery bounds the query of the redirect to the loopback page.
const maxCallbackQuery = 8 << 10

// loopbackFetcher is the authorization code fetcher of `tollgate mcp
// login`: it shows the authorization URL (show), serves the redirect URI's
// page on ln (RFC 8252, section 7.3) and returns the code, state and iss
// of the first redirect to /callback. An error answer (access_denied) is an
// error; the state is checked by the SDK.
func loopbackFetcher(ln net.Listener, show func(url string)) auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		type outcome struct {
			res *auth.AuthorizationResult
			err error
		}
		done := make(chan outcome, 1)
		mux := http.NewServeMux()
		mux.HandleFunc("/callback", func(w http.ResponseWriter, r *http.Request) {
			if len(r.URL.RawQuery) > maxCallbackQuery {
				http.Error(w, "query too long", http.StatusRequestURITooLong)
				return
			}
			q := r.URL.Query()
			var o outcome
			if e := q.Get("error"); e != "" {
				o.err = fmt.Errorf("the authorization server refused: %s %s", safeText(e), safeText(q.Get("error_description")))
				fmt.Fprintf(w, "<p>The login failed: %s. You may close this window.</p>", html.EscapeString(e))
			} else {
				o.res = &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}
				fmt.Fprint(w, "<p>tollgate got the authorization. You may close this window.</p>")
			}
			select {
			case done <- o:
			default:
			}
		})
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		show(args.URL)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("no authorization came back: %w", ctx.Err())
		case o := <-done:
			return o.res, o.err
		}
	}
}

// loginOffer returns the offer of a login to a server that asks for one
// during a run (runbuild.Options.MCPLoginOffer), or nil when nobody is at the
// terminal to take it (the run's answers are not asked there, or stdin is
// not a terminal): then the run says to run `tollgate mcp login`.
func (cb *cliBuilder) loginOffer(cfg runs.RunConfig) func(context.Context, string) (auth.AuthorizationCodeFetcher, string, func(), error) {
	if cb.loginsDir() == "" || cfg.Answer != approvePrompt || !isTerminal(cb.env.stdin) {
		return nil
	}
	offer := offerLogin(cb.env.stdin, cb.env.stderr, cb.env.termHold())
	return func(ctx context.Context, server string) (auth.AuthorizationCodeFetcher, string, func(), error) {
		// Only while the servers start: once the run goes on, its
		// questions own the terminal's input.
		if cb.started.Load() {
			return nil, "", nil, mcptool.ErrLoginRequired
		}
		return offer(ctx, server)
	}
}

// offerLogin asks on w whether to log in to a server now and reads the
// answer from in, one line, one byte at a time (what follows the line
// stays for the run's later questions). On yes it listens on a loopback
// port for the redirect and returns the fetcher that shows the
// authorization URL on w. One offer at a time: servers start together.
func offerLogin(in io.Reader, w io.Writer, hold *termHold) func(context.Context, string) (auth.AuthorizationCodeFetcher, string, func(), error) {
	var mu sync.Mutex
	return func(ctx context.Context, server string) (auth.AuthorizationCodeFetcher, string, func(), error) {
		mu.Lock()
		defer mu.Unlock()
		if hold != nil {
			defer hold.ask()()
		}
		fmt.Fprintf(w, "MCP server %s needs an OAuth login. Log in to %s now? [y/N] ", safeText(server), safeText(server))
		line, err := readByteLine(ctx, in)
		if err != nil || !isYes(line) {
			fmt.Fprintf(w, "not logged in; later: tollgate mcp login %s --mcp FILE\n", safeText(server))
			return nil, "", nil, mcptool.ErrLoginRequired
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, "", nil, fmt.Errorf("the redirect listener: %w", err)
		}
		redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", ln.Addr().(*net.TCPAddr).Port)
		fetch := loopbackFetcher(ln, func(url string) {
			fmt.Fprintf(w, "To log in to MCP server %s, open this URL in your browser:\n\n  %s\n\nWaiting for the authorization...\n", safeText(server), safeText(url))
		})
		return fetch, redirect, func() { _ = ln.Close() }, nil
	}
}

// isYes reports whether a typed answer is yes.
func isYes(s string) bool {
	s = strings.ToLower(strings.TrimSpace(s))
	return s == "y" || s == "yes"
}

// maxOfferLine bounds the line read for a yes or no.
const maxOfferLine = 256

// readByteLine reads one line from in a byte at a time, so that nothing
// after it is taken from the reader the run's questions use later. An
// ended ctx gives up waiting (the read goes on until the line comes).
func readByteLine(ctx context.Context, in io.Reader) (string, error) {
	type result struct {
		s   string
		err error
	}
	done := make(chan result, 1)
	go func() {
		var b []byte
		one := make([]byte, 1)
		for len(b) < maxOfferLine {
			n, err := in.Read(one)
			if n == 1 {
				if one[0] == '\n' {
					break
				}
				b = append(b, one[0])
			}
			if err != nil {
				done <- result{string(b), err}
				return
			}
		}
		done <- result{string(b), nil}
	}()
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case r := <-done:
		return r.s, r.err
	}
}
