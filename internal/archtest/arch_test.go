package archtest

import (
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/tollgate-dev/tollgate"

// groups are the units of the architecture; a package belongs to the longest
// prefix that names it. Level 0 is the bottom.
var groups = []struct {
	prefix string
	level  int
}{
	{"tool", 0}, {"model", 0},
	// What a program sees of a configuration file that does not load: one
	// problem type, FILE:LINE:COL: field: message.
	{"configfile", 0},
	{"internal", 0},
	// The context keys package tool shares with the agent, so that the
	// agent can answer them from one context value per call.
	{"internal/toolctx", 0},
	// The pooled JSON decoder tool decodes and validates call arguments
	// with, as the providers decode answers.
	{"internal/jsondecode", 0},
	// JSON written without HTML escaping, and random IDs, for model,
	// tool and everything above them.
	{"internal/jsonenc", 0}, {"internal/ids", 0},
	// A call's arguments checked: an object, not too deep, valid against
	// the schema.
	{"internal/argcheck", 0},
	{"toolkit", 1}, {"builtin", 1}, {"hooks", 1}, {"approval", 1},
	// What runs the hooks' chains, for the gate and the agent.
	{"internal/hookrun", 1},
	// The store's vocabulary and interfaces (runs, approvals, leases,
	// tenants, the event log); its adapters are below store/ on level 3.
	{"store", 1},
	// The rule layer's vocabulary and the interface the stores keep it
	// behind, for the hosts that edit and apply it (server, cmd).
	{"internal/layerstore", 1},
	// What every store adapter shares: the state machines, checks,
	// cursors and seals, and the SQL of the SQLite and PostgreSQL stores.
	{"internal/storeimpl", 2},
	// The governed call as a service: decide and complete one call for
	// any caller (the agent loop, the durable engine, agents tollgate
	// does not run).
	{"gate", 2},
	// The policy language (YAML policies, Claude Code permission rules,
	// the shell analysis of internal/shellcmd) over approval's vocabulary,
	// so that the agent and the gate pull no parser.
	{"policy", 2},
	// The rule layer: rules remembered from decisions, per tenant, over
	// the policy language; for the hosts (runs, server, cmd).
	{"internal/layer", 3},
	{"agent", 3},
	// Adapters: level 3 beside the agent; they may use the agent, never the
	// reverse, and never each other.
	{"model/openai", 3}, {"model/anthropic", 3}, {"model/scripted", 3}, {"model/modeltest", 3},
	{"mcptool", 3}, {"hooks/declarative", 3}, {"hooks/claudecode", 3}, {"store/memory", 3}, {"store/sqlite", 3}, {"store/postgres", 3}, {"records", 3},
	{"sandbox", 3}, {"telemetry", 3},
	// The suite every store passes: above the adapters' shared code it
	// checks them with.
	{"store/storetest", 3},
	{"runs", 4},
	// What the hosts of runs share and a program does not call: the run
	// configuration's checks and pins, the builder contract, the stored
	// form of a run, the durable driver, the build cache; runs is its
	// public face.
	{"internal/runcore", 4},
	// The approvals driver: finds and decides the requests of a store for
	// every host (cmd, server); above the store it reads.
	{"approval/inbox", 4},
	// Claude Code governed by the gate: its hook events decided with
	// tollgate's policies (the hook command and the server's http hook).
	{"internal/claudegate", 4},
	// The MCP gateway: an MCP server that governs the calls of MCP
	// clients with the gate, in front of mcptool's upstream servers.
	{"mcpgateway", 4},
	// An MCP OAuth login whose browser comes back to the server's page.
	{"internal/mcplogin", 4},
	// A candidate policy replayed on the calls a store recorded; above the
	// store it reads and the gate whose records it decodes.
	{"internal/replay", 4},
	// A durable engine's adapter: beside runs, whose seam it implements;
	// hosts get it through runs.DurableQueue, wired by cmd.
	{"internal/dbosengine", 4},
	// The approvals page: an html/template shell and its embedded script
	// and style, which server.ApprovalsPage serves; below the server.
	{"internal/web", 4},
	{"server", 5}, // the HTTP API, above the host layer it drives runs with
	// The JSON of the HTTP API (views, requests, problems), which the
	// server and the command share.
	{"internal/serverapi", 5},
	// The wiring of a RunConfig into a governed agent (providers, MCP,
	// YAML hooks, the sandbox): what cmd used to do alone, for every host.
	{"internal/runbuild", 5},
	{"cmd", 6},
	// server.yaml and the tokens file read for `tollgate serve`: above the
	// server whose options they fill, beside the command.
	{"internal/serveconfig", 6},
	// Programs of the repository's own (benchmarks), not shipped: at the
	// top, like cmd, since they wire the providers to the agent.
	{"internal/cmd", 6},
	// The README's programs (internal/readme/library): at the top, like
	// cmd, since they wire the agent, its tools and hooks together.
	{"internal/readme", 6},
}

// allowedSideways lists the imports between groups of one level that the
// architecture names: the toolkit's default content is the builtins, the
// level-0 helpers under internal serve tool and model alike, and tool keeps
// its context keys in internal/toolctx and decodes arguments with
// internal/jsondecode.
var allowedSideways = map[[2]string]bool{
	{"toolkit", "builtin"}:                       true,
	{"internal", "model"}:                        true,
	{"internal", "tool"}:                         true,
	{"internal", "configfile"}:                   true,
	{"tool", "internal/toolctx"}:                 true,
	{"tool", "internal/jsondecode"}:              true,
	{"model", "internal/jsonenc"}:                true,
	{"model", "internal/ids"}:                    true,
	{"internal", "internal/toolctx"}:             true,
	{"tool", "internal/argcheck"}:                true,
	{"internal/argcheck", "internal/jsondecode"}: true,
	{"internal/hookrun", "hooks"}:                true,
	{"server", "internal/serverapi"}:             true,
	{"internal/dbosengine", "runs"}:              true,
	{"internal/dbosengine", "internal/runcore"}:  true,
	{"runs", "internal/runcore"}:                 true,
}

// adapters may import the agent (a level-3 peer) but nothing may import them
// except cmd and their own group.
var adapters = map[string]bool{
	"model/openai": true, "model/anthropic": true, "model/scripted": true, "model/modeltest": true,
	"mcptool": true, "hooks/declarative": true, "hooks/claudecode": true, "store/memory": true, "store/sqlite": true, "store/postgres": true, "records": true,
	"sandbox": true, "telemetry": true,
	"internal/dbosengine": true,
}

func groupOf(pkg string) (string, int) {
	best, level := "", -1
	for _, g := range groups {
		if (pkg == g.prefix || strings.HasPrefix(pkg, g.prefix+"/")) && len(g.prefix) > len(best) {
			best, level = g.prefix, g.level
		}
	}
	return best, level
}

// violations returns every import in edges (package -> its imports, paths
// relative to the module) that breaks the architecture.
func violations(edges map[string][]string) []string {
	var problems []string
	for pkg, imps := range edges {
		from, fromLevel := groupOf(pkg)
		if fromLevel < 0 {
			problems = append(problems, pkg+": not placed in the architecture (add it to groups)")
			continue
		}
		for _, dep := range imps {
			to, toLevel := groupOf(dep)
			switch {
			case dep == "internal/testkit" || dep == "internal/providertest" || dep == "internal/browsertest":
				problems = append(problems, pkg+" imports "+dep+": it is for tests only")
			case to == from:
				// within one group
			case from == "cmd":
				// the only place that wires everything
			case toLevel > fromLevel:
				problems = append(problems, pkg+" imports "+dep+": upward ("+from+" is below "+to+")")
			case toLevel == fromLevel && adapters[to]:
				problems = append(problems, pkg+" imports the adapter "+dep+": only cmd wires adapters")
			case toLevel == fromLevel && adapters[from] && to == "agent":
				// an adapter may use the agent's types
			case toLevel == fromLevel && !allowedSideways[[2]string{from, to}]:
				problems = append(problems, pkg+" imports its sibling "+dep)
			}
		}
	}
	sort.Strings(problems)
	return problems
}

func TestImportDirection(t *testing.T) {
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
			if strings.HasPrefix(imp, module+"/") {
				edges[pkg] = append(edges[pkg], strings.TrimPrefix(imp, module+"/"))
			}
		}
	}
	if len(edges) < 10 {
		t.Fatalf("go list found only %d packages", len(edges))
	}
	for _, p := range violations(edges) {
		t.Error(p)
	}
}

func TestViolationsCatchesBadEdges(t *testing.T) {
	bad := map[string][]string{
		"agent":             {"mcptool"},          // the agent imports an adapter
		"tool":              {"agent"},            // upward
		"hooks":             {"approval"},         // siblings
		"hooks/declarative": {"model/scripted"},   // adapter to adapter
		"newpkg":            nil,                  // unplaced
		"records":           {"internal/testkit"}, // test doubles outside a test
		"builtin":           {"sandbox"},          // a level-1 package reaching an adapter
	}
	good := map[string][]string{
		"toolkit":        {"builtin", "tool", "model"},
		"agent":          {"hooks", "approval", "tool", "model", "internal/proc"},
		"records":        {"agent", "approval"},
		"cmd/tollgate":   {"mcptool", "agent", "hooks/declarative"},
		"internal/retry": {"model"},
	}
	if got := violations(bad); len(got) != 7 {
		t.Errorf("violations(bad) = %q, want 7", got)
	}
	if got := violations(good); len(got) != 0 {
		t.Errorf("violations(good) = %q, want none", got)
	}
}

// The check itself must catch a violation: run it on invented edges.
func TestGroupOf(t *testing.T) {
	for pkg, want := range map[string]string{
		"agent": "agent", "model": "model", "model/openai": "model/openai", "hooks/declarative": "hooks/declarative",
		"hooks": "hooks", "store/sqlite": "store/sqlite", "store": "store", "internal/proc": "internal", "cmd/tollgate": "cmd",
	} {
		if got, _ := groupOf(pkg); got != want {
			t.Errorf("groupOf(%q) = %q, want %q", pkg, got, want)
		}
	}
	if _, l := groupOf("unplaced"); l != -1 {
		t.Error("an unplaced package must be reported")
	}
}
