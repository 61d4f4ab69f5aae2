package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/tollgate-dev/tollgate/internal/dbosengine"
	"github.com/tollgate-dev/tollgate/internal/layerstore"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/runs"
)

// workerDrain is how long a stopping worker lets its runs reach a step
// boundary before it exits (within stopGrace); runs that did not finish
// are taken up by another worker or the next start of this one.
const workerDrain = 10 * time.Second

func newWorkerCmd(env *cliEnv) *cobra.Command {
	var cfgPath string
	var verbose bool
	cmd := &cobra.Command{
		Use:   "worker --config FILE",
		Short: "Take durable runs from a queue and drive them (DBOS Transact)",
		Long: `Take durable runs from a DBOS queue and drive them until SIGINT or SIGTERM.

Runs are stored by a server (or any program using package
internal/dbosengine) in DBOS's system database, SQLite on one machine or
PostgreSQL for many; every worker on that database is woken when a run is
stored (PostgreSQL's NOTIFY; with SQLite it looks every 'queuePoll') and
starts it, at most 'concurrency' at a time (runs waiting for an answer
count). Each
model turn and each tool call is a recorded step: a worker that dies loses
only the step it was in, and once its heartbeat is older than 'deadAfter'
another worker takes its runs up from their last recorded step.

The configuration file (YAML):

  databaseEnv: TOLLGATE_DBOS_URL             # the variable holding DBOS's system database URL
                                              # (postgres://…); or database: URL, or sqlite:FILE on one machine
  storeEnv: TOLLGATE_STORE_URL                # the store of runs and approvals on PostgreSQL (or store: URL);
  stateDir: /var/lib/tollgate                 # without one, the SQLite store of this directory (one machine)
  concurrency: 64
  executorId: worker-a                        # default: hostname, PID and a random suffix
  heartbeat: 5s
  deadAfter: 30s

Each run's agent is built from the configuration stored with the run, as
'tollgate resume' does; before it takes runs, a worker builds the agents of
the configurations of the newest stored runs, so that the next run of each
does not wait for its build.`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error {
			if cfgPath == "" {
				return usageErr("worker: --config FILE is required")
			}
			cfg, err := dbosengine.LoadConfig(cfgPath)
			if err != nil {
				return usageErr("worker: %v", err)
			}
			opts, err := cfg.Options()
			if err != nil {
				return usageErr("worker: %s: %v", cfgPath, err)
			}
			storeURL, err := cfg.StoreURL()
			if err != nil {
				return usageErr("worker: %s: %v", cfgPath, err)
			}
			state := stateFlags{dir: cfg.StateDir, key: cfg.StoreKeyFile, env: env}
			stateDir, err := state.resolve("")
			if err != nil {
				return err
			}
			keyFile, err := state.keyFile(stateDir, "")
			if err != nil {
				return err
			}
			ctx := c.Context()
			st, err := openStoreAt(ctx, storeURL, stateDir, keyFile, true)
			if err != nil {
				return commandError("worker", err)
			}
			defer st.Close()
			level := slog.LevelWarn
			if verbose {
				level = slog.LevelInfo
			}
			opts.Logger = slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: level}))
			opts.Store, opts.Worker = st, true
			lf := logFlags{verbose: verbose}
			logs, err := lf.open(env, "")
			if err != nil {
				return err
			}
			defer logs.Close()
			// Each agent is built once and reused by the runs of its
			// configuration (closed after the engine).
			var b runs.Builder = &cliBuilder{env: env, logs: logs, stateDir: stateDir, keyFile: keyFile, exts: runExtensions(), tenantLogins: true}
			if ls, ok := st.(layerstore.Layers); ok {
				b = runcore.WithLayer(b, ls) // each tenant's rule layer decides too
			}
			agents := runcore.NewBuildCache(b)
			defer agents.Close()
			if err := warmRecent(ctx, agents, st, opts.Logger); err != nil {
				opts.Logger.Warn("reading the newest runs failed; their agents are built at their first runs", "error", err)
			}
			opts.Builder = agents
			e, err := dbosengine.New(ctx, opts)
			if err != nil {
				return withCode(exitError, err)
			}
			fmt.Fprintf(env.stderr, "tollgate worker %s: taking runs (%s)\n", field(e.ExecutorID()), dbosengine.ApplicationVersion)
			<-ctx.Done()
			fmt.Fprintf(env.stderr, "tollgate worker %s: stopping\n", field(e.ExecutorID()))
			if err := e.Close(workerDrain); err != nil {
				return withCode(exitError, err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&cfgPath, "config", "", "the worker's configuration file (YAML; see above)")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "log the runs' decisions and the engine's work to stderr")
	return cmd
}
