package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"
)

// doctorTimeout bounds each check of doctor that talks to another process
// (the PostgreSQL store, node --version).
const doctorTimeout = 5 * time.Second

// withSetupChecks makes doctor check, before the sandbox, what a run needs
// besides it (doctorSetup); an unusable state directory or store fails it
// too.
func withSetupChecks(cmd *cobra.Command, env *cliEnv) *cobra.Command {
	sandboxChecks := cmd.RunE
	cmd.Short = "Say whether this machine is ready for runs: state directory, store, keys, Node.js, sandbox"
	cmd.Long = `First say what a run needs besides the sandbox: the state directory and its
store (or the PostgreSQL store of $` + envStoreURL + `, which is only connected
to), which providers' keys are set (never their values), and the Node.js
that MCP servers written for it run with. An unusable state directory or
store exits 1 too.

Then: ` + cmd.Long
	cmd.RunE = func(c *cobra.Command, args []string) error {
		ok := doctorSetup(c.Context(), env)
		if err := sandboxChecks(c, args); err != nil {
			return err
		}
		if !ok {
			return withCode(exitError, nil)
		}
		return nil
	}
	return cmd
}

// doctorSetup prints what a run needs besides the sandbox, one line each:
// the state directory, the store, the providers' keys (set or not, never
// their values) and Node.js for MCP servers written for it. It reports
// whether the state directory and the store are usable; keys and Node are
// needed only by some runs, so their absence is said, not failed.
func doctorSetup(ctx context.Context, env *cliEnv) bool {
	line, ok := doctorStore(ctx, &stateFlags{env: env})
	fmt.Fprintln(env.stdout, line)
	var set, unset []string
	for _, v := range []string{"OPENAI_API_KEY", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY"} {
		if env.env(v) != "" {
			set = append(set, v)
		} else {
			unset = append(unset, v)
		}
	}
	switch {
	case len(set) == 0:
		fmt.Fprintf(env.stdout, "keys: none of %s is set (needed for the hosted services; a local server or a script needs none)\n", strings.Join(unset, ", "))
	case len(unset) == 0:
		fmt.Fprintf(env.stdout, "keys: %s set\n", strings.Join(set, ", "))
	default:
		fmt.Fprintf(env.stdout, "keys: %s set; %s not set\n", strings.Join(set, ", "), strings.Join(unset, ", "))
	}
	fmt.Fprintln(env.stdout, doctorNode(ctx))
	return ok
}

// doctorStore describes the store the commands would use and whether it is
// usable, without creating or changing anything.
func doctorStore(ctx context.Context, state *stateFlags) (string, bool) {
	u, err := state.storeURL()
	if err != nil {
		return "store: " + err.Error(), false
	}
	if u != "" {
		ctx, cancel := context.WithTimeout(ctx, doctorTimeout)
		defer cancel()
		conn, err := pgx.Connect(ctx, u)
		if err == nil {
			err = conn.Ping(ctx)
			conn.Close(context.Background())
		}
		if err != nil {
			return fmt.Sprintf("store: %s (from $%s): unreachable: %v", describeStore(u), envStoreURL, err), false
		}
		return fmt.Sprintf("store: %s (from $%s): reachable", describeStore(u), envStoreURL), true
	}
	dir, err := state.resolve("")
	if err != nil {
		return "state: " + err.Error(), false
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("state: %s (made by the first run; set $%s or --state-dir for another)", dir, envStateDir), true
	case err != nil:
		return fmt.Sprintf("state: %s: %v", dir, err), false
	case !fi.IsDir():
		return fmt.Sprintf("state: %s: not a directory", dir), false
	}
	if _, err := os.Stat(filepath.Join(dir, storeFile)); errors.Is(err, fs.ErrNotExist) {
		return fmt.Sprintf("state: %s (no store yet: made by the first run)", dir), true
	}
	keyFile, err := state.keyFile(dir, "")
	if err != nil {
		return "state: " + err.Error(), false
	}
	s, err := openExistingStore(ctx, dir, keyFile)
	if err != nil {
		return fmt.Sprintf("state: %s: %s", dir, err.Error()), false
	}
	s.Close()
	return fmt.Sprintf("state: %s (SQLite store)", dir), true
}

// doctorNode says which Node.js stdio MCP servers written for it would run
// with, if any.
func doctorNode(ctx context.Context) string {
	node, err := exec.LookPath("node")
	if err != nil {
		return "node: not found (needed only by MCP servers written for Node.js, such as the official ones)"
	}
	ctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, "--version").Output()
	if err != nil {
		return fmt.Sprintf("node: %s does not run: %v", node, err)
	}
	return fmt.Sprintf("node: %s %s (for MCP servers written for Node.js)", node, strings.TrimSpace(string(out)))
}
