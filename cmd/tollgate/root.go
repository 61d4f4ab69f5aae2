package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/spf13/cobra"
)

// Exit codes of the tollgate command.
const (
	exitDone       = 0
	exitError      = 1
	exitUsage      = 2
	exitPending    = 3
	exitIncomplete = 4
)

// cliEnv is the command's connection to the outside world; tests replace it.
type cliEnv struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// getenv reads the command's environment and dir is its working
	// directory, from which relative paths are taken: the process's when
	// nil and empty (Main), a test's own otherwise, so that tests need not
	// change the process's and can run in parallel.
	getenv func(string) string
	dir    string

	holdOnce sync.Once
	hold     *termHold
}

// env returns the value of the variable name in the command's environment.
func (e *cliEnv) env(name string) string {
	if e.getenv == nil {
		return os.Getenv(name)
	}
	return e.getenv(name)
}

// lookupEnv is os.LookupEnv in the command's environment: what expands
// ${NAME} in an mcp.json. A test's environment (getenv set) cannot tell an
// empty variable from an unset one: an empty one reads as unset.
func (e *cliEnv) lookupEnv(name string) (string, bool) {
	if e.getenv == nil {
		return os.LookupEnv(name)
	}
	v := e.getenv(name)
	return v, v != ""
}

// wd returns the command's working directory.
func (e *cliEnv) wd() (string, error) {
	if e.dir != "" {
		return e.dir, nil
	}
	return os.Getwd()
}

// abs returns p as an absolute, clean path, a relative one taken from the
// command's working directory (as filepath.Abs does from the process's).
func (e *cliEnv) abs(p string) (string, error) {
	if filepath.IsAbs(p) {
		return filepath.Clean(p), nil
	}
	wd, err := e.wd()
	if err != nil {
		return "", err
	}
	return filepath.Join(wd, p), nil
}

// termHold returns the terminal's hold: event lines wait while a prompt asks.
func (e *cliEnv) termHold() *termHold {
	e.holdOnce.Do(func() { e.hold = &termHold{} })
	return e.hold
}

// termHold keeps the event lines of parallel calls from breaking into a
// prompt on the terminal: while one is asking, lines are kept, and they are
// printed, in order, when it has its answer.
type termHold struct {
	mu     sync.Mutex
	asking int
	held   []func()
}

// do runs print now, or after the prompt being asked.
func (h *termHold) do(print func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.asking > 0 {
		h.held = append(h.held, print)
		return
	}
	print()
}

// ask holds event lines until the returned function is called.
func (h *termHold) ask() (done func()) {
	h.mu.Lock()
	h.asking++
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.asking--
		if h.asking == 0 {
			for _, f := range h.held {
				f()
			}
			h.held = nil
		}
	}
}

// exitError carries an exit code through cobra's error return.
type exitCodeError struct {
	code int
	err  error
	// config marks an error in a configuration file or the environment:
	// exit 2 as for usage, without the usage hint (the command line was
	// right, what it names is not).
	config bool
}

func (e *exitCodeError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}
func (e *exitCodeError) Unwrap() error { return e.err }

func usageErr(format string, args ...any) error {
	return &exitCodeError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// configErr is a configuration error: exit 2, like a usage error, but
// without the hint to read --help.
func configErr(format string, args ...any) error {
	return &exitCodeError{code: exitUsage, err: fmt.Errorf(format, args...), config: true}
}

// commandError says "name: " before err's message, once (Main prints it
// after "tollgate: "), keeping its exit code; an error with no exit code is
// an error (exit 1).
func commandError(name string, err error) error {
	if err == nil {
		return nil
	}
	out := &exitCodeError{code: exitError, err: err}
	var ce *exitCodeError
	if errors.As(err, &ce) {
		if ce.err == nil {
			return err // nothing to print
		}
		out.code, out.config = ce.code, ce.config
	}
	if !strings.HasPrefix(err.Error(), name+": ") {
		out.err = fmt.Errorf("%s: %w", name, err)
	}
	return out
}

// withCode returns an error that makes Main exit with code; err may be nil
// (nothing more to print).
func withCode(code int, err error) error { return &exitCodeError{code: code, err: err} }

// orCode is err with its own exit status when it has one ([usageErr],
// [configErr]), else with code.
func orCode(code int, err error) error {
	var ec *exitCodeError
	if errors.As(err, &ec) {
		return err
	}
	return withCode(code, err)
}

// Main runs the tollgate command with args and returns its exit status.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return mainEnv(ctx, args, &cliEnv{stdin: stdin, stdout: stdout, stderr: stderr})
}

// mainEnv is Main in the environment and working directory of env.
func mainEnv(ctx context.Context, args []string, env *cliEnv) int {
	// Whatever reaches the terminal is escaped (see termWriter).
	stdout, stderr := io.Writer(&termWriter{w: env.stdout}), io.Writer(&termWriter{w: env.stderr})
	stdin := env.stdin
	env = &cliEnv{stdin: stdin, stdout: stdout, stderr: stderr, getenv: env.getenv, dir: env.dir}
	root := newRootCmd(env)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitDone
	}
	var ce *exitCodeError
	if errors.As(err, &ce) {
		if ce.err != nil {
			printError(stderr, ce.err)
		}
		if ce.code == exitUsage && !ce.config {
			path := "tollgate"
			if cmd != nil {
				path = cmd.CommandPath()
			}
			fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", path)
		}
		return ce.code
	}
	printError(stderr, err)
	return exitError
}

func newRootCmd(env *cliEnv) *cobra.Command {
	root := &cobra.Command{
		Use:   "tollgate",
		Short: "Run LLM agents whose every tool call is governed",
		Long: `tollgate runs an LLM agent and governs every tool call it makes: hooks,
policies and, when needed, a person's approval decide what runs, and every
decision is recorded with who made it.

Exit status: 0 done, 1 error, 2 usage or configuration, 3 pending,
4 incomplete.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
	}
	root.SetVersionTemplate("tollgate {{.Version}}\n")
	root.SetFlagErrorFunc(flagUsageError)
	// An unknown subcommand is a usage error too (exit 2).
	root.Args = func(c *cobra.Command, args []string) error {
		if len(args) > 0 {
			return unknownCommand(c, args[0])
		}
		return nil
	}
	root.RunE = func(c *cobra.Command, args []string) error { return c.Help() }
	root.AddCommand(
		newRunCmd(env),
		newToolsCmd(env),
		newHooksCmd(env),
		newPolicyCmd(env), newApprovalsCmd(env), newResumeCmd(env), newRunsCmd(env),
		withSetupChecks(newDoctorCmd(env), env),
		newServeCmd(env),
		newWorkerCmd(env),
		newMCPCmd(env),
		newClaudeCodeCmd(env),
		newCodexCmd(env),
		newGatewayCmd(env),
	)
	// Unknown subcommands and bad arguments are usage errors too, at every
	// depth: "tollgate policy chek FILE" must not print help and exit 0.
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.SetFlagErrorFunc(root.FlagErrorFunc())
		if c != root && c.HasSubCommands() && c.Run == nil && c.RunE == nil {
			c.Args = func(cmd *cobra.Command, args []string) error {
				if len(args) > 0 {
					return unknownCommand(cmd, args[0])
				}
				return nil
			}
			c.RunE = func(cmd *cobra.Command, args []string) error { return cmd.Help() }
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return root
}

// argsUsage wraps a cobra positional-argument check so that its failure exits 2,
// saying the arguments the command's usage names ("runs show: want RUN_ID;
// got no argument") rather than cobra's count.
func argsUsage(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			if want := usageArgs(cmd.Use); want != "" {
				got := "no argument"
				if len(args) > 0 {
					got = fmt.Sprintf("%d: %s", len(args), oneLine(strings.Join(args, " "), 200))
				}
				return usageErr("%swant %s; got %s", commandPrefix(cmd), want, got)
			}
			return usageErr("%s%v", commandPrefix(cmd), err)
		}
		return nil
	}
}

// usageArgs returns the positional arguments a command's Use names
// ("show RUN_ID": "RUN_ID"; "answer ID [ANSWER]...": "ID [ANSWER]..."),
// without its flags and their values; "" when it names none.
func usageArgs(use string) string {
	words := strings.Fields(use)
	var out []string
	for i := 1; i < len(words); i++ {
		w := strings.Trim(words[i], "[]")
		switch {
		case w == "flags":
		case strings.HasPrefix(w, "-"):
			if i+1 < len(words) && !strings.HasPrefix(strings.Trim(words[i+1], "[]"), "-") {
				i++ // the flag's value
			}
		default:
			out = append(out, words[i])
		}
	}
	return strings.Join(out, " ")
}

// commandPrefix is "serve token: " for the command `tollgate serve token`,
// "" for tollgate itself: Main prints every error after "tollgate: ", so the
// program's name is said once, as in every command's own errors.
func commandPrefix(c *cobra.Command) string {
	if !c.HasParent() {
		return ""
	}
	return strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ") + ": "
}
