package mcptool

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tollgate-dev/tollgate/configfile"
)

func TestParse(t *testing.T) {
	const file = "/etc/tollgate/mcp.json"
	src := `{
  "globalShortcut": "ignored",
  "mcpServers": {
    "fs": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "."],
      "env": {"NODE_ENV": "production", "TOKEN": "${FS_TOKEN:-none}"},
      "cwd": "workspace",
      "trusted": true,
      "timeout": "45s",
      "callTimeout": "2m"
    },
    "api": {
      "url": "https://mcp.example.com/mcp",
      "headers": {"Authorization": "Bearer ${API_TOKEN}"},
      "disabled": true,
      "autoApprove": []
    }
  }
}`
	cfg, err := Parse(file, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		File: file,
		Servers: map[string]*ServerConfig{
			"fs": {
				Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "."},
				Env: map[string]string{"NODE_ENV": "production", "TOKEN": "${FS_TOKEN:-none}"},
				Cwd: "/etc/tollgate/workspace", Trusted: true, Timeout: 45 * time.Second, CallTimeout: 2 * time.Minute,
			},
			"api": {
				URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer ${API_TOKEN}"},
				Disabled: true,
			},
		},
		Warnings: []string{`/etc/tollgate/mcp.json:18:7: warning: mcpServers.api.autoApprove: unknown key "autoApprove", ignored`},
	}
	if diff := cmp.Diff(want, cfg, cmp.AllowUnexported(ServerConfig{})); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
}

func TestParseOAuth(t *testing.T) {
	cfg, err := Parse("mcp.json", []byte(`{"mcpServers": {"docs": {"url": "https://h/mcp",
	  "oauth": {"clientId": "tollgate-cli", "clientSecret": "${DOCS_SECRET}", "clientMetadataUrl": "https://tollgate.example/client.json", "scopes": ["read"]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := &OAuthConfig{ClientID: "tollgate-cli", ClientSecret: "${DOCS_SECRET}", ClientMetadataURL: "https://tollgate.example/client.json", Scopes: []string{"read"}}
	if d := cmp.Diff(want, cfg.Servers["docs"].OAuth); d != "" {
		t.Errorf("oauth (-want +got):\n%s", d)
	}
}

func TestParseSandbox(t *testing.T) {
	cfg, err := Parse("/etc/tg/mcp.json", []byte(`{"mcpServers": {"a": {"command": "x", "sandbox": "read-only", "sandboxRead": ["node_modules", "/opt/x"], "sandboxConnect": [443]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Servers["a"]
	if a.Sandbox != "read-only" || len(a.SandboxRead) != 2 || a.SandboxRead[0] != "/etc/tg/node_modules" || a.SandboxRead[1] != "/opt/x" || len(a.SandboxConnect) != 1 || a.SandboxConnect[0] != 443 {
		t.Errorf("server a = %+v", a)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers": {"a": {"command": "srv", "cwd": "."}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Servers["a"]; got.Command != "srv" || got.Cwd != dir || got.Trusted || got.Timeout != 0 {
		t.Errorf("server a = %+v", got)
	}
	_, err = Load(filepath.Join(dir, "missing.json"))
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), filepath.Join(dir, "missing.json")) {
		t.Errorf("Load(missing) = %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		{"not json", `{"mcpServers": {`, `mcp.json:1:17: invalid JSON: unexpected end of input`},
		{"syntax", "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",}\n  }\n}", `mcp.json:3:27: invalid JSON: invalid character '}' looking for beginning of object key string`},
		{"trailing", `{"mcpServers": {}} {}`, `mcp.json:1:20: invalid JSON: data after the top-level value`},
		{"top array", `[]`, `mcp.json:1:1: want a JSON object, got an array`},
		{"no servers", `{"servers": {}}`, `mcp.json:1:1: no "mcpServers" object`},
		{"servers not object", `{"mcpServers": []}`, `mcp.json:1:16: mcpServers: want a JSON object, got an array`},
		{"duplicate server", "{\"mcpServers\": {\n  \"a\": {\"command\": \"x\"},\n  \"a\": {\"command\": \"y\"}}}", `mcp.json:3:3: mcpServers: duplicate key "a"`},
		{"duplicate field", `{"mcpServers": {"a": {"command": "x", "command": "y"}}}`, `mcp.json:1:39: mcpServers.a: duplicate key "command"`},
		{"neither", `{"mcpServers": {"a": {"args": []}}}`, `mcp.json:1:22: mcpServers.a: neither "command" (stdio) nor "url" (streamable HTTP) is set`},
		{"misspelt command", "{\"mcpServers\": {\"a\": {\n  \"comand\": \"x\"}}}", `mcp.json:1:22: mcpServers.a: neither "command" (stdio) nor "url" (streamable HTTP) is set; unknown key "comand" at 2:3 (did you mean "command"?) was ignored`},
		{"both", `{"mcpServers": {"a": {"command": "x", "url": "http://h/mcp"}}}`, `mcp.json:1:17: mcpServers.a: exactly one of "command" (stdio) and "url" (streamable HTTP) must be set`},
		{"command type", `{"mcpServers": {"a": {"command": 3}}}`, `mcp.json:1:34: mcpServers.a.command: want a string, got a number`},
		{"args type", `{"mcpServers": {"a": {"command": "x", "args": "-v"}}}`, `mcp.json:1:47: mcpServers.a.args: want an array of strings, got a string`},
		{"env value type", `{"mcpServers": {"a": {"command": "x", "env": {"N": 1}}}}`, `mcp.json:1:52: mcpServers.a.env.N: want a string, got a number`},
		{"bad env ref", `{"mcpServers": {"a": {"command": "x", "env": {"N": "${A-B}"}}}}`, `mcp.json:1:52: mcpServers.a.env.N: "${A-B}": "A-B" is not a variable name ([A-Za-z_][A-Za-z0-9_]*)`},
		{"unterminated header ref", `{"mcpServers": {"a": {"url": "http://h/mcp", "headers": {"X": "${TOKEN"}}}}`, `mcp.json:1:63: mcpServers.a.headers.X: unterminated "${"`},
		{"disabled type", `{"mcpServers": {"a": {"command": "x", "disabled": "yes"}}}`, `mcp.json:1:51: mcpServers.a.disabled: want true or false, got a string`},
		{"sandbox mode", `{"mcpServers": {"a": {"command": "x", "sandbox": "on"}}}`, `mcp.json:1:50: mcpServers.a.sandbox: "on": want off, workspace or read-only`},
		{"sandbox ports", `{"mcpServers": {"a": {"command": "x", "sandboxConnect": [80, 70000]}}}`, `mcp.json:1:57: mcpServers.a.sandboxConnect: want an array of TCP ports (1-65535), got an array`},
		{"sandbox port 0", `{"mcpServers": {"a": {"command": "x", "sandboxConnect": [0]}}}`, `mcp.json:1:57: mcpServers.a.sandboxConnect: port 0 is not a port`},
		{"sandbox over http", `{"mcpServers": {"a": {"url": "http://h/mcp", "sandbox": "off"}}}`, `mcp.json:1:17: mcpServers.a.sandbox: "sandbox", "sandboxRead" and "sandboxConnect" need "command"`},
		{"trusted type", `{"mcpServers": {"a": {"command": "x", "trusted": 1}}}`, `mcp.json:1:50: mcpServers.a.trusted: want true or false, got a number`},
		{"timeout word", `{"mcpServers": {"a": {"command": "x", "timeout": "soon"}}}`, `mcp.json:1:50: mcpServers.a.timeout: "soon" is not a duration such as "30s" or "2m"`},
		{"timeout number", `{"mcpServers": {"a": {"command": "x", "timeout": 30000}}}`, `mcp.json:1:50: mcpServers.a.timeout: want a duration string such as "30s" or "2m", got a number 30000`},
		{"timeout negative", `{"mcpServers": {"a": {"command": "x", "timeout": "-1s"}}}`, `mcp.json:1:50: mcpServers.a.timeout: -1s is out of range [1s, 10m0s]`},
		{"timeout too long", `{"mcpServers": {"a": {"command": "x", "timeout": "1h"}}}`, `mcp.json:1:50: mcpServers.a.timeout: 1h0m0s is out of range [1s, 10m0s]`},
		{"call timeout short", `{"mcpServers": {"a": {"command": "x", "callTimeout": "10ms"}}}`, `mcp.json:1:54: mcpServers.a.callTimeout: 10ms is out of range [1s, 24h0m0s]`},
		{"url scheme", `{"mcpServers": {"a": {"url": "ftp://h/mcp"}}}`, `mcp.json:1:17: mcpServers.a.url: "ftp://h/mcp" is not an http or https URL`},
		{"sse", `{"mcpServers": {"a": {"url": "http://h/sse", "type": "sse"}}}`, `mcp.json:1:54: mcpServers.a.type: the deprecated HTTP+SSE transport is not supported; use a streamable HTTP endpoint`},
		{"type mismatch", `{"mcpServers": {"a": {"command": "x", "type": "http"}}}`, `mcp.json:1:47: mcpServers.a.type: type "http" needs "url"`},
		{"headers without url", `{"mcpServers": {"a": {"command": "x", "headers": {"X": "y"}}}}`, `mcp.json:1:17: mcpServers.a.headers: headers need "url"`},
		{"server name with __", `{"mcpServers": {"my__fs": {"command": "x"}}}`, `mcp.json:1:17: mcpServers.my__fs: the name (sanitized "my__fs") must not contain "__", which separates server and tool in mcp__<server>__<tool>; rename the server`},
		{"server names clash", `{"mcpServers": {"my fs": {"command": "x"}, "my.fs": {"command": "y"}}}`, `mcp.json:1:44: mcpServers."my.fs": server names "my fs" and "my.fs" both become "my_fs" in tool names; rename one`},
		{"empty name", `{"mcpServers": {"": {"command": "x"}}}`, `mcp.json:1:17: empty server name`},
		{"oauth without url", `{"mcpServers": {"a": {"command": "x", "oauth": {}}}}`, `mcp.json:1:22: mcpServers.a.oauth: "oauth" needs "url" (a streamable HTTP server)`},
		{"oauth unknown key", `{"mcpServers": {"a": {"url": "http://h/mcp", "oauth": {"client_id": "x"}}}}`, `mcp.json:1:55: mcpServers.a.oauth: want an object with clientId, clientSecret, clientMetadataUrl and scopes: json: unknown field "client_id"`},
		{"oauth secret alone", `{"mcpServers": {"a": {"url": "http://h/mcp", "oauth": {"clientSecret": "${S}"}}}}`, `mcp.json:1:55: mcpServers.a.oauth: clientSecret without clientId`},
		{"oauth metadata url", `{"mcpServers": {"a": {"url": "http://h/mcp", "oauth": {"clientMetadataUrl": "http://c/x.json"}}}}`, `mcp.json:1:55: mcpServers.a.oauth: clientMetadataUrl "http://c/x.json": want an https URL with a path`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse("mcp.json", []byte(tc.src))
			if err == nil {
				t.Fatalf("Parse = %+v, want error %q", cfg, tc.want)
			}
			var ce *configfile.Problem
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not a *configfile.Problem", err)
			}
			if err.Error() != tc.want {
				t.Errorf("error\n got %s\nwant %s", err, tc.want)
			}
		})
	}
}

func TestValidateInCode(t *testing.T) {
	err := (&Config{Servers: map[string]*ServerConfig{"a": {URL: "http://h/mcp", Headers: map[string]string{"X": "${"}}}}).validate()
	if err == nil || err.Error() != `mcpServers.a.headers.X: unterminated "${"` {
		t.Errorf("Validate = %v", err)
	}
	if err := (&Config{Servers: map[string]*ServerConfig{"a": {Command: "x", Timeout: -time.Second}}}).validate(); err == nil {
		t.Error("negative timeout accepted")
	}
	if err := (&Config{Servers: map[string]*ServerConfig{"a": nil}}).validate(); err == nil {
		t.Error("nil server accepted")
	}
}

func TestExpand(t *testing.T) {
	env := map[string]string{"A": "alpha", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, tc := range []struct{ in, want, err string }{
		{"plain $A and $$", "plain $A and $$", ""},
		{"${A}", "alpha", ""},
		{"x-${A}-${A}-y", "x-alpha-alpha-y", ""},
		{"${UNSET:-dflt}", "dflt", ""},
		{"${EMPTY:-dflt}", "dflt", ""},
		{"${EMPTY}", "", ""},
		{"${A:-dflt}", "alpha", ""},
		{"Bearer ${UNSET}", "", "environment variable UNSET is not set (write ${UNSET:-default} for a default)"},
		{"${A", "", `unterminated "${"`},
		{"${}", "", `"${}": "" is not a variable name ([A-Za-z_][A-Za-z0-9_]*)`},
		{"${1A}", "", `"${1A}": "1A" is not a variable name ([A-Za-z_][A-Za-z0-9_]*)`},
	} {
		got, err := expand(tc.in, lookup)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("expand(%q) error = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("expand(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// FuzzParse: Parse never panics, and what it accepts validates and names
// servers that the input contains.
func FuzzParse(f *testing.F) {
	f.Add(`{"mcpServers": {"fs": {"command": "npx", "args": ["-y"], "env": {"A": "${B:-c}"}, "timeout": "3s"}}}`)
	f.Add(`{"mcpServers": {"api": {"url": "https://h/mcp", "headers": {"X": "${T}"}, "trusted": true}}}`)
	f.Add(`{"mcpServers": {"a": {"command": "x",}}}`)
	f.Add(`{"mcpServers": {"a": {"url": "https://h/mcp", "oauth": {"clientId": "c", "clientSecret": "${S}", "clientMetadataUrl": "https://c/m.json", "scopes": ["r"]}}}}`)
	f.Add(`{"mcpServers": {"a": {"command": "x", "command": "y"}}}`)
	f.Fuzz(func(t *testing.T, src string) {
		cfg, err := Parse("f.json", []byte(src))
		if err != nil {
			var ce *configfile.Problem
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not a *configfile.Problem: %v", err, err)
			}
			return
		}
		if err := cfg.validate(); err != nil {
			t.Fatalf("accepted config does not validate: %v", err)
		}
		for name := range cfg.Servers {
			if !strings.Contains(src, name) && !strings.Contains(src, `\`) {
				t.Fatalf("server %q not in the source", name)
			}
		}
	})
}
