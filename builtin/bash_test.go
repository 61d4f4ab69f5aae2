package builtin_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tollgate-dev/tollgate/builtin"
)

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err == nil {
		// The state follows the command name, which is in parentheses.
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
			return s[i+2] != 'Z'
		}
		return true
	}
	if _, statErr := os.Stat("/proc/self/stat"); statErr == nil {
		return false // /proc works and pid is gone
	}
	return syscall.Kill(pid, 0) == nil
}

// waitDead waits up to 30 s for pid to be gone.
func waitDead(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if !alive(pid) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	t.Errorf("process %d is still alive", pid)
}

func readPID(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	return pid
}

func TestBash(t *testing.T) {
	_, tools := workspace(t, map[string]string{"sub/f.txt": "content\n"}, nil)
	tests := []struct {
		name string
		args map[string]any
		want outcome
		exit int
	}{
		{"stdout", map[string]any{"command": "echo hello"}, outcome{"hello\n", false}, 0},
		{"stdout and stderr together", map[string]any{"command": "echo out; echo err >&2"}, outcome{"out\nerr\n", false}, 0},
		{"no output", map[string]any{"command": "true"}, outcome{"[no output]", false}, 0},
		{"non-zero exit", map[string]any{"command": "echo failing; exit 3"}, outcome{"failing\n[exit code 3]", true}, 3},
		{"non-zero exit without output", map[string]any{"command": "false"}, outcome{"[exit code 1]", true}, 1},
		{"workdir", map[string]any{"command": "cat f.txt", "workdir": "sub"}, outcome{"content\n", false}, 0},
		{"stdin is empty", map[string]any{"command": "cat; echo done"}, outcome{"done\n", false}, 0},
		{"killed by a signal", map[string]any{"command": "kill -9 $$"}, outcome{"[killed by signal killed]", true}, -1},
		{"empty command", map[string]any{"command": "  "}, outcome{"command must not be empty", true}, 0},
		{"missing workdir", map[string]any{"command": "pwd", "workdir": "nope"}, outcome{"nope: no such file or directory", true}, 0},
		{"workdir is a file", map[string]any{"command": "pwd", "workdir": "sub/f.txt"}, outcome{"workdir sub/f.txt is not a directory", true}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, tools, "bash", tt.args)
			if diff := cmp.Diff(tt.want, got(r)); diff != "" {
				t.Errorf("bash(%v) (-want +got):\n%s", tt.args, diff)
			}
			if r.Metadata != nil && r.Metadata["exitCode"] != tt.exit {
				t.Errorf("exitCode = %v, want %d", r.Metadata["exitCode"], tt.exit)
			}
		})
	}
}

func TestBashTimeoutKillsGrandchildren(t *testing.T) {
	root, tools := workspace(t, nil, nil)
	start := time.Now()
	r := call(t, tools, "bash", map[string]any{
		"command": "echo started; sleep 300 & echo $! > bg.pid; sleep 300",
		"timeout": 300,
	})
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("call took %v, want about the 300 ms timeout", elapsed)
	}
	want := outcome{"started\n[timed out after 300ms; the process group was killed]", true}
	if diff := cmp.Diff(want, got(r)); diff != "" {
		t.Errorf("bash (-want +got):\n%s", diff)
	}
	if r.Metadata["timedOut"] != true {
		t.Errorf("metadata = %v, want timedOut", r.Metadata)
	}
	waitDead(t, readPID(t, filepath.Join(root, "bg.pid")))
}

func TestBashKillsLeftoversAfterExit(t *testing.T) {
	root, tools := workspace(t, nil, nil)
	start := time.Now()
	// The background sleep keeps the output pipe open; the call must not wait for it.
	r := call(t, tools, "bash", map[string]any{"command": "sleep 300 & echo $! > bg.pid; echo done"})
	if elapsed := time.Since(start); elapsed > 1500*time.Millisecond {
		t.Errorf("call took %v; it waited for the background process", elapsed)
	}
	if diff := cmp.Diff(outcome{"done\n", false}, got(r)); diff != "" {
		t.Errorf("bash (-want +got):\n%s", diff)
	}
	waitDead(t, readPID(t, filepath.Join(root, "bg.pid")))
}

func TestBashEscapedProcessDoesNotBlock(t *testing.T) {
	root, tools := workspace(t, nil, nil)
	start := time.Now()
	// setsid puts the sleeper in a session of its own, out of reach of the
	// group kill; it holds the output pipe for 300 s. The shell exits only
	// once the sleeper has its session (it writes its PID then), so that
	// the group kill cannot reach it first. The call gives up on the pipe
	// after drainGrace (2 s): a minute tells that apart from waiting for the
	// sleeper, on a machine however loaded.
	r := call(t, tools, "bash", map[string]any{"command": `setsid sh -c 'echo $$ > esc.pid; exec sleep 300' & until [ -s esc.pid ]; do sleep 0.01; done; echo done`})
	elapsed := time.Since(start)
	pid := readPID(t, filepath.Join(root, "esc.pid"))
	escaped := alive(pid)
	_ = syscall.Kill(pid, syscall.SIGKILL)
	if !escaped {
		t.Fatal("the sleeper did not outlive the call: nothing held the pipe")
	}
	if elapsed > time.Minute {
		t.Errorf("call took %v; it waited for the escaped process", elapsed)
	}
	if diff := cmp.Diff(outcome{"done\n", false}, got(r)); diff != "" {
		t.Errorf("bash (-want +got):\n%s", diff)
	}
}

func TestBashCancellation(t *testing.T) {
	root, tools := workspace(t, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cancelled := make(chan time.Time, 1)
	go func() {
		// Cancelled once the command runs, its background child started.
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if b, err := os.ReadFile(filepath.Join(root, "bg.pid")); err == nil && strings.TrimSpace(string(b)) != "" {
				break
			}
		}
		cancelled <- time.Now()
		cancel()
	}()
	r := callCtx(t, ctx, tools, "bash", map[string]any{"command": "sleep 300 & echo $! > bg.pid; sleep 300"})
	if elapsed := time.Since(<-cancelled); elapsed > time.Minute {
		t.Errorf("call took %v after cancellation: it waited for the command", elapsed)
	}
	if !r.IsError || !strings.Contains(r.Output, "[cancelled after") || r.Metadata["cancelled"] != true {
		t.Errorf("bash = %+v, want a cancellation error", r)
	}
	waitDead(t, readPID(t, filepath.Join(root, "bg.pid")))
}

func TestBashOutputCap(t *testing.T) {
	_, tools := workspace(t, nil, &builtin.Options{MaxOutputBytes: 1000})
	r := call(t, tools, "bash", map[string]any{"command": "head -c 5000 /dev/zero | tr '\\0' a"})
	want := outcome{strings.Repeat("a", 1000) + "\n[output truncated: 4000 bytes dropped]", false}
	if diff := cmp.Diff(want, got(r)); diff != "" {
		t.Errorf("bash (-want +got):\n%s", diff)
	}
	if r.Metadata["truncated"] != true || r.Metadata["droppedBytes"] != int64(4000) {
		t.Errorf("metadata = %v", r.Metadata)
	}
}

func TestBashLargeOutputDoesNotDeadlock(t *testing.T) {
	_, tools := workspace(t, nil, nil)
	const total = 20 << 20
	r := call(t, tools, "bash", map[string]any{"command": "head -c " + strconv.Itoa(total) + " /dev/zero | tr '\\0' b; echo tail >&2; exit 2"})
	kept := 64 << 10 // the default MaxOutputBytes
	want := strings.Repeat("b", kept) + "\n[output truncated: " + strconv.Itoa(total+5-kept) + " bytes dropped]\n[exit code 2]"
	if diff := cmp.Diff(outcome{want, true}, got(r)); diff != "" {
		t.Errorf("bash (-want +got):\n%s", diff)
	}
}

func TestBashCutsNoRuneInTwo(t *testing.T) {
	_, tools := workspace(t, nil, &builtin.Options{MaxOutputBytes: 5})
	r := call(t, tools, "bash", map[string]any{"command": "printf 'ééé'"}) // 6 bytes
	if diff := cmp.Diff(outcome{"éé\n[output truncated: 2 bytes dropped]", false}, got(r)); diff != "" {
		t.Errorf("bash (-want +got):\n%s", diff)
	}
}

func TestBashTimeoutBounds(t *testing.T) {
	_, tools := workspace(t, nil, &builtin.Options{BashTimeout: 100 * time.Millisecond, MaxBashTimeout: time.Second})
	for _, timeout := range []int{0, -5, 1001} {
		r := call(t, tools, "bash", map[string]any{"command": "true", "timeout": timeout})
		if !r.IsError || !strings.Contains(r.Output, "invalid arguments") {
			t.Errorf("timeout %d: %+v, want a validation error", timeout, r)
		}
	}
	// Without a timeout the default (100 ms) applies.
	r := call(t, tools, "bash", map[string]any{"command": "sleep 5"})
	if diff := cmp.Diff(outcome{"[timed out after 100ms; the process group was killed]", true}, got(r)); diff != "" {
		t.Errorf("bash (-want +got):\n%s", diff)
	}
}

func TestBashEnv(t *testing.T) {
	_, tools := workspace(t, nil, &builtin.Options{Env: []string{"GREETING=hi", "PATH=" + os.Getenv("PATH")}})
	r := call(t, tools, "bash", map[string]any{"command": "echo $GREETING ${HOME:-unset}"})
	if diff := cmp.Diff(outcome{"hi unset\n", false}, got(r)); diff != "" {
		t.Errorf("bash (-want +got):\n%s", diff)
	}
}

// Without Options.Env, bash gets the process's environment scrubbed to the
// allowlist: a provider key or a TOLLGATE_* variable reaches it only when
// PassEnv names it.
func TestBashScrubbedEnv(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test-secret")
	t.Setenv("TOLLGATE_INTERNAL", "internal")
	t.Setenv("LANG", "C.UTF-8")
	cmd := map[string]any{"command": `echo "key=$OPENAI_API_KEY tg=$TOLLGATE_INTERNAL lang=$LANG"`}
	_, tools := workspace(t, nil, nil)
	if diff := cmp.Diff(outcome{"key= tg= lang=C.UTF-8\n", false}, got(call(t, tools, "bash", cmd))); diff != "" {
		t.Errorf("scrubbed (-want +got):\n%s", diff)
	}
	_, tools = workspace(t, nil, &builtin.Options{PassEnv: []string{"OPENAI_API_KEY"}})
	if diff := cmp.Diff(outcome{"key=sk-test-secret tg= lang=C.UTF-8\n", false}, got(call(t, tools, "bash", cmd))); diff != "" {
		t.Errorf("PassEnv (-want +got):\n%s", diff)
	}
}

// Options.Sandbox sees the command before it starts, and an error refuses
// the call.
func TestBashSandboxHook(t *testing.T) {
	var seen []string
	_, tools := workspace(t, nil, &builtin.Options{Sandbox: func(cmd *exec.Cmd) (bool, error) {
		seen = append(seen, strings.Join(cmd.Args[1:], " "))
		if strings.Contains(cmd.Args[len(cmd.Args)-1], "refuse") {
			return false, errors.New("no helper")
		}
		return true, nil
	}})
	if diff := cmp.Diff(outcome{"ok\n", false}, got(call(t, tools, "bash", map[string]any{"command": "echo ok"}))); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(outcome{"bash: sandbox: no helper", true}, got(call(t, tools, "bash", map[string]any{"command": "echo refuse"}))); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"-c echo ok", "-c echo refuse"}, seen); diff != "" {
		t.Errorf("commands seen (-want +got):\n%s", diff)
	}
}
