//go:build linux

package sandbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/sandbox"
)

// The differential fuzzer of the exec supervisor and the shell analysis:
// each script runs with bash -c in the sandbox, with the program rm denied
// (sandbox.Policy.DenyExec) and victim files in its workspace, and is
// judged by a policy whose rule denies rm. A victim that disappears means
// the denied program ran: a failure. A script in which rm was refused
// (the supervisor's log on the command's standard error, or a program's
// report that Landlock refused it rm's file) that the analysis allows is
// an analysis bypass: reported, and a failure with -bypass-fails. The scripts only delete with rm: other ways of deleting
// (find -delete, unlink) are not the program rm and are left out.
//
// go test runs the corpus (testdata/fuzz/FuzzDenyExec) and
// TestDenyExecDifferential -mutations mutated scripts (default 200);
// go test -run '^$' -fuzz FuzzDenyExec runs as long as asked.

var (
	bypassFails = flag.Bool("bypass-fails", false, "an analysis bypass found by the exec fuzzer fails the test")
	mutations   = flag.Int("mutations", 200, "mutated scripts TestDenyExecDifferential runs beside the corpus")
)

// victims are the files the scripts delete.
var victims = []string{"a", "b", "f", "v", "v1", "v2", "v3", "x", "y", "victim"}

// refusal is what the supervisor writes when it refuses an exec.
const refusal = "tollgate sandbox: refused to execute"

// landlockRefusal matches a program's report that Landlock refused it
// rm's file (EACCES on an exec or an open of /usr/bin/rm): rm's own file
// is not even readable, so most spellings stop there, before the
// supervisor.
var landlockRefusal = regexp.MustCompile(`\brm\b[^\n]*Permission denied|Permission denied[^\n]*\brm\b`)

// execFuzz runs scripts in the sandbox and judges them.
type execFuzz struct {
	sb  *sandbox.Sandbox
	pol *policy.Policy
	// canary is a writable directory first on the scripts' PATH that
	// holds a copy of rm: Landlock leaves it executable, so that an exec
	// of rm by name meets the supervisor, which says so, rather than a
	// Landlock refusal that some programs report without rm's name, or
	// not at all (perl's exec).
	canary string
}

func newExecFuzz(t testing.TB) *execFuzz {
	t.Helper()
	sb, err := sandbox.New(&sandbox.Options{Helper: buildHelper(t)})
	if err != nil {
		t.Fatal(err)
	}
	pol, _, err := policy.ParsePolicy("fuzz.yaml", strings.NewReader(`rules:
  - {id: no-rm, tool: bash, command: {program: rm}, decision: deny, reason: no rm}
`))
	if err != nil {
		t.Fatal(err)
	}
	canary := t.TempDir()
	rm, err := os.ReadFile("/usr/bin/rm")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(canary, "rm"), rm, 0o755); err != nil {
		t.Fatal(err)
	}
	return &execFuzz{sb: sb, pol: pol, canary: canary}
}

// buildHelper builds testdata/helper, a helper without the race detector
// (its start-up, paid twice a script, would make the run ten times
// longer), and returns its path.
func buildHelper(t testing.TB) string {
	t.Helper()
	gotool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("building the helper needs the go command on PATH (go test puts it there): %v", err)
	}
	out := filepath.Join(t.TempDir(), "helper")
	cmd := exec.Command(gotool, "build", "-o", out, "./testdata/helper")
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the helper: %v\n%s", err, b)
	}
	return out
}

// outcome is what one script did.
type outcome struct {
	verdict string // the analysis's decision, or "panic: ..."
	refused bool   // the supervisor refused an exec
	deleted []string
	output  string
}

// run runs script once in a fresh workspace.
func (f *execFuzz) run(t testing.TB, script string) outcome {
	t.Helper()
	var o outcome
	o.verdict = f.judge(script)
	ws := t.TempDir()
	for _, v := range victims {
		if err := os.WriteFile(filepath.Join(ws, v), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The deadline only stops a script that waits forever; nothing is
	// judged by time.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = ws
	cmd.Env = []string{"PATH=" + f.canary + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + ws, "LC_ALL=C"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	p := sandbox.Policy{Mode: sandbox.Workspace, Workspace: ws, Write: []string{f.canary}, DenyExec: []string{"rm"}}
	if _, err := f.sb.Wrap(cmd, p); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Run() // a failing script is fine
	o.output = out.String()
	o.refused = strings.Contains(o.output, refusal) || landlockRefusal.MatchString(o.output)
	for _, v := range victims {
		if _, err := os.Lstat(filepath.Join(ws, v)); err != nil {
			o.deleted = append(o.deleted, v)
		}
	}
	return o
}

// judge returns the analysis's decision on script as the bash tool's
// command.
func (f *execFuzz) judge(script string) (verdict string) {
	defer func() {
		if r := recover(); r != nil {
			verdict = fmt.Sprint("panic: ", r)
		}
	}()
	args, _ := json.Marshal(map[string]string{"command": script})
	v, err := f.pol.Authorize(context.Background(), approval.Call{Tool: "bash", Args: args})
	if err != nil {
		return "error: " + err.Error()
	}
	return string(v.Decision)
}

// check runs script and fails t when a victim was deleted; it returns
// whether the script is an analysis bypass.
func (f *execFuzz) check(t testing.TB, script string) (bypass bool) {
	t.Helper()
	o := f.run(t, script)
	if len(o.deleted) > 0 {
		t.Errorf("the denied program ran: %q deleted %v (analysis: %s)\n%s", script, o.deleted, o.verdict, o.output)
	}
	if o.refused && o.verdict != string(approval.Deny) && o.verdict != string(approval.Ask) {
		msg := fmt.Sprintf("analysis bypass: %q is %s by the analysis and tries to run rm (refused)", script, o.verdict)
		if *bypassFails {
			t.Error(msg)
		} else {
			t.Log(msg)
		}
		return true
	}
	return false
}

func FuzzDenyExec(f *testing.F) {
	fz := newExecFuzz(f)
	f.Fuzz(func(t *testing.T, script string) {
		if len(script) <= 4000 {
			fz.check(t, script)
		}
	})
}

// TestDenyExecDifferential runs mutations of the corpus (a fixed random
// sequence: the same scripts every run).
func TestDenyExecDifferential(t *testing.T) {
	fz := newExecFuzz(t)
	seeds := corpus(t)
	rng := rand.New(rand.NewPCG(23, 3))
	var scripts []string // the corpus itself runs in FuzzDenyExec
	for range *mutations {
		scripts = append(scripts, mutate(rng, seeds))
	}
	var bypasses, refused int
	for _, s := range scripts {
		o := fz.run(t, s)
		if len(o.deleted) > 0 {
			t.Errorf("the denied program ran: %q deleted %v (analysis: %s)\n%s", s, o.deleted, o.verdict, o.output)
		}
		if o.refused {
			refused++
		}
		if o.refused && o.verdict != string(approval.Deny) && o.verdict != string(approval.Ask) {
			bypasses++
			msg := fmt.Sprintf("analysis bypass: %q is %s by the analysis and tries to run rm (refused)", s, o.verdict)
			if *bypassFails {
				t.Error(msg)
			} else {
				t.Log(msg)
			}
		}
	}
	t.Logf("%d mutations of %d corpus scripts: %d refused at exec, %d of those allowed by the analysis", len(scripts), len(seeds), refused, bypasses)
	if refused == 0 {
		t.Error("no script executed rm: the corpus or the mutations lost their point")
	}
}

// corpus reads the seed scripts of testdata/fuzz/FuzzDenyExec (the format
// of go test's fuzz corpus: a header line and one string value).
func corpus(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzDenyExec", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	var out []string
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		_, val, ok := strings.Cut(strings.TrimSpace(string(b)), "\n")
		inner, ok2 := strings.CutPrefix(val, "string(")
		inner, ok3 := strings.CutSuffix(inner, ")")
		s, err := strconv.Unquote(inner)
		if !ok || !ok2 || !ok3 || err != nil {
			t.Fatalf("%s: not a fuzz corpus file of one string", name)
		}
		out = append(out, s)
	}
	return out
}

// Spellings of rm, wrappers and shells the mutations combine.
var (
	rmSpellings = []string{"/bin/rm", "/usr/bin/rm", `\rm`, `"rm"`, `'r'm`, `r""m`, `r\m`, `$'\x72m'`, "${R:-rm}",
		"$(echo rm)", "`echo rm`", "command rm", "exec -a ls rm", "env rm", "r=rm; $r",
		"cp /usr/bin/rm c && ./c", "ln -sf /usr/bin/rm l && ./l", "cp /usr/bin/rm \"$TMPDIR/t\" && \"$TMPDIR/t\""}
	prefixes = []string{"env", "env -i PATH=/usr/bin", "nice -n 1", "timeout 20", "nohup", "setsid -w", "stdbuf -o0",
		"command", "prlimit --nofile=256", "setpriv", "nsenter --", "strace -f -o /dev/null", "fakeroot",
		"toybox", "busybox", "ionice -c 3", "taskset -c 0", "chrt -o 0", "unshare", "systemd-run --pipe --wait", "time"}
	shells = []string{"bash -c %s", "sh -c %s", "eval %s", "bash <<< %s", "echo %s | bash", "bash -s x <<< %s",
		"script -qec %s /dev/null", "source <(echo %s)", "xargs -0 sh -c %s _ < /dev/null", "flock /tmp -c %s",
		"su -c %s root", "perl -e 'exec \"bash\", \"-c\", $ARGV[0]' %s",
		"python3 -c 'import os,sys; os.execvp(\"bash\", [\"bash\", \"-c\", sys.argv[1]])' %s"}
	compounds = []string{"( %s )", "{ %s; }", "f() { %s; }; f", "true && %s", "false || %s", "%s & wait",
		"x=$( %s )", "if true; then %s; fi", "for i in 1; do %s; done", "echo $( %s )", "cat <( %s )", "trap %q EXIT"}
)

// mutate returns a script made from one or two seeds and one to three
// changes: rm respelled, a wrapper before it, a shell or compound around
// it, or two scripts joined.
func mutate(rng *rand.Rand, seeds []string) string {
	s := seeds[rng.IntN(len(seeds))]
	for range 1 + rng.IntN(3) {
		switch rng.IntN(5) {
		case 0:
			if i := strings.Index(s, "rm "); i >= 0 {
				s = s[:i] + rmSpellings[rng.IntN(len(rmSpellings))] + s[i+2:]
			}
		case 1:
			s = prefixes[rng.IntN(len(prefixes))] + " " + s
		case 2:
			s = strings.ReplaceAll(shells[rng.IntN(len(shells))], "%s", shellQuote(s))
		case 3:
			c := compounds[rng.IntN(len(compounds))]
			if strings.Contains(c, "%q") {
				s = strings.ReplaceAll(c, "%q", shellQuote(s))
			} else {
				s = strings.ReplaceAll(c, "%s", s)
			}
		case 4:
			s = s + "; " + seeds[rng.IntN(len(seeds))]
		}
	}
	return s
}

// shellQuote quotes s as one word for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
