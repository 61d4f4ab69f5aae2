package runbuild

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/configfile"
	"github.com/tollgate-dev/tollgate/internal/mcptoken"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/mcptool"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/tool"
)

// loginRecorder is the OnLogin of the run's MCP servers: a login made
// while they start is kept for the run's log ([runs.Built].MCPLogins) and
// written to its records at once, with the run and its owner
// ([runcore.BuildRun]), who was asked.
func (s *setup) loginRecorder(ctx context.Context) func(server string) {
	return func(server string) {
		l := runs.MCPLogin{Server: server, Time: time.Now().UTC()}
		s.mu.Lock()
		s.logins = append(s.logins, l)
		s.mu.Unlock()
		if s.records != nil {
			run, owner := runcore.BuildRun(ctx)
			s.records.Login(ctx, run, server, owner, l.Time)
		}
	}
}

// setupMCP starts the servers of MCPFiles; their tools are offered beside
// the builtins (the set, not a copy of its tools: a server that announces a
// change of its tools is listed again between turns) and they are stopped
// when the part of the run ends. Each server's status goes to Notice; a
// server that fails is reported and left out.
func setupMCP(ctx context.Context, s *setup) error {
	files := s.cfg.MCPFiles
	if len(files) == 0 {
		return nil
	}
	s.addProtected(files...)
	logins := s.b.opts.MCPLogins
	if dir := s.b.opts.MCPTenantLogins; dir != "" {
		logins = mcptoken.TenantDir(dir, runcore.BuildTenant(ctx))
	}
	set, err := OpenMCP(ctx, files, &MCPOptions{Notice: s.b.opts.Notice, LookupEnv: s.b.opts.LookupEnv, Logger: s.b.opts.Logger, Confine: s.protectPrograms(s.sandbox.mcpSandbox()),
		OAuthDir: logins, OAuthOffer: s.b.opts.MCPLoginOffer, OnLogin: s.loginRecorder(ctx), Elicit: s.b.opts.Elicit, ElicitPolicy: elicitPolicy(s.opts.Authorizers)})
	if err != nil {
		return err
	}
	s.closers = append(s.closers, set.Close)
	for _, st := range set.Servers() {
		s.notice("mcp: %s", MCPStatusLine(st))
		for _, sk := range st.Skipped {
			s.notice("mcp: server %s: tool %s skipped: %s", st.Name, strconv.Quote(sk.Tool), sk.Reason)
		}
		if st.SkippedMore > 0 {
			s.notice("mcp: server %s: %d more tools skipped", st.Name, st.SkippedMore)
		}
		if errors.Is(st.Err, mcptool.ErrLoginRequired) {
			s.notice("mcp: server %s needs an OAuth login; log in with: tollgate mcp login %s --mcp %s", st.Name, st.Name, strings.Join(files, " --mcp "))
		}
	}
	s.toolsets = append(s.toolsets, set)
	return nil
}

// protectPrograms returns confine (nil: none) preceded by the protection of
// each stdio server's own files inside the workspace: its program and the
// arguments that name files (its script). A server trusted with its tools'
// hints runs them unasked, so its code governs the run like a policy file:
// a tool that rewrote it could make it claim readOnlyHint and run what it
// likes next time. The files are protected like the MCP files themselves,
// from the file tools and, with namespaces, from sandboxed commands.
func (s *setup) protectPrograms(confine func(*exec.Cmd, string, *mcptool.ServerConfig) error) func(*exec.Cmd, string, *mcptool.ServerConfig) error {
	var mu sync.Mutex // servers start concurrently
	ws := s.cfg.Workdir
	if real, err := filepath.EvalSymlinks(ws); err == nil {
		ws = real
	}
	return func(cmd *exec.Cmd, server string, sc *mcptool.ServerConfig) error {
		// The confinement reads the protected paths: under the same lock.
		mu.Lock()
		defer mu.Unlock()
		if files := programFiles(cmd, ws); len(files) > 0 {
			s.addProtected(files...)
		}
		if confine == nil {
			return nil
		}
		return confine(cmd, server, sc)
	}
}

// programFiles returns the regular files among cmd's program and arguments
// (resolved against cmd.Dir) that lie inside ws, with their links resolved.
func programFiles(cmd *exec.Cmd, ws string) []string {
	if ws == "" {
		return nil
	}
	var out []string
	for i, a := range append([]string{cmd.Path}, cmd.Args[1:]...) {
		if a == "" || (i > 0 && strings.HasPrefix(a, "-")) {
			continue
		}
		if !filepath.IsAbs(a) {
			a = filepath.Join(cmd.Dir, a)
		}
		real, err := filepath.EvalSymlinks(a)
		if err != nil {
			continue
		}
		if abs, err := filepath.Abs(real); err == nil {
			real = abs
		}
		if fi, err := os.Stat(real); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if rel, err := filepath.Rel(ws, real); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			out = append(out, real)
		}
	}
	return out
}

// MCPOptions configures [OpenMCP]; nil means defaults.
type MCPOptions struct {
	// Notice receives the files' warnings (unknown keys, with their
	// FILE:LINE:COL) as "mcp: WARNING" lines.
	Notice func(string)
	// Logger receives the servers' logs.
	Logger *slog.Logger
	// LookupEnv resolves ${NAME} in the files' headers, env, args and cwd
	// and in an OAuth client secret (mcptool.Options.LookupEnv): the
	// environment of the command that runs, which need not be the
	// process's. Nil: os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Confine is mcptool.Options.Sandbox (see [MCPConfine]).
	Confine func(cmd *exec.Cmd, server string, sc *mcptool.ServerConfig) error
	// OAuthDir, if set, is the directory of the OAuth logins made with
	// `tollgate mcp login` (mcptool.OAuthOptions.Dir): a streamable-HTTP server
	// with a login there gets its token (refreshed as needed); one that asks
	// for authorization without a login fails with mcptool.ErrLoginRequired.
	// Empty: no OAuth, a 401 fails the server.
	OAuthDir string
	// OAuthOffer, if set with OAuthDir, offers the person a login when a
	// server asks for one (mcptool.OAuthOptions.Offer): a terminal's "Log
	// in now?". Nil: the server fails with mcptool.ErrLoginRequired.
	OAuthOffer func(ctx context.Context, server string) (fetch auth.AuthorizationCodeFetcher, redirectURL string, done func(), err error)
	// OnLogin, if set, is told of a login made with OAuthOffer once it is
	// done (mcptool.OAuthOptions.OnLogin): the server's name, never a
	// token.
	OnLogin func(server string)
	// Elicit is asked a server's elicitation (mcptool.Options.Elicit); only
	// an answer given by a person accepts ([PersonOnly]). Nil, or an Elicit
	// returning mcptool.ErrAskLater, halts the call on the elicitation as a
	// pending request, answered like the question tool's.
	Elicit tool.WaitFunc
	// ElicitPolicy says which servers may ask the person for input
	// (mcptool.Options.ElicitPolicy; a policy's elicitation rules, see
	// [policy.Policy.Elicitation]); nil allows all.
	ElicitPolicy func(server string, trusted bool) (ok bool, by, reason string)
}

// elicitPolicy returns the elicitation rules of the policies among auths,
// all of them heard (a deny of any wins), or nil when there is none.
func elicitPolicy(auths []approval.Authorizer) func(string, bool) (bool, string, string) {
	var pols []*policy.Policy
	for _, a := range auths {
		if p, ok := a.(*policy.Policy); ok {
			pols = append(pols, p)
		}
	}
	if len(pols) == 0 {
		return nil
	}
	return func(server string, trusted bool) (bool, string, string) {
		for _, p := range pols {
			if ok, by, reason := p.Elicitation(server, trusted); !ok {
				return false, by, reason
			}
		}
		return true, "", ""
	}
}

// PersonOnly returns an elicitation asker that hands req to wait and
// keeps its answer only when a person gave it: an acceptance by a flag
// (--approve yes), a hook or the runtime becomes a decline, since what a
// server asks for is the person's to give. A nil wait declines all.
func PersonOnly(wait tool.WaitFunc) tool.WaitFunc {
	return func(ctx context.Context, req tool.Request) (tool.Answer, error) {
		if wait == nil {
			return tool.Answer{ID: req.ID, Reason: "nobody to ask"}, nil
		}
		a, err := wait(ctx, req)
		if err != nil {
			return a, err
		}
		if a.OK && a.Who().Kind != tool.PrincipalPerson {
			return tool.Answer{ID: req.ID, Reason: "not answered by a person"}, nil
		}
		return a, nil
	}
}

// MCPOpenSlack is what [OpenMCP] allows on top of two start-up phases of the
// slowest server: the time a phase that runs out may take to stop its
// server, and then some.
const MCPOpenSlack = 3*2*time.Second + 20*time.Second // three of mcptool.Options.ShutdownGrace's default (2 s), and room

// LoadMCP loads every MCP servers file into one configuration, passing the
// files' warnings to notice. A file named twice is loaded once; a server
// name defined in two files is an error naming both. Errors are
// [*runs.FieldError]s naming mcpFiles.
func LoadMCP(files []string, notice func(string)) (*mcptool.Config, error) {
	cfg := &mcptool.Config{Servers: map[string]*mcptool.ServerConfig{}}
	definedIn := map[string]string{}
	seen := map[string]bool{}
	var loaded []string
	for _, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil {
			return nil, &runs.FieldError{Field: runcore.FieldMCPFiles, Err: err}
		}
		if seen[abs] {
			notice(fmt.Sprintf("mcp: %s is given more than once; it is loaded once", f))
			continue
		}
		seen[abs] = true
		c, err := mcptool.Load(f)
		if err != nil {
			return nil, &runs.FieldError{Field: runcore.FieldMCPFiles, Err: err}
		}
		for _, warn := range c.Warnings {
			notice(fmt.Sprint("mcp: ", warn))
		}
		names := make([]string, 0, len(c.Servers))
		for name := range c.Servers {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if prev, ok := definedIn[name]; ok {
				return nil, &runs.FieldError{Field: runcore.FieldMCPFiles, Err: fmt.Errorf("server %q is defined in both %s and %s; rename one", name, prev, f)}
			}
			definedIn[name] = f
			cfg.Servers[name] = c.Servers[name]
		}
		loaded = append(loaded, f)
	}
	cfg.File = strings.Join(loaded, ", ")
	return cfg, nil
}

// OpenMCP loads files (see [LoadMCP]) and starts their servers. Each
// server's phases are bounded by its own timeout, so a server that hangs is
// reported in its status; the whole of Open is bounded as well, by two
// phases of the slowest server plus [MCPOpenSlack], as a backstop. A clash
// between tool names of two servers and a bad configuration are
// [*runs.FieldError]s naming mcpFiles; an Open that runs out of time or is
// canceled is another error.
func OpenMCP(ctx context.Context, files []string, opts *MCPOptions) (*mcptool.Set, error) {
	var o MCPOptions
	if opts != nil {
		o = *opts
	}
	if o.Notice == nil {
		o.Notice = func(string) {}
	}
	cfg, err := LoadMCP(files, o.Notice)
	if err != nil {
		return nil, err
	}
	slowest := 30 * time.Second // a server's default Timeout
	for _, sc := range cfg.Servers {
		slowest = max(slowest, sc.Timeout)
	}
	bound := 2*slowest + MCPOpenSlack
	octx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	mo := &mcptool.Options{Logger: o.Logger, LookupEnv: o.LookupEnv, Sandbox: o.Confine, ElicitPolicy: o.ElicitPolicy}
	if o.Elicit != nil {
		mo.Elicit = PersonOnly(o.Elicit)
	}
	if o.OAuthDir != "" {
		mo.OAuth = func(name string, sc *mcptool.ServerConfig) (auth.OAuthHandler, error) {
			return mcptool.NewOAuthHandler(name, sc, &mcptool.OAuthOptions{Dir: o.OAuthDir, Logger: o.Logger, LookupEnv: o.LookupEnv, Offer: o.OAuthOffer, OnLogin: o.OnLogin})
		}
	}
	set, err := mcptool.Open(octx, cfg, mo)
	if err != nil {
		var ce *mcptool.CollisionError
		var cfgErr *configfile.Problem
		switch {
		case errors.As(err, &ce), errors.As(err, &cfgErr):
			return nil, &runs.FieldError{Field: runcore.FieldMCPFiles, Err: err}
		case ctx.Err() == nil && octx.Err() != nil:
			return nil, fmt.Errorf("mcp: the MCP servers did not start within %s", bound)
		}
		return nil, fmt.Errorf("mcp: %w", err)
	}
	return set, nil
}

// MCPStatusLine says how one server fared, in one line, e.g.
// `server fs: ready (stdio, trusted, 14 tools, secure-filesystem-server 0.2.0)`.
func MCPStatusLine(st mcptool.ServerStatus) string {
	trust := "untrusted"
	if st.Trusted {
		trust = "trusted"
	}
	switch st.State {
	case mcptool.StateReady:
		info := ""
		if st.ServerInfo != nil {
			info = ", " + strings.TrimSpace(st.ServerInfo.Name+" "+st.ServerInfo.Version)
		}
		skipped := ""
		if n := len(st.Skipped) + st.SkippedMore; n > 0 {
			skipped = fmt.Sprintf(", %d skipped", n)
		}
		return fmt.Sprintf("server %s: ready (%s, %s, %d tools%s%s)", oneLineText(st.Name), st.Transport, trust, st.Tools, skipped, oneLineText(info))
	case mcptool.StateDisabled:
		return fmt.Sprintf("server %s: disabled in the configuration; not started", oneLineText(st.Name))
	}
	msg := ""
	if st.Err != nil {
		msg = st.Err.Error()
	}
	hint := ""
	if st.Transport == "stdio" {
		hint = sandboxHint
	}
	return fmt.Sprintf("server %s: FAILED (%s, %s), its tools are not offered: %s%s", oneLineText(st.Name), st.Transport, trust, oneLineText(msg), hint)
}

// sandboxHint ends the status line of a stdio server that failed: the
// sandbox it starts in by default is a frequent cause, and its refusals
// read as the server's own errors (a module not found, no answer).
const sandboxHint = ` (if it runs sandboxed, as by default, it reads only what docs/sandbox.md lists and "sandboxRead" adds, and writes only its workspace: one started by npx or uvx needs installing first; "sandbox": "off" in mcp.json tells whether that is the cause)`

// oneLineText shows line breaks and tabs in s as \n, \r and \t, so that text
// from a server (its name, version or error) cannot start a line of its own
// wherever the status line is printed. Other control characters are the
// printer's to escape.
func oneLineText(s string) string {
	return strings.NewReplacer("\n", `\n`, "\r", `\r`, "\t", `\t`).Replace(s)
}
