package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"

	"github.com/spf13/pflag"

	"github.com/tollgate-dev/tollgate/internal/nofollow"
)

// logFlags are the log options of run and resume: -v and --log-file.
type logFlags struct {
	verbose bool
	file    string
}

func (l *logFlags) add(f *pflag.FlagSet) {
	f.BoolVarP(&l.verbose, "verbose", "v", false, "log decisions and hook log actions to stderr")
	f.StringVar(&l.file, "log-file", "", "append every log line (decisions, hook log actions, warnings) to this file (created 0600; a symbolic link is refused) instead of stderr")
}

// cliLogs are a command's two loggers. Info carries the log lines proper
// (decisions, hook log actions): to the --log-file, else to stderr with -v,
// else nowhere, so that the run's output is not mixed with them. Warn carries
// what a person must see even without -v (a provider's retry and its wait,
// a sandbox that could not be made, a hook command that failed): to the
// --log-file when there is one, else to stderr. Every line is written with
// one Write under one lock, so the lines of parallel calls never interleave.
type cliLogs struct {
	Info, Warn *slog.Logger
	path       string // the --log-file, protected from the run's tools
	close      func() error
}

// open makes the loggers of l; the caller closes them when the command ends.
// workspace is the run's, "" when there is none.
func (l *logFlags) open(env *cliEnv, workspace string) (*cliLogs, error) {
	if l.file != "" {
		path, err := env.abs(l.file)
		if err != nil {
			return nil, usageErr("--log-file: %v", err)
		}
		// The file may lie in the workspace, where a tool could have put
		// a link to a file of the user's in its place, or in place of a
		// directory above it.
		f, err := nofollow.OpenFileIn(workspace, path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return nil, usageErr("--log-file: %v", err)
		}
		lg := slog.New(slog.NewTextHandler(&lockedWriter{w: f}, &slog.HandlerOptions{Level: slog.LevelInfo}))
		return &cliLogs{Info: lg, Warn: lg, path: path, close: f.Close}, nil
	}
	w := &lockedWriter{w: env.stderr}
	warn := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
	info := slog.New(slog.DiscardHandler)
	if l.verbose {
		info = slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
		warn = info
	}
	return &cliLogs{Info: info, Warn: warn, close: func() error { return nil }}, nil
}

// Close closes the log file, if any.
func (c *cliLogs) Close() error {
	if err := c.close(); err != nil {
		return fmt.Errorf("--log-file: %w", err)
	}
	return nil
}

// lockedWriter serializes the Write calls of the handlers that share it.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
