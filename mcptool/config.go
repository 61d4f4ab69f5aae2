package mcptool

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	docbound "github.com/tollgate-dev/tollgate/internal/bounded"
	"github.com/tollgate-dev/tollgate/tool"
)

// Bounds and default of a server's "timeout" and "callTimeout" in mcp.json.
const (
	// DefaultTimeout bounds each start-up phase of a server (start and
	// initialize; listing all its tools) when its configuration sets none.
	DefaultTimeout = 30 * time.Second
	// MinTimeout is the smallest "timeout" or "callTimeout" accepted in mcp.json.
	MinTimeout = time.Second
	// MaxTimeout is the largest "timeout" accepted in mcp.json.
	MaxTimeout = 10 * time.Minute
	// MaxCallTimeout is the largest "callTimeout" accepted in mcp.json.
	MaxCallTimeout = 24 * time.Hour
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
type Config struct {
	// File is the path the configuration was read from; errors name it. Empty
	// for a configuration built in code.
	File string
	// Servers maps a server name to its configuration. The name becomes the
	// <server> part of the tool names mcp__<server>__<tool> (see [ToolName]).
	Servers map[string]*ServerConfig
	// Warnings lists what [Parse] accepted but ignored (unknown fields), each
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
	// listing all tools. Zero means [DefaultTimeout]. In mcp.json it is a Go
	// duration string such as "30s" or "1m30s", between [MinTimeout] and
	// [MaxTimeout]; a bare number is rejected because its unit would be a guess.
	Timeout time.Duration
	// CallTimeout bounds each tools/call; zero means no bound other than the
	// caller's context. In mcp.json it is a Go duration string between
	// [MinTimeout] and [MaxCallTimeout]. A call that runs out of it is an error
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

// ConfigError is an error in an MCP configuration. Every error [Parse], [Load]
// and [Config.Validate] return is a *ConfigError (test with errors.As).
type ConfigError struct {
	// File is the configuration file, or "" for a configuration built in code.
	File string
	// Line and Col locate the offending JSON value or key (1-based; Col counts
	// bytes); 0 when unknown.
	Line, Col int
	// Server is the server's name, "" for an error outside any server.
	Server string
	// Field is the server's field ("timeout", "headers.Authorization"), or "".
	Field string
	// Err says what is wrong.
	Err error
}

// Error renders the error as "file:line:col: server "x": field: message".
func (e *ConfigError) Error() string {
	var b strings.Builder
	file := e.File
	if file == "" {
		file = "mcp config"
	}
	b.WriteString(file)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
	}
	b.WriteString(": ")
	if e.Server != "" {
		fmt.Fprintf(&b, "server %q: ", e.Server)
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the underlying error.
func (e *ConfigError) Unwrap() error { return e.Err }

// Load reads and parses the mcp.json file at path; see [Parse].
func Load(path string) (*Config, error) {
	data, err := docbound.ReadFile(path, configLimits)
	var be *docbound.Error
	if errors.As(err, &be) {
		return nil, &ConfigError{File: path, Err: errors.New(be.Message)}
	}
	if err != nil {
		return nil, &ConfigError{File: path, Err: err}
	}
	return Parse(path, data)
}

// Limits of an mcp.json file, checked before it is parsed.
const (
	MaxConfigSize  = 1 << 20 // bytes
	MaxConfigDepth = 16      // nested objects and arrays, the top level counting 1
)

var configLimits = docbound.Limits{MaxBytes: MaxConfigSize, MaxDepth: MaxConfigDepth}

// Parse parses data, the content of the mcp.json file named file (used in
// errors and to resolve relative "cwd" values), and validates it with
// [Config.Validate]. The first problem found is returned as a *[ConfigError]
// that names the file, the server, the field and the line and column.
// Duplicate keys are errors, never a silent override, and so is a document
// larger than [MaxConfigSize] bytes or nested deeper than [MaxConfigDepth].
func Parse(file string, data []byte) (*Config, error) {
	var be *docbound.Error
	if errors.As(docbound.CheckJSON(file, data, configLimits), &be) {
		return nil, &ConfigError{File: file, Line: be.Line, Col: be.Col, Err: errors.New(be.Message)}
	}
	p := &parser{file: file, data: data}
	return p.parse()
}

// Validate checks a configuration (one built in code, say): every server name
// is non-empty, does not contain "__" once sanitized, and sanitizes to a
// name no other server sanitizes to; every server sets exactly one of Command,
// URL and Transport; URLs are http or https; ${...} references are well formed;
// timeouts are not negative. It returns a *[ConfigError].
func (c *Config) Validate() error {
	names := make([]string, 0, len(c.Servers))
	for name := range c.Servers {
		names = append(names, name)
	}
	sort.Strings(names)
	seen := map[string]string{}
	for _, name := range names {
		sc := c.Servers[name]
		fail := func(field string, err error) error {
			return &ConfigError{File: c.File, Server: name, Field: field, Err: err}
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
	return nil
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

// member is one "key": value pair of a JSON object.
type member struct {
	key    string
	keyOff int
	val    json.RawMessage
	valOff int
}

func (p *parser) pos(off int) (line, col int) {
	if off < 0 || off > len(p.data) {
		return 0, 0
	}
	before := p.data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = off - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

func (p *parser) errAt(off int, server, field string, err error) *ConfigError {
	line, col := p.pos(off)
	return &ConfigError{File: p.file, Line: line, Col: col, Server: server, Field: field, Err: err}
}

func skipSpace(data []byte, i int, also byte) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\r', '\n', also:
			i++
		default:
			return i
		}
	}
	return i
}

// members splits the JSON object at data[base:base+len(raw)] into its members,
// in order. Duplicate keys are errors.
func (p *parser) members(raw []byte, base int, server, field string) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, p.syntax(err, base, server, field)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, p.errAt(base+skipSpace(raw, 0, 0), server, field, fmt.Errorf("want a JSON object, got %s", describeJSON(raw)))
	}
	var out []member
	seen := map[string]bool{}
	for dec.More() {
		keyOff := skipSpace(raw, int(dec.InputOffset()), ',')
		tok, err := dec.Token()
		if err != nil {
			return nil, p.syntax(err, base, server, field)
		}
		key, _ := tok.(string)
		valOff := skipSpace(raw, int(dec.InputOffset()), ':')
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, p.syntax(err, base, server, field)
		}
		if seen[key] {
			return nil, p.errAt(base+keyOff, server, field, fmt.Errorf("duplicate key %q", key))
		}
		seen[key] = true
		out = append(out, member{key: key, keyOff: base + keyOff, val: val, valOff: base + valOff})
	}
	if _, err := dec.Token(); err != nil {
		return nil, p.syntax(err, base, server, field)
	}
	return out, nil
}

func (p *parser) syntax(err error, base int, server, field string) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return p.errAt(base+int(se.Offset), server, field, fmt.Errorf("invalid JSON: %v", se))
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return p.errAt(base+int(te.Offset), server, field, err)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return p.errAt(len(p.data), server, field, errors.New("invalid JSON: unexpected end of input"))
	}
	return p.errAt(base, server, field, fmt.Errorf("invalid JSON: %v", err))
}

func describeJSON(raw []byte) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "nothing"
	}
	switch t[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func (p *parser) parse() (*Config, error) {
	// Anything after the top-level value is an error.
	dec := json.NewDecoder(bytes.NewReader(p.data))
	var top json.RawMessage
	if err := dec.Decode(&top); err != nil {
		return nil, p.syntax(err, 0, "", "")
	}
	if dec.More() {
		return nil, p.errAt(int(dec.InputOffset()), "", "", errors.New("invalid JSON: data after the top-level object"))
	}
	topOff := skipSpace(p.data, 0, 0)
	ms, err := p.members(top, topOff, "", "")
	if err != nil {
		return nil, err
	}
	cfg := &Config{File: p.file, Servers: map[string]*ServerConfig{}}
	var servers *member
	for i := range ms {
		if ms[i].key == "mcpServers" {
			servers = &ms[i]
		}
	}
	if servers == nil {
		return nil, p.errAt(topOff, "", "", errors.New("no \"mcpServers\" object"))
	}
	sms, err := p.members(servers.val, servers.valOff, "", "mcpServers")
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
		cfg.Servers[sm.key] = sc
	}
	// Validate without positions, then attach the position of the server.
	if err := cfg.Validate(); err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) && ce.Line == 0 {
			for _, sm := range sms {
				if sm.key == ce.Server {
					ce.Line, ce.Col = p.pos(sm.keyOff)
				}
			}
		}
		return nil, err
	}
	return cfg, nil
}

func (p *parser) server(cfg *Config, sm member, dir string) (*ServerConfig, error) {
	name := sm.key
	fields, err := p.members(sm.val, sm.valOff, name, "")
	if err != nil {
		return nil, err
	}
	sc := &ServerConfig{}
	typ := ""
	typOff := 0
	var unknown []string // unknown keys with their line:col, for the error below
	for _, f := range fields {
		bad := func(format string, args ...any) error {
			return p.errAt(f.valOff, name, f.key, fmt.Errorf(format, args...))
		}
		str := func() (string, error) {
			var s string
			if err := json.Unmarshal(f.val, &s); err != nil {
				return "", bad("want a string, got %s", describeJSON(f.val))
			}
			return s, nil
		}
		boolean := func() (bool, error) {
			var b bool
			if err := json.Unmarshal(f.val, &b); err != nil {
				return false, bad("want true or false, got %s", describeJSON(f.val))
			}
			return b, nil
		}
		strMap := func() (map[string]string, error) {
			ms, err := p.members(f.val, f.valOff, name, f.key)
			if err != nil {
				return nil, err
			}
			out := make(map[string]string, len(ms))
			for _, m := range ms {
				var s string
				if err := json.Unmarshal(m.val, &s); err != nil {
					return nil, p.errAt(m.valOff, name, f.key+"."+m.key, fmt.Errorf("want a string, got %s", describeJSON(m.val)))
				}
				if _, err := expand(s, func(string) (string, bool) { return "", true }); err != nil {
					return nil, p.errAt(m.valOff, name, f.key+"."+m.key, err)
				}
				out[m.key] = s
			}
			return out, nil
		}
		duration := func(max time.Duration) (time.Duration, error) {
			var s string
			if err := json.Unmarshal(f.val, &s); err != nil {
				return 0, bad("want a duration string such as \"30s\" or \"2m\", got %s %s", describeJSON(f.val), bytes.TrimSpace(f.val))
			}
			d, err := time.ParseDuration(s)
			if err != nil {
				return 0, bad("%q is not a duration such as \"30s\" or \"2m\"", s)
			}
			if d < MinTimeout || d > max {
				return 0, bad("%s is out of range [%s, %s]", d, MinTimeout, max)
			}
			return d, nil
		}
		switch f.key {
		case "type":
			if typ, err = str(); err != nil {
				return nil, err
			}
			typOff = f.valOff
		case "command":
			if sc.Command, err = str(); err != nil {
				return nil, err
			}
			if sc.Command == "" {
				return nil, bad("empty command")
			}
		case "args":
			if err := json.Unmarshal(f.val, &sc.Args); err != nil {
				return nil, bad("want an array of strings, got %s", describeJSON(f.val))
			}
			for i, a := range sc.Args {
				if _, err := expand(a, func(string) (string, bool) { return "", true }); err != nil {
					return nil, p.errAt(f.valOff, name, fmt.Sprintf("args[%d]", i), err)
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
			if sc.OAuth, err = parseOAuth(f.val); err != nil {
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
			if sc.Timeout, err = duration(MaxTimeout); err != nil {
				return nil, err
			}
		case "callTimeout":
			if sc.CallTimeout, err = duration(MaxCallTimeout); err != nil {
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
			if err := json.Unmarshal(f.val, &sc.SandboxRead); err != nil {
				return nil, bad("want an array of paths, got %s", describeJSON(f.val))
			}
			for i, r := range sc.SandboxRead {
				if r == "" {
					return nil, p.errAt(f.valOff, name, fmt.Sprintf("sandboxRead[%d]", i), errors.New("empty path"))
				}
				if !filepath.IsAbs(r) {
					if sc.SandboxRead[i], err = filepath.Abs(filepath.Join(dir, r)); err != nil {
						return nil, bad("%v", err)
					}
				}
			}
		case "sandboxConnect":
			if err := json.Unmarshal(f.val, &sc.SandboxConnect); err != nil {
				return nil, bad("want an array of TCP ports (1-65535), got %s", describeJSON(f.val))
			}
			if slices.Contains(sc.SandboxConnect, 0) {
				return nil, bad("port 0 is not a port")
			}
		default:
			line, col := p.pos(f.keyOff)
			cfg.Warnings = append(cfg.Warnings, (&ConfigError{File: p.file, Line: line, Col: col, Server: name, Field: f.key,
				Err: errors.New("unknown field, ignored")}).Error())
			unknown = append(unknown, fmt.Sprintf("%q at %d:%d", f.key, line, col))
		}
	}
	if sc.Command == "" && sc.URL == "" {
		msg := "neither \"command\" (stdio) nor \"url\" (streamable HTTP) is set"
		if len(unknown) > 0 {
			// A misspelt "comand" is the likely cause: say so here, where
			// the warning about it would otherwise be lost.
			msg += "; unknown field " + strings.Join(unknown, ", unknown field ") + " was ignored (misspelt?)"
		}
		return nil, p.errAt(sm.valOff, name, "", errors.New(msg))
	}
	if sc.OAuth != nil && sc.URL == "" {
		return nil, p.errAt(sm.valOff, name, "oauth", errors.New("\"oauth\" needs \"url\" (a streamable HTTP server)"))
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

// ToolName returns the name under which tool remote of server appears:
// "mcp__<server>__<remote>", with every byte outside [A-Za-z0-9_-] replaced by
// '_' (as [tool.SanitizeName] does). A name longer than [tool.MaxNameLen] is cut
// and ends with "_" and 8 hex digits of a SHA-256 of the unsanitized name, so
// that two long names differing only at their ends stay distinct.
func ToolName(server, remote string) string {
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

// timeout returns the server's Timeout, or [DefaultTimeout].
func (sc *ServerConfig) timeout() time.Duration {
	if sc.Timeout <= 0 {
		return DefaultTimeout
	}
	return sc.Timeout
}
