package mcptool

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tollgate-dev/tollgate/configfile"
)

// where calls the "where" helper tool of server name in s and returns its
// output: the server's working directory, then its arguments.
func where(t *testing.T, s *Set, name string) []string {
	t.Helper()
	st := status(t, s, name)
	if st.State != StateReady {
		t.Fatalf("server %s: %s: %v (stderr %q)", name, st.State, st.Err, st.Stderr)
	}
	tl := toolsByName(s)[toolName(name, "where")]
	if tl == nil {
		t.Fatalf("server %s has no tool where", name)
	}
	res, err := tl.Call(context.Background(), nil)
	if err != nil || res.IsError {
		t.Fatalf("where: %v %+v", err, res)
	}
	return strings.Split(res.Output, "\n")
}

// ${NAME} in args and cwd is expanded when the server starts, from
// Options.LookupEnv; a relative cwd that uses ${...} is resolved against the
// directory of the mcp.json file once expanded; a relative command with a
// path separator is resolved against the cwd.
func TestExpandArgsAndCwd(t *testing.T) {
	self, err := filepath.Abs(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	abs := t.TempDir()
	for _, d := range []string{"sub", "bin"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// The helper reached through a relative command, from the cwd "bin/..".
	if err := os.Symlink(self, filepath.Join(dir, "bin", "helper")); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"ARG": "from env", "SUB": "sub", "ABS": abs}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	src := `{"mcpServers": {
  "rel":    {"command": ` + quote(self) + `, "args": ["${ARG}", "$ARG", "x${UNSET:-dflt}y"], "cwd": "${SUB}",
             "env": {"MCPTOOL_TEST_HELPER": "where"}},
  "abs":    {"command": ` + quote(self) + `, "cwd": "${ABS}", "env": {"MCPTOOL_TEST_HELPER": "where"}},
  "relcmd": {"command": "bin/helper", "cwd": ".", "env": {"MCPTOOL_TEST_HELPER": "where"}},
  "unset":  {"command": ` + quote(self) + `, "args": ["ok", "${NOPE}"], "env": {"MCPTOOL_TEST_HELPER": "where"}},
  "badcwd": {"command": ` + quote(self) + `, "cwd": "${NOPE}", "env": {"MCPTOOL_TEST_HELPER": "where"}}
}}`
	cfg, err := Parse(filepath.Join(dir, "mcp.json"), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Servers["rel"].Cwd; got != "${SUB}" {
		t.Errorf("a cwd with ${...} is kept as written until the server starts; got %q", got)
	}
	s := open(t, cfg, &Options{LookupEnv: lookup})

	if d := cmp.Diff([]string{filepath.Join(dir, "sub"), "from env", "$ARG", "xdflty"}, where(t, s, "rel")); d != "" {
		t.Errorf("rel (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{abs}, where(t, s, "abs")); d != "" {
		t.Errorf("abs (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{dir}, where(t, s, "relcmd")); d != "" {
		t.Errorf("relcmd (-want +got):\n%s", d)
	}
	for name, want := range map[string]string{
		"unset":  "args[1]: environment variable NOPE is not set",
		"badcwd": "cwd: environment variable NOPE is not set",
	} {
		st := status(t, s, name)
		if st.State != StateFailed || st.Err == nil || !strings.Contains(st.Err.Error(), want) {
			t.Errorf("server %s: %s %v, want failed with %q", name, st.State, st.Err, want)
		}
	}
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

func TestExpandArgsAndCwdErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{`{"mcpServers": {"a": {"command": "x", "args": ["ok", "${A-B}"]}}}`,
			`mcp.json:1:47: mcpServers.a.args[1]: "${A-B}": "A-B" is not a variable name ([A-Za-z_][A-Za-z0-9_]*)`},
		{`{"mcpServers": {"a": {"command": "x", "cwd": "${DIR"}}}`,
			`mcp.json:1:46: mcpServers.a.cwd: unterminated "${"`},
	} {
		_, err := Parse("mcp.json", []byte(tc.src))
		var ce *configfile.Problem
		if !errors.As(err, &ce) || err.Error() != tc.want {
			t.Errorf("Parse(%s)\n got %v\nwant %s", tc.src, err, tc.want)
		}
	}
	for field, sc := range map[string]*ServerConfig{
		"args[0]": {Command: "x", Args: []string{"${"}},
		"cwd":     {Command: "x", Cwd: "${1}"},
	} {
		err := (&Config{Servers: map[string]*ServerConfig{"a": sc}}).validate()
		var ce *configfile.Problem
		if !errors.As(err, &ce) || ce.Field != "mcpServers.a."+field {
			t.Errorf("Validate(%+v) = %v, want an error on field %s", sc, err, field)
		}
	}
}
