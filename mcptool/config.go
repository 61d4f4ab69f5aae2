package mcptool

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tollgate-dev/tollgate/configfile"
	docbound "github.com/tollgate-dev/tollgate/internal/bounded"
	"github.com/tollgate-dev/tollgate/internal/configread"
	"github.com/tollgate-dev/tollgate/tool"
)

// Bounds and default of a server's "timeout" and "callTimeout" in mcp.json.
const (
	// defaultTimeout bounds each start-up phase of a server (start and
	// initialize; listing all its tools) when its configuration sets none.
	defaultTimeout = 30 * time.Second
	// minTimeout is the smallest "timeout" or "callTimeout" accepted in mcp.json.
	minTimeout = time.Second
	// maxTimeout is the largest "timeout" accepted in mcp.json.
	maxTimeout = 10 * time.Minute
	// maxCallTimeout is the largest "callTimeout" accepted in mcp.json.
	maxCallTimeout = 24 * time.Hour
)

// Config is a set of MCP servers, as read from an mcp.json file in the common
// format:
//
//	{
//	  "mcpServers": {
//	    "fs":  {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]},
//	    "api": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${API_TOKEN}"},
//	            "trusted": true, "timeout": "10s"}
//	  }
//	}
//
// See [ServerConfig] for the fields of one server. Keys at the top level other
// than "mcpServers" are ignored, so that files shared with other MCP clients load.
//
// [Open] checks a configuration (one built in code too): every server name
// is non-empty, does not contain "__" once sanitized, and sanitizes to a name
// no other server sanitizes to; every server sets exactly one of Command, URL
// and Transport; URLs are http or https; ${...} references are well formed;
// timeouts are not negative.
type Config struct {
	// File is the path the configuration was read from; errors name it. Empty
	// for a configuration built in code.
	File string
	// Servers maps a server name to its configuration. The name becomes the
	// <server> part of the tool names mcp__<server>__<tool> (see [ToolName]).
	Servers map[string]*ServerConfig
	// Warnings lists what [Load] accepted but ignored (unknown fields), each
	// as "file:line:col: server "x": field "y": ...". Nothing in it is fatal.
	Warnings []string
}

// ServerConfig configures one MCP server: a local command spoken to over stdio
// (Command set), a remote server spoken to over streamable HTTP (URL set), or,
// in code only, any go-sdk transport (Transport set). Exactly one of the three
// must be set.
//
// In mcp.json the keys are "command", "args", "env", "cwd", "url", "headers",
// "oauth", "disabled", "timeout", "callTimeout", "trusted", "sandbox", "sandboxRead",
// "sandboxConnect" and the optional "type" ("stdio", "http",
// "streamable-http" or "streamableHttp"; "sse" is rejected).
type ServerConfig struct {
	// Command is the program of a stdio server, looked up in PATH when it has
	// no path separator, and taken as written (no ${NAME} expansion).
	Command string
	// Args are the command's arguments. Each may use ${NAME} and
	// ${NAME:-default} like Env, expanded when the server is started; expanded
	// arguments are never logged.
	Args []string
	// Env holds variables added, for the command, to tollgate's own
	// environment scrubbed to an allowlist (PATH, HOME, LANG, LC_*, TERM,
	// TMPDIR, ...; internal/proc.DefaultEnvAllow): a provider key or any other
	// variable reaches the server only when named here, e.g.
	// "GITHUB_TOKEN": "${GITHUB_TOKEN}". Values may use ${NAME} and
	// ${NAME:-default}, expanded when the server is started (see
	// [Options].LookupEnv); they are never logged.
	Env map[string]string
	// Cwd is the command's working directory. Empty means tollgate's own. It
	// may use ${NAME} and ${NAME:-default} like Args. In mcp.json a relative
	// cwd is resolved against the directory of the file: when it is parsed, or,
	// for a cwd that uses ${...}, once it is expanded when the server starts
	// (so "${WORKSPACE}" may be absolute or relative). A relative Command with
	// a path separator is resolved against Cwd (see [os/exec.Cmd].Path).
	Cwd string
	// cwdBase is the directory of the mcp.json file, against which a Cwd that
	// uses ${...} is resolved once expanded; "" for a configuration built in
	// code.
	cwdBase string

	// URL is the endpoint of a streamable HTTP server (MCP specification
	// 2025-06-18, "Transports: Streamable HTTP"); http or https.
	URL string
	// Headers are added to every HTTP request to URL. Values may use ${NAME} and
	// ${NAME:-default} like Env; they are never logged.
	Headers map[string]string
	// OAuth, if set, says how tollgate registers with the server's
	// authorization server (see [OAuthConfig]); the host's [Options].OAuth
	// decides whether OAuth is used at all. In mcp.json the "oauth" object.
	OAuth *OAuthConfig

	// Transport, set in code only, connects to the server directly (for an
	// in-process server, say one end of mcp.NewInMemoryTransports). Command and
	// URL must then be empty.
	Transport mcp.Transport

	// Disabled servers are not started; their status says so.
	Disabled bool
	// Timeout bounds each start-up phase separately: start and initialize, then
	// listing all tools. Zero means 30 s. In mcp.json it is a Go duration
	// string such as "30s" or "1m30s", between 1 s and 10 min; a bare number
	// is rejected because its unit would be a guess.
	Timeout time.Duration
	// CallTimeout bounds each tools/call; zero means no bound other than the
	// caller's context. In mcp.json it is a Go duration string between
	// 1 s and 24 h. A call that runs out of it is an error
	// result, and the server is told to cancel it.
	CallTimeout time.Duration
	// Trusted says whether the server's tool annotations are believed (see
	// [HintsFor]). The default, false, makes every hint of its tools the
	// strictest value.
	Trusted bool

	// Sandbox is how a stdio server is confined when [Options].Sandbox is set:
	// "off", "workspace" or "read-only" (see package sandbox); empty means the
	// host's default (the tollgate command: "workspace").
	Sandbox string
	// SandboxRead are further files and trees a sandboxed server may read
	// (its own installation, a cache); in mcp.json relative paths resolve
	// against the directory of the file.
	SandboxRead []string
	// SandboxConnect are the TCP ports a sandboxed server may connect to.
	SandboxConnect []uint16
}

// serverKeys are the keys of a server in mcp.json.
var serverKeys = []string{"type", "command", "args", "env", "cwd", "url", "headers", "oauth", "disabled",
	"timeout", "callTimeout", "trusted", "sandbox", "sandboxRead", "sandboxConnect"}

// SandboxModes are the values "sandbox" takes in mcp.json (besides empty).
var sandboxModes = []string{"off", "workspace", "read-only"}

// transportKind names how a server is reached, for statuses and logs.
func (sc *ServerConfig) transportKind() string {
	switch {
	case sc.Transport != nil:
		return "custom"
	case sc.URL != "":
		return "http"
	default:
		return "stdio"
	}
}

// serverField names field of server name as mcp.json nests it:
// "mcpServers.NAME.FIELD" (the name quoted when it has characters other
// than letters, digits, '_' and '-').
func serverField(name, field string) string {
	if name != sanitizeChars(name) || name == "" {
		name = strconv.Quote(name)
	}
	if field == "" {
		return "mcpServers." + name
	}
	return "mcpServers." + name + "." + field
}

// Load reads and parses the mcp.json file at path (its name is used in
// errors, and relative "cwd" values resolve against its directory), and
// checks it as [Open] does. The first problem found is returned as a
// *[configfile.Problem] (test with errors.As) that names the file, the
// server, the field and the line and column. Duplicate keys are errors,
// never a silent override, and so is a document larger than 1 MiB or
// nested deeper than 16 levels. The file system's errors are returned as
// they are.
func Load(path string) (*Config, error) {
	data, err := ReadConfig(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// ReadConfig reads the regular file at path within the size limit of an
// mcp.json file (1 MiB), as [Load] does: a file past it, or not a regular
// file, is a *[configfile.Problem] naming the file; the file system's
// errors are returned as they are. A caller that keeps what it parsed
// under the content's hash reads the file once with it and parses those
// bytes with [Parse].
func ReadConfig(path string) ([]byte, error) {
	return configread.ReadFile(path, configLimits)
}

// Limits of an mcp.json file, checked before it is parsed.
const (
	maxConfigSize  = 1 << 20 // bytes
	maxConfigDepth = 16      // nested objects and arrays, the top level counting 1
)

var configLimits = docbound.Limits{MaxBytes: maxConfigSize, MaxDepth: maxConfigDepth}

// Parse is [Load] of data, the content of the mcp.json file named file
// (the name is used in errors, and relative "cwd" values resolve against
// its directory): the same checks and the same errors.
func Parse(file string, data []byte) (*Config, error) {
	if be, ok := errors.AsType[*docbound.Error](docbound.CheckJSON(file, data, configLimits)); ok {
		return nil, configread.Errorf(file, configread.Pos{Line: be.Line, Col: be.Col}, "", "%s", be.Message)
	}
	p := &parser{file: file, data: data}
	return p.parse()
}

// validate checks a configuration as [Open] does: see [Config]. The first
// problem is returned as a *configfile.Error of one [configfile.Problem].
func (c *Config) validate() error {
	name, field, err := c.check()
	if err == nil {
		return nil
	}
	return configread.Errorf(c.File, configread.Pos{}, serverField(name, field), "%v", err)
}

// check is validate: it returns the server and the field of the
// first problem, and the problem.
func (c *Config) check() (server, field string, err error) {
	names := make([]string, 0, len(c.Servers))
	for name := range c.Servers {
		names = append(names, name)
	}
	sort.Strings(names)
	seen := map[string]string{}
	for _, name := range names {
		sc := c.Servers[name]
		fail := func(field string, err error) (string, string, error) {
			return name, field, err
		}
		if name == "" {
			return fail("", errors.New("empty server name"))
		}
		s := sanitizeChars(name)
		if strings.Contains(s, "__") {
			return fail("", fmt.Errorf("the name (sanitized %q) must not contain \"__\", which separates server and tool in mcp__<server>__<tool>; rename the server", s))
		}
		if other, ok := seen[s]; ok {
			return fail("", fmt.Errorf("server names %q and %q both become %q in tool names; rename one", other, name, s))
		}
		seen[s] = name
		if sc == nil {
			return fail("", errors.New("no configuration"))
		}
		set := 0
		for _, v := range []bool{sc.Command != "", sc.URL != "", sc.Transport != nil} {
			if v {
				set++
			}
		}
		if set != 1 {
			return fail("", errors.New("exactly one of \"command\" (stdio) and \"url\" (streamable HTTP) must be set"))
		}
		if sc.URL != "" {
			u, err := url.Parse(sc.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return fail("url", fmt.Errorf("%q is not an http or https URL", sc.URL))
			}
		} else if len(sc.Headers) > 0 {
			return fail("headers", errors.New("headers need \"url\""))
		}
		if sc.Command == "" && (len(sc.Args) > 0 || len(sc.Env) > 0 || sc.Cwd != "") {
			return fail("", errors.New("\"args\", \"env\" and \"cwd\" need \"command\""))
		}
		for i, v := range sc.Args {
			if _, err := expand(v, func(string) (string, bool) { return "", true }); err != nil {
				return fail(fmt.Sprintf("args[%d]", i), err)
			}
		}
		if _, err := expand(sc.Cwd, func(string) (string, bool) { return "", true }); err != nil {
			return fail("cwd", err)
		}
		for k, v := range sc.Env {
			if _, err := expand(v, func(string) (string, bool) { return "", true }); err != nil {
				return fail("env."+k, err)
			}
		}
		for k, v := range sc.Headers {
			if _, err := expand(v, func(string) (string, bool) { return "", true }); err != nil {
				return fail("headers."+k, err)
			}
		}
		if sc.Timeout < 0 {
			return fail("timeout", errors.New("negative"))
		}
		if sc.Sandbox != "" && !slices.Contains(sandboxModes, sc.Sandbox) {
			return fail("sandbox", fmt.Errorf("%q: want off, workspace or read-only", sc.Sandbox))
		}
		if sc.Command == "" && (sc.Sandbox != "" || len(sc.SandboxRead) > 0 || len(sc.SandboxConnect) > 0) {
			return fail("sandbox", errors.New("\"sandbox\", \"sandboxRead\" and \"sandboxConnect\" need \"command\""))
		}
		if sc.CallTimeout < 0 {
			return fail("callTimeout", errors.New("negative"))
		}
	}
	return "", "", nil
}

// expand replaces ${NAME} and ${NAME:-default} in s with lookup(NAME) (or the
// default when NAME is unset or empty). A "$" not followed by "{" is kept.
// An unset NAME without a default is an error naming NAME, never its value.
func expand(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		rest := s[i+2:]
		j := strings.IndexByte(rest, '}')
		if j < 0 {
			return "", errors.New("unterminated \"${\"")
		}
		ref := rest[:j]
		name, def, hasDef := strings.Cut(ref, ":-")
		if !validEnvName(name) {
			return "", fmt.Errorf("\"${%s}\": %q is not a variable name ([A-Za-z_][A-Za-z0-9_]*)", ref, name)
		}
		v, ok := lookup(name)
		switch {
		case hasDef && v == "":
			v = def
		case !ok:
			return "", fmt.Errorf("environment variable %s is not set (write ${%s:-default} for a default)", name, name)
		}
		b.WriteString(v)
		s = rest[j+1:]
	}
}

func validEnvName(n string) bool {
	if n == "" {
		return false
	}
	for i, c := range n {
		if c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (i > 0 && c >= '0' && c <= '9') {
			continue
		}
		return false
	}
	return true
}

// parser reads mcp.json with encoding/json while keeping the offset of every
// value, so that errors can say line and column.
type parser struct {
	file string
	data []byte
}

// errAt returns the problem err of field of server at byte offset off of
// the file, as a *configfile.Error.
func (p *parser) errAt(off int, server, field string, err error) error {
	f := field
	if server != "" {
		f = serverField(server, field)
	}
	return configread.Errorf(p.file, configread.LineCol(p.data, off), f, "%v", err)
}

// members splits the JSON object raw, at byte offset base of the file,
// into its members ([configread.Object]); a problem is about field of
// server.
func (p *parser) members(raw []byte, base int, server, field string) ([]configread.Member, error) {
	ms, err := configread.Object(raw, base)
	if oe, ok := errors.AsType[*configread.OffsetError](err); ok {
		return nil, p.errAt(oe.Off, server, field, oe.Err)
	}
	return ms, err
}

func (p *parser) parse() (*Config, error) {
	// Anything after the top-level value is an error.
	top, topOff, err := configread.Document(p.data)
	if oe, ok := errors.AsType[*configread.OffsetError](err); ok {
		return nil, p.errAt(oe.Off, "", "", oe.Err)
	}
	ms, err := p.members(top, topOff, "", "")
	if err != nil {
		return nil, err
	}
	cfg := &Config{File: p.file, Servers: map[string]*ServerConfig{}}
	var servers *configread.Member
	for i := range ms {
		if ms[i].Key == "mcpServers" {
			servers = &ms[i]
		}
	}
	if servers == nil {
		return nil, p.errAt(topOff, "", "", errors.New("no \"mcpServers\" object"))
	}
	sms, err := p.members(servers.Value, servers.ValueOff, "", "mcpServers")
	if err != nil {
		return nil, err
	}
	dir := ""
	if p.file != "" {
		dir = filepath.Dir(p.file)
	}
	for _, sm := range sms {
		sc, err := p.server(cfg, sm, dir)
		if err != nil {
			return nil, err
		}
		cfg.Servers[sm.Key] = sc
	}
	// Validate without positions, then report at the server's name.
	if name, field, err := cfg.check(); err != nil {
		off := -1
		for _, sm := range sms {
			if sm.Key == name {
				off = sm.KeyOff
			}
		}
		return nil, p.errAt(off, name, field, err)
	}
	return cfg, nil
}

func (p *parser) server(cfg *Config, sm configread.Member, dir string) (*ServerConfig, error) {
	name := sm.Key
	fields, err := p.members(sm.Value, sm.ValueOff, name, "")
	if err != nil {
		return nil, err
	}
	sc := &ServerConfig{}
	typ := ""
	typOff := 0
	var unknown []string // unknown keys with their line:col, for the error below
	for _, f := range fields {
		bad := func(format string, args ...any) error {
			return p.errAt(f.ValueOff, name, f.Key, fmt.Errorf(format, args...))
		}
		str := func() (string, error) {
			var s string
			if err := json.Unmarshal(f.Value, &s); err != nil {
				return "", bad("want a string, got %s", configread.KindJSON(f.Value))
			}
			return s, nil
		}
		boolean := func() (bool, error) {
			var b bool
			if err := json.Unmarshal(f.Value, &b); err != nil {
				return false, bad("want true or false, got %s", configread.KindJSON(f.Value))
			}
			return b, nil
		}
		strMap := func() (map[string]string, error) {
			ms, err := p.members(f.Value, f.ValueOff, name, f.Key)
			if err != nil {
				return nil, err
			}
			out := make(map[string]string, len(ms))
			for _, m := range ms {
				var s string
				if err := json.Unmarshal(m.Value, &s); err != nil {
					return nil, p.errAt(m.ValueOff, name, f.Key+"."+m.Key, fmt.Errorf("want a string, got %s", configread.KindJSON(m.Value)))
				}
				if _, err := expand(s, func(string) (string, bool) { return "", true }); err != nil {
					return nil, p.errAt(m.ValueOff, name, f.Key+"."+m.Key, err)
				}
				out[m.Key] = s
			}
			return out, nil
		}
		duration := func(max time.Duration) (time.Duration, error) {
			var s string
			if err := json.Unmarshal(f.Value, &s); err != nil {
				return 0, bad("want a duration string such as \"30s\" or \"2m\", got %s %s", configread.KindJSON(f.Value), bytes.TrimSpace(f.Value))
			}
			d, err := time.ParseDuration(s)
			if err != nil {
				return 0, bad("%q is not a duration such as \"30s\" or \"2m\"", s)
			}
			if d < minTimeout || d > max {
				return 0, bad("%s is out of range [%s, %s]", d, minTimeout, max)
			}
			return d, nil
		}
		switch f.Key {
		case "type":
			if typ, err = str(); err != nil {
				return nil, err
			}
			typOff = f.ValueOff
		case "command":
			if sc.Command, err = str(); err != nil {
				return nil, err
			}
			if sc.Command == "" {
				return nil, bad("empty command")
			}
		case "args":
			if err := json.Unmarshal(f.Value, &sc.Args); err != nil {
				return nil, bad("want an array of strings, got %s", configread.KindJSON(f.Value))
			}
			for i, a := range sc.Args {
				if _, err := expand(a, func(string) (string, bool) { return "", true }); err != nil {
					return nil, p.errAt(f.ValueOff, name, fmt.Sprintf("args[%d]", i), err)
				}
			}
		case "env":
			if sc.Env, err = strMap(); err != nil {
				return nil, err
			}
		case "cwd":
			if sc.Cwd, err = str(); err != nil {
				return nil, err
			}
			if _, err := expand(sc.Cwd, func(string) (string, bool) { return "", true }); err != nil {
				return nil, bad("%v", err)
			}
			switch {
			case strings.Contains(sc.Cwd, "${"):
				// Resolved once expanded, when the server starts.
				sc.cwdBase = dir
			case sc.Cwd != "" && !filepath.IsAbs(sc.Cwd) && dir != "":
				sc.Cwd = filepath.Join(dir, sc.Cwd)
			}
		case "url":
			if sc.URL, err = str(); err != nil {
				return nil, err
			}
			if sc.URL == "" {
				return nil, bad("empty url")
			}
		case "headers":
			if sc.Headers, err = strMap(); err != nil {
				return nil, err
			}
		case "oauth":
			if sc.OAuth, err = parseOAuth(f.Value); err != nil {
				return nil, bad("%v", err)
			}
		case "disabled":
			if sc.Disabled, err = boolean(); err != nil {
				return nil, err
			}
		case "trusted":
			if sc.Trusted, err = boolean(); err != nil {
				return nil, err
			}
		case "timeout":
			if sc.Timeout, err = duration(maxTimeout); err != nil {
				return nil, err
			}
		case "callTimeout":
			if sc.CallTimeout, err = duration(maxCallTimeout); err != nil {
				return nil, err
			}
		case "sandbox":
			if sc.Sandbox, err = str(); err != nil {
				return nil, err
			}
			if !slices.Contains(sandboxModes, sc.Sandbox) {
				return nil, bad("%q: want off, workspace or read-only", sc.Sandbox)
			}
		case "sandboxRead":
			if err := json.Unmarshal(f.Value, &sc.SandboxRead); err != nil {
				return nil, bad("want an array of paths, got %s", configread.KindJSON(f.Value))
			}
			for i, r := range sc.SandboxRead {
				if r == "" {
					return nil, p.errAt(f.ValueOff, name, fmt.Sprintf("sandboxRead[%d]", i), errors.New("empty path"))
				}
				if !filepath.IsAbs(r) {
					if sc.SandboxRead[i], err = filepath.Abs(filepath.Join(dir, r)); err != nil {
						return nil, bad("%v", err)
					}
				}
			}
		case "sandboxConnect":
			if err := json.Unmarshal(f.Value, &sc.SandboxConnect); err != nil {
				return nil, bad("want an array of TCP ports (1-65535), got %s", configread.KindJSON(f.Value))
			}
			if slices.Contains(sc.SandboxConnect, 0) {
				return nil, bad("port 0 is not a port")
			}
		default:
			pos := configread.LineCol(p.data, f.KeyOff)
			msg := fmt.Sprintf("unknown key %q, ignored", f.Key)
			if s := configread.Suggest(f.Key, serverKeys); s != "" {
				msg = fmt.Sprintf("unknown key %q, ignored; did you mean %q?", f.Key, s)
			}
			cfg.Warnings = append(cfg.Warnings, configfile.Problem{File: p.file, Line: pos.Line, Col: pos.Col,
				Severity: configfile.SeverityWarning, Field: serverField(name, f.Key), Message: msg}.Error())
			u := fmt.Sprintf("%q at %d:%d", f.Key, pos.Line, pos.Col)
			if s := configread.Suggest(f.Key, serverKeys); s != "" {
				u += fmt.Sprintf(" (did you mean %q?)", s)
			}
			unknown = append(unknown, u)
		}
	}
	if sc.Command == "" && sc.URL == "" {
		msg := "neither \"command\" (stdio) nor \"url\" (streamable HTTP) is set"
		if len(unknown) > 0 {
			// A misspelt "comand" is the likely cause: say so here, where
			// the warning about it would otherwise be lost.
			msg += "; unknown key " + strings.Join(unknown, ", unknown key ") + " was ignored"
		}
		return nil, p.errAt(sm.ValueOff, name, "", errors.New(msg))
	}
	if sc.OAuth != nil && sc.URL == "" {
		return nil, p.errAt(sm.ValueOff, name, "oauth", errors.New("\"oauth\" needs \"url\" (a streamable HTTP server)"))
	}
	switch typ {
	case "":
	case "stdio":
		if sc.Command == "" {
			return nil, p.errAt(typOff, name, "type", errors.New("type \"stdio\" needs \"command\""))
		}
	case "http", "streamable-http", "streamableHttp", "streamable_http":
		if sc.URL == "" {
			return nil, p.errAt(typOff, name, "type", fmt.Errorf("type %q needs \"url\"", typ))
		}
	case "sse":
		return nil, p.errAt(typOff, name, "type", errors.New("the deprecated HTTP+SSE transport is not supported; use a streamable HTTP endpoint"))
	default:
		return nil, p.errAt(typOff, name, "type", fmt.Errorf("unknown type %q (want \"stdio\" or \"http\")", typ))
	}
	return sc, nil
}

// parseOAuth reads the "oauth" object of a server.
func parseOAuth(b []byte) (*OAuthConfig, error) {
	var w struct {
		ClientID          string   `json:"clientId"`
		ClientSecret      string   `json:"clientSecret"`
		ClientMetadataURL string   `json:"clientMetadataUrl"`
		Scopes            []string `json:"scopes"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return nil, fmt.Errorf("want an object with clientId, clientSecret, clientMetadataUrl and scopes: %v", err)
	}
	if w.ClientSecret != "" && w.ClientID == "" {
		return nil, errors.New("clientSecret without clientId")
	}
	if _, err := expand(w.ClientSecret, func(string) (string, bool) { return "", true }); err != nil {
		return nil, fmt.Errorf("clientSecret: %v", err)
	}
	if w.ClientMetadataURL != "" {
		u, err := url.Parse(w.ClientMetadataURL)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.Path == "" || u.Path == "/" {
			return nil, fmt.Errorf("clientMetadataUrl %q: want an https URL with a path", w.ClientMetadataURL)
		}
	}
	return &OAuthConfig{ClientID: w.ClientID, ClientSecret: w.ClientSecret, ClientMetadataURL: w.ClientMetadataURL, Scopes: w.Scopes}, nil
}

// toolName returns the name under which tool remote of server appears:
// "mcp__<server>__<remote>", with every byte outside [A-Za-z0-9_-] replaced by
// '_' (as [tool.SanitizeName] does). A name longer than [tool.MaxNameLen] is cut
// and ends with "_" and 8 hex digits of a SHA-256 of the unsanitized name, so
// that two long names differing only at their ends stay distinct.
func toolName(server, remote string) string {
	full := "mcp__" + sanitizeChars(server) + "__" + sanitizeChars(remote)
	if len(full) <= tool.MaxNameLen {
		return tool.SanitizeName(full)
	}
	sum := sha256Hex("mcp__" + server + "__" + remote)
	return tool.SanitizeName(full[:tool.MaxNameLen-9] + "_" + sum[:8])
}

// sanitizeChars is tool.SanitizeName without the length cut.
func sanitizeChars(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c == '_' || c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
			b[i] = '_'
		}
	}
	return string(b)
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// timeout returns the server's Timeout, or defaultTimeout.
func (sc *ServerConfig) timeout() time.Duration {
	if sc.Timeout <= 0 {
		return defaultTimeout
	}
	return sc.Timeout
}
