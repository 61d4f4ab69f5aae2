package serveconfig_test

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/configfile"
	"github.com/tollgate-dev/tollgate/internal/serveconfig"
)

var update = flag.Bool("update", false, "rewrite testdata/every-key.json from the loader")

// A server.yaml that sets every key of an agent loads into the run
// configurations testdata/every-key.json holds (written by the loader that
// decoded an agent's section into a struct of its own and converted it), its
// directory written $DIR. The order of the fields is not compared.
func TestLoadConfigEveryKey(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("testdata/every-key.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := writeFile(t, dir, "server.yaml", string(src))
	c, err := serveconfig.LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.MarshalIndent(map[string]any{"agents": c.Agents, "tenants": c.AgentTenants}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = []byte(strings.ReplaceAll(string(got), dir, "$DIR") + "\n")
	golden := filepath.Join("testdata", "every-key.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if canonical(t, got) != canonical(t, want) {
		t.Errorf("agents:\n%s\nwant:\n%s", got, want)
	}
}

// An agent's claude: key is its run configuration's: its files are
// resolved against the file's directory.
func TestLoadConfigClaude(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "server.yaml", "agents:\n  a:\n    model: script:s\n    workdir: w\n    claude: {files: [c.json], project: true, failModes: [\"*=closed\"], timeout: 5s}\n")
	c, err := serveconfig.LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	cl := c.Agents["a"].Claude
	if cl == nil || len(cl.Files) != 1 || cl.Files[0] != filepath.Join(dir, "c.json") || !cl.Project ||
		len(cl.FailModes) != 1 || cl.FailModes[0] != "*=closed" || time.Duration(cl.Timeout) != 5*time.Second {
		t.Fatalf("claude %+v", cl)
	}
}

// canonical is JSON text with its objects' keys in order: the stored
// names and values matter, not the order of the fields.
func canonical(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// A value of an agent the decoder refuses is reported with the file's other
// problems, each at its position with its field.
func TestLoadConfigAgentValueErrorsTogether(t *testing.T) {
	p := writeFile(t, t.TempDir(), "server.yaml", "leaseTtl: 30\nagents:\n  a:\n    model: script:s\n    workdir: w\n    approvalTtl: 1 hour\n  b:\n    model: gpt\n    workdir: w\n    autonomy: yolo\n  c:\n    model: script:s\n    workdir: w\n    maxTurns: many\n")
	_, err := serveconfig.LoadConfig(p)
	var ce *configfile.Error
	if !errors.As(err, &ce) || len(ce.Problems) != 4 {
		t.Fatalf("LoadConfig: %v, want four problems", err)
	}
	for i, want := range []string{
		p + `:1:11: leaseTtl: want a duration such as 30s or 10m, got "30"`,
		p + `:6:18: agents.a.approvalTtl: want a duration such as 30s or 10m, got "1 hour"`,
		p + `:8:12: agents.b.model: want openai:MODEL, anthropic:MODEL or script:PATH, got "gpt"`,
		p + `:14:15: agents.c.maxTurns: `,
	} {
		if !strings.HasPrefix(ce.Problems[i].Error(), want) {
			t.Errorf("problem %d: %q, want %q...", i, ce.Problems[i].Error(), want)
		}
	}
}
