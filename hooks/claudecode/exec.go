package claudecode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/tollgate-dev/tollgate/internal/proc"
	"golang.org/x/sys/unix"
)

// Limits of a handler's run.
const (
	// defaultHandlerTimeout is a handler's timeout when it gives none (Claude Code's 60 s).
	defaultHandlerTimeout = 60 * time.Second
	// maxOutput is how much of a handler's stdout (or an http body) is read;
	// JSON longer than this fails.
	maxOutput = 1 << 20
	// maxStderr is how much of a handler's stderr is kept.
	maxStderr = 64 << 10
)

// result is what one handler run gave.
type result struct {
	h *hookHandler
	// failed says why the handler failed (timed out, could not start, killed
	// by a signal, crashed, printed bad JSON); empty when it ran.
	failed string
	exit   int
	stdout string
	stderr string
	out    *output // its JSON, when it printed valid JSON
	// refused is the sandbox note, when the handler ran sandboxed and its
	// stderr shows a refusal.
	refused string
}

// blocked reports exit 2: the handler blocks.
func (r *result) blocked() bool { return r.failed == "" && r.exit == 2 }

// blockReason is the reason of a block: the JSON's reason, else stderr.
func (r *result) blockReason() string {
	if r.out != nil {
		if r.out.Reason != "" {
			return r.out.Reason
		}
		if s := r.out.Specific; s != nil && s.PermissionDecisionReason != "" {
			return s.PermissionDecisionReason
		}
	}
	if s := strings.TrimSpace(r.stderr); s != "" {
		if r.refused != "" {
			s = r.refused + ": " + s
		}
		return s
	}
	return "blocked by hook " + r.h.Source
}

// run runs handler h for event ev with stdin, within its timeout.
func (x *runtime) run(ctx context.Context, h *hookHandler, ev Event, stdin []byte) *result {
	timeout := h.Timeout
	if timeout == 0 {
		timeout = x.opts.DefaultTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var r *result
	if h.Type == typeHTTP {
		r = x.runHTTP(cctx, h, stdin)
	} else {
		r = x.runCommand(cctx, h, stdin)
	}
	switch {
	case r.failed != "":
	case ctx.Err() != nil:
		r.failed = "was canceled with the run"
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		r.failed = fmt.Sprintf("timed out after %s; its process group was killed", timeout)
	}
	if r.failed != "" {
		return r
	}
	out, err := parseOutput([]byte(r.stdout), ev)
	switch {
	case err != nil && (r.exit == 0 || r.exit == 2):
		if r.exit == 0 {
			r.failed = err.Error()
		}
	case err != nil:
		r.failed = fmt.Sprintf("exited with status %d, and %v", r.exit, err)
	case out == nil && r.exit != 0 && r.exit != 2:
		r.failed = fmt.Sprintf("crashed: exited with status %d", r.exit)
		if e := oneLine(r.stderr, 200); e != "" {
			r.failed += " (" + e + ")"
		}
	}
	r.out = out
	if r.failed != "" && r.refused != "" {
		r.failed += " (" + r.refused + ")"
	}
	return r
}

// runCommand runs a command handler in its own process group.
func (x *runtime) runCommand(ctx context.Context, h *hookHandler, stdin []byte) *result {
	r := &result{h: h, exit: -1}
	var cmd *exec.Cmd
	if h.Args != nil {
		args := make([]string, len(h.Args))
		for i, a := range h.Args {
			args[i] = x.expand(a)
		}
		cmd = exec.CommandContext(ctx, x.expand(h.Command), args...)
	} else {
		cmd = exec.CommandContext(ctx, "sh", "-c", h.Command)
	}
	proc.PrepareSession(cmd)
	cmd.Dir = x.opts.ProjectDir
	cmd.Env = append(append([]string{}, x.env...), "CLAUDE_PROJECT_DIR="+x.opts.ProjectDir)
	if x.opts.Sandbox != nil {
		if _, err := x.opts.Sandbox(cmd); err != nil {
			r.failed = "could not be started: sandbox: " + err.Error()
			return r
		}
		defer func() {
			if x.opts.SandboxNote != "" && proc.Refused(r.stderr) {
				r.refused = x.opts.SandboxNote
			}
		}()
	}
	cmd.Stdin = bytes.NewReader(stdin)
	stdout, stderr := proc.NewLimitedBuffer(maxOutput+1), proc.NewLimitedBuffer(maxStderr)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	r.stdout, r.stderr = stdout.String(), stderr.String()
	if stdout.Truncated() || len(r.stdout) > maxOutput {
		r.failed = fmt.Sprintf("printed more than %d bytes on stdout", maxOutput)
		return r
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		r.exit = 0
	case errors.As(err, &ee):
		ws, ok := ee.Sys().(syscall.WaitStatus)
		if ok && ws.Signaled() {
			if ctx.Err() == nil {
				r.failed = "was killed by signal " + unix.SignalName(ws.Signal())
			}
			return r
		}
		r.exit = ee.ExitCode()
		switch r.exit {
		case 126:
			r.failed = "could not be started (exit 126: not executable): " + oneLine(r.stderr, 200)
		case 127:
			r.failed = "could not be started (exit 127: command not found): " + oneLine(r.stderr, 200)
		}
	default:
		if ctx.Err() == nil {
			r.failed = "could not be started: " + err.Error()
		}
	}
	return r
}

// runHTTP POSTs stdin to an http handler: a 2xx answer's body is read like
// the stdout of exit 0; any other status, or no answer, is a failure.
func (x *runtime) runHTTP(ctx context.Context, h *hookHandler, stdin []byte) *result {
	r := &result{h: h, exit: -1}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(stdin))
	if err != nil {
		r.failed = "could not be started: " + err.Error()
		return r
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h.Headers {
		req.Header.Set(k, v)
	}
	resp, err := x.opts.HTTPClient.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			r.failed = "could not be reached: " + err.Error()
		}
		return r
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxOutput+1))
	if err != nil && ctx.Err() == nil {
		r.failed = "answer could not be read: " + err.Error()
		return r
	}
	if len(body) > maxOutput {
		r.failed = fmt.Sprintf("answered more than %d bytes", maxOutput)
		return r
	}
	if resp.StatusCode/100 != 2 {
		r.failed = fmt.Sprintf("answered HTTP %d", resp.StatusCode)
		return r
	}
	r.exit, r.stdout = 0, string(body)
	return r
}

// expand replaces $CLAUDE_PROJECT_DIR and ${CLAUDE_PROJECT_DIR} in the exec
// form's program and arguments (sh -c reads the variable itself).
func (x *runtime) expand(s string) string {
	s = strings.ReplaceAll(s, "${CLAUDE_PROJECT_DIR}", x.opts.ProjectDir)
	return strings.ReplaceAll(s, "$CLAUDE_PROJECT_DIR", x.opts.ProjectDir)
}
