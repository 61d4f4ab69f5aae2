package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// tgMain runs the command in this process with empty stdin.
func tgMain(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// tgMainIn runs the command in this process with empty stdin, in the
// working directory dir ("": the process's) and with the variables of vars
// in place of the process's (one vars does not name is the process's):
// tests that give their own need not change the process's, and run in
// parallel.
func tgMainIn(t *testing.T, dir string, vars map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = mainEnv(context.Background(), args, &cliEnv{stdin: strings.NewReader(""), stdout: &out, stderr: &errb,
		dir: dir, getenv: testEnv(vars)})
	return code, out.String(), errb.String()
}

// testEnv reads vars, and the process's environment for a variable vars
// does not name.
func testEnv(vars map[string]string) func(string) string {
	return func(name string) string {
		if v, ok := vars[name]; ok {
			return v
		}
		return os.Getenv(name)
	}
}

func TestDefaultStateDir(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, override, xdg, home, want string
	}{
		{"override", "/srv/tollgate-state", "/xdg", "/home/u", "/srv/tollgate-state"},
		{"xdg", "", "/xdg", "/home/u", "/xdg/tollgate"},
		{"relative xdg is ignored", "", "rel/xdg", "/home/u", "/home/u/.local/state/tollgate"},
		{"home", "", "", "/home/u", "/home/u/.local/state/tollgate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := defaultStateDir(&cliEnv{getenv: testEnv(map[string]string{envStateDir: tc.override, "XDG_STATE_HOME": tc.xdg, "HOME": tc.home})})
			if err != nil || got != tc.want {
				t.Errorf("defaultStateDir() = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// A state directory inside the workspace is refused before any call runs,
// however it is named (a flag, the variable, a link to the workspace).
func TestStateDirInsideWorkspaceRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.Mkdir(ws, 0o755)
	os.Symlink(ws, filepath.Join(dir, "link"))
	script := apWrite(t, dir, "s.yaml", "turns:\n  - toolCalls: [{name: write, args: {path: side.txt, content: x}}]\n  - text: done\n")
	for _, tc := range []struct {
		name, flag, env string
	}{
		{"flag", filepath.Join(ws, "state"), ""},
		{"workspace itself", ws, ""},
		{"variable", "", filepath.Join(ws, ".tollgate")},
		{"through a link", filepath.Join(dir, "link", "state"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vars := map[string]string{}
			if tc.env != "" {
				vars[envStateDir] = tc.env
			}
			args := []string{"run", "--model", "script:" + script, "--workdir", ws}
			if tc.flag != "" {
				args = append(args, "--state-dir", tc.flag)
			}
			code, out, errOut := tgMainIn(t, "", vars, append(args, "x")...)
			if code != exitUsage || !strings.Contains(errOut, "is inside the workspace") {
				t.Fatalf("exit %d\n%s%s", code, out, errOut)
			}
			if _, err := os.Stat(filepath.Join(ws, "side.txt")); err == nil {
				t.Fatal("a call ran")
			}
			for _, p := range []string{filepath.Join(ws, "state"), filepath.Join(ws, ".tollgate")} {
				if _, err := os.Stat(p); err == nil {
					t.Fatalf("%s was created", p)
				}
			}
		})
	}
}

// The commands that read or answer never create a store: a mistyped state
// directory is an error naming it (exit 1), and it is not created.
func TestReadOnlyCommandsNeverCreateStore(t *testing.T) {
	t.Parallel()
	typo := filepath.Join(t.TempDir(), "stat-dir")
	for _, args := range [][]string{
		{"approvals", "list"},
		{"approvals", "list", "--json"},
		{"approvals", "show", "req_1"},
		{"approvals", "approve", "req_1"},
		{"approvals", "deny", "req_1"},
		{"approvals", "answer", "req_1", "yes"},
		{"runs", "list"},
		{"runs", "show", "run_1"},
		{"runs", "cancel", "run_1"},
		{"runs", "prune"},
		{"resume", "run_1"},
	} {
		code, out, errOut := tgMain(t, append(args, "--state-dir", typo)...)
		if code != exitError || !strings.Contains(errOut, "no store in "+typo) {
			t.Errorf("%q: exit %d, want 1 naming %s\n%s%s", args, code, typo, out, errOut)
		}
		if _, err := os.Stat(typo); err == nil {
			t.Fatalf("%q created %s", args, typo)
		}
	}
}

// tollgate runs list|show|cancel|prune on a halted run, and the --json
// listings.
func TestRunsCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.Mkdir(ws, 0o755)
	state := filepath.Join(dir, "state")
	script := apWrite(t, dir, "s.yaml", "turns:\n  - toolCalls: [{name: bash, id: gated, args: {command: \"echo ran >> count.txt\"}}]\n  - text: done\n")
	policy := apWrite(t, dir, "p.yaml", "rules:\n  - id: ask-bash\n    tool: bash\n    decision: ask\n")
	code, out, errOut := tgMain(t, "run", "--model", "script:"+script, "--workdir", ws, "--policy", policy, "--state-dir", state, "x")
	if code != exitPending {
		t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
	}
	runID := regexp.MustCompile(`stored run (run_[0-9a-f]+)`).FindStringSubmatch(out)[1]

	code, out, _ = tgMain(t, "runs", "list", "--state-dir", state)
	if code != 0 || !regexp.MustCompile(runID+`\s+pending\s`).MatchString(out) || !strings.Contains(out, ws) {
		t.Fatalf("runs list: exit %d\n%s", code, out)
	}
	var list []runSummary
	code, out, _ = tgMain(t, "runs", "list", "--json", "--state-dir", state)
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || len(list) != 1 {
		t.Fatalf("runs list --json: exit %d, %v\n%s", code, err, out)
	}
	if r := list[0]; r.ID != runID || r.Status != store.RunPending || r.Workdir != ws || r.Model != "script:"+script || !strings.HasPrefix(r.Owner, "person:") {
		t.Errorf("runs list --json: %+v", r)
	}
	code, out, _ = tgMain(t, "runs", "list", "--json", "--status", "done", "--state-dir", state)
	if code != 0 || strings.TrimSpace(out) != "[]" {
		t.Errorf("runs list --status done: exit %d\n%s", code, out)
	}
	if code, _, errOut := tgMain(t, "runs", "list", "--status", "finished", "--state-dir", state); code != exitUsage || !strings.Contains(errOut, `"finished"`) {
		t.Errorf("runs list --status finished: exit %d\n%s", code, errOut)
	}

	var as []store.Approval
	code, out, _ = tgMain(t, "approvals", "list", "--json", "--state-dir", state)
	if err := json.Unmarshal([]byte(out), &as); code != 0 || err != nil || len(as) != 1 || as[0].RunID != runID || as[0].Tool != "bash" || as[0].Status != store.StatusPending {
		t.Fatalf("approvals list --json: exit %d, %v\n%s", code, err, out)
	}
	// The digest is argsDigest, as in the HTTP API; show is text unless --json.
	var raw []map[string]any
	if err := json.Unmarshal([]byte(out), &raw); err != nil || len(raw) != 1 || !strings.HasPrefix(fmt.Sprint(raw[0]["argsDigest"]), "sha256:") || raw[0]["digest"] != nil {
		t.Errorf("approvals list --json does not name the digest argsDigest (%v):\n%s", err, out)
	}
	// The request's data, nested, names it so too, and nothing says digest.
	req, _ := raw[0]["request"].(map[string]any)
	if data, _ := req["data"].(map[string]any); data["argsDigest"] != raw[0]["argsDigest"] || strings.Contains(out, `"digest"`) {
		t.Errorf("approvals list --json: the request's data names its digest otherwise:\n%s", out)
	}
	code, out, _ = tgMain(t, "approvals", "show", as[0].ID, "--state-dir", state)
	for _, want := range []string{"request " + as[0].ID + " (approval): pending\n", "tool: bash\n", "argsDigest: sha256:"} {
		if code != 0 || !strings.Contains(out, want) || strings.Contains(out, `"id":`) {
			t.Errorf("approvals show: exit %d, output lacks %q or has JSON:\n%s", code, want, out)
		}
	}
	code, out, _ = tgMain(t, "approvals", "show", "--json", as[0].ID, "--state-dir", state)
	if code != 0 || !strings.Contains(out, `"argsDigest": "sha256:`) || !strings.Contains(out, `"id": "`+as[0].ID+`"`) {
		t.Errorf("approvals show --json: exit %d\n%s", code, out)
	}

	var d runDetail
	code, out, _ = tgMain(t, "runs", "show", "--json", runID, "--state-dir", state)
	if err := json.Unmarshal([]byte(out), &d); code != 0 || err != nil {
		t.Fatalf("runs show: exit %d, %v\n%s", code, err, out)
	}
	var types []string
	for _, e := range d.Events {
		types = append(types, e.Type)
	}
	if d.Status != store.RunPending || !strings.Contains(string(d.Config), ws) || d.State != nil ||
		!regexp.MustCompile(`^run\.started .*tool\.call .*approval\.requested run\.halted$`).MatchString(strings.Join(types, " ")) {
		t.Errorf("runs show: status %s, events %q\n%s", d.Status, types, out)
	}
	// Without --json: a summary for people, the JSON left out.
	code, out, _ = tgMain(t, "runs", "show", runID, "--state-dir", state)
	for _, want := range []string{"run " + runID + ": pending\n", "workdir: " + ws + "\n", "waits for: " + as[0].ID + " (approval)", "tollgate runs show --json " + runID} {
		if code != 0 || !strings.Contains(out, want) || strings.Contains(out, `"events"`) {
			t.Errorf("runs show: exit %d, output lacks %q or has the JSON:\n%s", code, want, out)
		}
	}

	if code, out, errOut := tgMain(t, "runs", "cancel", runID, "--state-dir", state); code != 0 || !strings.Contains(out, "cancelled run "+runID) {
		t.Fatalf("runs cancel: exit %d\n%s%s", code, out, errOut)
	}
	// Its request was denied with it: a late approval is refused, saying why.
	if code, out, errOut := tgMain(t, "approvals", "approve", as[0].ID, "--state-dir", state); code != exitError || !strings.Contains(errOut, "is denied (by person:") || !strings.Contains(errOut, ": the run was cancelled)") {
		t.Fatalf("approve: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, _ := tgMain(t, "approvals", "list", "--state-dir", state); code != 0 || strings.Contains(out, as[0].ID) {
		t.Fatalf("approvals list still shows the cancelled run's request: exit %d\n%s", code, out)
	}
	if code, out, errOut := tgMain(t, "resume", runID, "--state-dir", state); code != exitError || !strings.Contains(errOut, "cancelled") {
		t.Fatalf("resume of a cancelled run: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(ws, "count.txt")); err == nil {
		t.Fatal("the call of a cancelled run ran")
	}
	if code, out, errOut := tgMain(t, "runs", "cancel", runID, "--state-dir", state); code != exitError {
		t.Errorf("cancelling twice: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, _ := tgMain(t, "runs", "prune", "--older-than", "1h", "--state-dir", state); code != 0 || !strings.Contains(out, "deleted 0 run(s)") {
		t.Errorf("runs prune --older-than 1h: exit %d\n%s", code, out)
	}
	if code, out, _ := tgMain(t, "runs", "prune", "--state-dir", state); code != 0 || !strings.Contains(out, "deleted 1 run(s)") {
		t.Errorf("runs prune: exit %d\n%s", code, out)
	}
	if code, out, _ := tgMain(t, "runs", "list", "--json", "--state-dir", state); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Errorf("runs list after prune: exit %d\n%s", code, out)
	}
}

func TestToolsJSON(t *testing.T) {
	t.Parallel()
	code, out, errOut := tgMain(t, "tools", "--json", "--workdir", t.TempDir())
	var doc struct {
		Tools []tool.Spec `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil {
		t.Fatalf("exit %d, %v\n%s%s", code, err, out, errOut)
	}
	specs := doc.Tools
	byName := map[string]tool.Spec{}
	for _, s := range specs {
		byName[s.Name] = s
	}
	if s, ok := byName["read"]; !ok || s.Hints == nil || !s.Hints.ReadOnly {
		t.Errorf("read: %+v", s)
	}
	if s, ok := byName["bash"]; !ok || s.Hints == nil || s.Hints.ReadOnly {
		t.Errorf("bash: %+v", s)
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	code, out, _ := tgMain(t, "--version")
	if code != 0 || !strings.HasPrefix(out, "tollgate ") || !strings.Contains(out, runtime.Version()) {
		t.Errorf("--version: exit %d, %q", code, out)
	}
}
