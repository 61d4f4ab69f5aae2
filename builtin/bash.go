package builtin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tollgate-dev/tollgate/internal/proc"
	"github.com/tollgate-dev/tollgate/tool"
)

// bashInput is the input of the bash tool.
type bashInput struct {
	Command string `json:"command" jsonschema:"the command line, run with bash -c"`
	Timeout int    `json:"timeout,omitempty" jsonschema:"timeout in milliseconds"`
	Workdir string `json:"workdir,omitempty" jsonschema:"the directory to run in, relative to the workspace root (default: the root)"`
}

// drainGrace is how long bash waits, after the shell exited and its process
// group was killed, for the output pipe to close; a process that left the
// group (setsid) may hold it open, and its output is then abandoned.
const drainGrace = 2 * time.Second

func (b *builtins) bashTool() (tool.Tool, error) {
	s, err := jsonschema.For[bashInput](nil)
	if err != nil {
		return nil, err
	}
	one, maxMS := 1.0, float64(b.opts.MaxBashTimeout.Milliseconds())
	t := s.Properties["timeout"]
	t.Minimum, t.Maximum = &one, &maxMS
	t.Description = fmt.Sprintf("timeout in milliseconds (default %d, at most %d)", b.opts.BashTimeout.Milliseconds(), b.opts.MaxBashTimeout.Milliseconds())
	desc := fmt.Sprintf("Run a shell command with bash -c in the workspace (or in workdir inside it) and return "+
		"its combined stdout and stderr. The command is killed, with everything it started, after the timeout "+
		"(default %v). Output beyond %d bytes is dropped and marked. A non-zero exit status is reported as "+
		"an error with the output. Processes still running when the command ends are killed; stdin is empty.",
		b.opts.BashTimeout, b.opts.MaxOutputBytes)
	return tool.New(toolBash, desc, b.bash, &tool.FuncOptions{
		Hints:       &tool.Hints{Destructive: true, OpenWorld: true},
		InputSchema: s,
		Source:      source,
	})
}

func (b *builtins) bash(ctx context.Context, in bashInput) (tool.Result, error) {
	if strings.TrimSpace(in.Command) == "" {
		return tool.Error("command must not be empty"), nil
	}
	timeout := b.opts.BashTimeout
	if in.Timeout > 0 {
		timeout = time.Duration(in.Timeout) * time.Millisecond
	}
	if timeout > b.opts.MaxBashTimeout {
		return tool.Errorf("timeout %d ms exceeds the maximum of %d ms", in.Timeout, b.opts.MaxBashTimeout.Milliseconds()), nil
	}
	dir, res, ok := b.workdir(in.Workdir)
	if !ok {
		return res, nil
	}
	shell, err := exec.LookPath("bash")
	if err != nil {
		if shell, err = exec.LookPath("sh"); err != nil {
			return tool.Error("no shell found: neither bash nor sh is in PATH"), nil
		}
	}

	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(runCtx, shell, "-c", in.Command)
	cmd.Dir = dir
	if b.opts.Env != nil {
		cmd.Env = slices.Clip(b.opts.Env)
	} else {
		cmd.Env = proc.Env(os.Environ(), b.opts.PassEnv)
	}
	proc.PrepareSession(cmd) // no controlling terminal: a command cannot type into the operator's shell
	killed := "the process group was killed"
	if b.opts.Sandbox != nil {
		tree, err := b.opts.Sandbox(cmd)
		if err != nil {
			return tool.Errorf("bash: sandbox: %v", err), nil
		}
		if tree {
			killed = "the command and every process it started were killed"
		}
	}

	// The child writes into a pipe we own (an *os.File, so exec starts no
	// copying goroutine of its own and Wait returns as soon as the shell exits).
	pr, pw, err := os.Pipe()
	if err != nil {
		return tool.Errorf("bash: %v", err), nil
	}
	defer pr.Close()
	cmd.Stdout, cmd.Stderr = pw, pw
	buf := proc.NewLimitedBuffer(b.opts.MaxOutputBytes)
	started := time.Now()
	if err := cmd.Start(); err != nil {
		pw.Close()
		return tool.Errorf("bash: starting %s: %v", shell, err), nil
	}
	pw.Close()
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		_, _ = io.Copy(buf, pr) // LimitedBuffer never fails, so this reads to EOF
	}()
	waitErr := cmd.Wait()
	// Kill whatever the command left running in its group; the output pipe
	// then closes unless a process escaped the group.
	_ = proc.KillGroup(cmd)
	select {
	case <-drained:
	case <-time.After(drainGrace):
		pr.Close() // unblocks the copy
		<-drained
	}
	elapsed := time.Since(started)

	kept, dropped := buf.Bytes(), buf.Dropped()
	out := string(kept)
	if dropped > 0 {
		out = validPrefix(kept)
		dropped += int64(len(kept) - len(out))
		out = withNote(out, fmt.Sprintf("[output truncated: %d bytes dropped]", dropped))
	}
	meta := map[string]any{
		"exitCode":     cmd.ProcessState.ExitCode(),
		"truncated":    dropped > 0,
		"droppedBytes": dropped,
		"timedOut":     false,
	}
	switch {
	case waitErr == nil:
		if out == "" {
			out = "[no output]"
		}
		return tool.Result{Output: out, Metadata: meta}, nil
	case ctx.Err() != nil:
		meta["cancelled"] = true
		return tool.Result{Output: withNote(out, fmt.Sprintf("[cancelled after %v: %v; %s]", elapsed.Round(time.Millisecond), ctx.Err(), killed)), IsError: true, Metadata: meta}, nil
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		meta["timedOut"] = true
		return tool.Result{Output: withNote(out, fmt.Sprintf("[timed out after %v; %s]", timeout, killed)), IsError: true, Metadata: meta}, nil
	}
	return tool.Result{Output: withNote(out, exitNote(cmd.ProcessState, waitErr)), IsError: true, Metadata: meta}, nil
}

// workdir resolves the bash workdir inside the workspace to an OS path. When
// it is refused, ok is false and res is the error result.
func (b *builtins) workdir(p string) (dir string, res tool.Result, ok bool) {
	if p == "" {
		return b.ws.real, tool.Result{}, true
	}
	rel, err := b.ws.rel(p)
	if err != nil {
		return "", tool.Error(describe(p, err)), false
	}
	root, err := b.ws.open()
	if err != nil {
		return "", tool.Error(err.Error()), false
	}
	defer root.Close()
	fi, err := root.Stat(rel) // follows symbolic links, refusing any that lead out
	if err != nil {
		return "", tool.Error(describe(p, err)), false
	}
	if !fi.IsDir() {
		return "", tool.Errorf("workdir %s is not a directory", p), false
	}
	return filepath.Join(b.ws.real, rel), tool.Result{}, true
}

// exitNote describes how the shell ended.
func exitNote(ps *os.ProcessState, err error) string {
	if ps == nil {
		return fmt.Sprintf("[bash: %v]", err)
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("[killed by signal %v]", ws.Signal())
	}
	return fmt.Sprintf("[exit code %d]", ps.ExitCode())
}

// withNote appends note to output on a line of its own.
func withNote(output, note string) string {
	if output == "" || strings.HasSuffix(output, "\n") {
		return output + note
	}
	return output + "\n" + note
}

// validPrefix returns b as a string without a rune cut in two at its end (the
// output cap may split one).
func validPrefix(b []byte) string {
	for i := 0; i < utf8.UTFMax-1 && len(b) > 0; i++ {
		if r, size := utf8.DecodeLastRune(b); r != utf8.RuneError || size != 1 {
			break
		}
		b = b[:len(b)-1]
	}
	return string(b)
}
