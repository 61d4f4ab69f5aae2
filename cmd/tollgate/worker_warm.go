package main

import (
	"context"
	"log/slog"

	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/store"
)

// recentRuns is how many of the newest stored runs warmRecent looks at.
const recentRuns = 200

// warmRecent builds, before a worker takes runs, the agents of the
// configurations of the newest stored runs (each tenant's, up to
// maxWarmAgents), as a run's first build would: a worker's file names no
// agents, and the runs it will take are most likely of the configurations
// runs had lately (their autonomy levels included). A configuration whose
// files changed since is built as the next run would pin it. A run whose
// configuration does not read, and a build that fails, are left to the
// first run of that configuration, which reports them. Errors: the store's.
func warmRecent(ctx context.Context, agents *runcore.BuildCache, st store.Store, log *slog.Logger) error {
	page, err := st.ListRuns(ctx, store.RunFilter{AllTenants: true, Newest: true, Limit: recentRuns})
	if err != nil {
		return err
	}
	for _, r := range page.Runs {
		if agents.Len() >= maxWarmAgents || ctx.Err() != nil {
			break
		}
		cfg, err := runcore.LoadConfig(r)
		if err != nil {
			continue
		}
		cfg.Pins = nil // the next run's, not this one's: a configuration held already is not built again
		if err := agents.Warm(ctx, r.Tenant, cfg); err != nil {
			log.Warn("building an agent before its first run failed; its first run will try again", "run", r.ID, "tenant", r.Tenant, "error", err)
		}
	}
	return nil
}
