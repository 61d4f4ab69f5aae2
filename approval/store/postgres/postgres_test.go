package postgres_test

import (
	"context"
	"testing"

	"github.com/tollgate-dev/tollgate/approval/store"
	"github.com/tollgate-dev/tollgate/approval/store/postgres"
	"github.com/tollgate-dev/tollgate/approval/store/storetest"
	"github.com/tollgate-dev/tollgate/internal/pgtest"
)

func open(t *testing.T, url string, opts *store.Options) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), url, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSuite(t *testing.T) {
	storetest.Run(t, func(t *testing.T, opts *store.Options) store.Store {
		return open(t, pgtest.Database(t), opts)
	})
}

// Two Stores on one database, each with its own pool, stand for two
// processes.
func TestSuiteShared(t *testing.T) {
	storetest.RunShared(t, func(t *testing.T, opts *store.Options) (store.Store, store.Store) {
		url := pgtest.Database(t)
		return open(t, url, opts), open(t, url, opts)
	})
}
