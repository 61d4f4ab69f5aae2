package archtest

import (
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// composition lists the groups that wire adapters together into a program:
// the command, the repository's own programs, and the building of a run's
// agent from its configuration. No other package imports an adapter,
// whatever its level; a test may (tests are not in the import graph
// checked here).
var composition = map[string]bool{
	"cmd": true, "internal/cmd": true, "internal/readme": true,
	"internal/runbuild": true,
}

// adapterUses lists, with the reason, the imports of an adapter by a
// package outside the composition layers that the architecture accepts.
var adapterUses = map[[2]string]string{
	{"approval/inbox", "mcptool"}:               "an answer to an MCP server's elicitation is checked against its form (mcptool.ElicitAnswer)",
	{"internal/claudegate", "hooks/claudecode"}: "Claude Code's hook events are the dialect claudegate speaks",
	{"internal/mcplogin", "mcptool"}:            "a tenant's login on the page runs mcptool's OAuth client for the server it names",
	{"mcpgateway", "mcptool"}:                   "the gateway serves the tools of mcptool's upstream servers",
	{"mcpgateway", "telemetry"}:                 "the gateway's spans use telemetry's tracer",
	{"server", "mcptool"}:                       "the server runs a tenant's MCP logins and keeps their tokens (mcptool)",
	{"internal/serveconfig", "sandbox"}:         "server.yaml's hooksSandbox: is checked against the sandbox's modes (sandbox.ParseMode), the one list of them",
}

// adapterViolations returns every import in edges of an adapter by a
// package of another group that neither composes a program nor is listed
// in adapterUses: on any level, not only the adapter's own.
func adapterViolations(edges map[string][]string) []string {
	var problems []string
	for pkg, imps := range edges {
		from, _ := groupOf(pkg)
		for _, dep := range imps {
			to, _ := groupOf(dep)
			if !adapters[to] || to == from || composition[from] {
				continue
			}
			if _, ok := adapterUses[[2]string{from, to}]; ok {
				continue
			}
			problems = append(problems, pkg+" imports the adapter "+dep+": only the composition layers (cmd, internal/runbuild) wire adapters")
		}
	}
	sort.Strings(problems)
	return problems
}

// importEdges returns the module's import graph, without tests: package
// -> the module's packages it imports, paths relative to the module.
func importEdges(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	edges := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(strings.TrimPrefix(fields[0], module), "/")
		edges[pkg] = nil
		for _, imp := range fields[1:] {
			if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
				edges[pkg] = append(edges[pkg], rel)
			}
		}
	}
	if len(edges) < 10 {
		t.Fatalf("go list found only %d packages", len(edges))
	}
	return edges
}

func TestAdapterImports(t *testing.T) {
	for _, p := range adapterViolations(importEdges(t)) {
		t.Error(p)
	}
}

// The check itself must catch a violation: run it on invented edges.
func TestAdapterViolationsCatchesBadEdges(t *testing.T) {
	bad := map[string][]string{
		"runs":            {"store/sqlite"},   // a host reaching a store adapter above its level
		"server":          {"model/openai"},   // the HTTP handler choosing a provider
		"approval/replay": {"store/postgres"}, // a level-4 reader of a store
		"gate":            {"records"},        // upward too, and an adapter
	}
	good := map[string][]string{
		"cmd/tollgate":      {"store/sqlite", "store/postgres", "model/openai"},
		"internal/runbuild": {"model/openai", "sandbox", "records"},
		"store/sqlite":      {"store", "internal/storeimpl"},
		"mcpgateway":        {"mcptool"},
		"runs":              {"store", "agent", "gate"},
		"internal/cmd/foo":  {"model/anthropic"},
	}
	if got := adapterViolations(bad); len(got) != 4 {
		t.Errorf("adapterViolations(bad) = %q, want 4", got)
	}
	if got := adapterViolations(good); len(got) != 0 {
		t.Errorf("adapterViolations(good) = %q, want none", got)
	}
}
