package pgtest

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

func TestDatabaseIsFreshAndDropped(t *testing.T) {
	var first string
	skipped := false
	t.Run("create", func(t *testing.T) {
		skipped = true // Database skips the subtest when PostgreSQL is skipped on purpose
		first = Database(t)
		skipped = false
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, first)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "CREATE TABLE x (id int)"); err != nil {
			t.Fatal(err)
		}
		second := Database(t)
		if second == first {
			t.Fatalf("two databases share a URL: %s", first)
		}
	})
	// After the subtest, its databases are gone: the server itself says the
	// database does not exist (SQLSTATE 3D000), not merely that connecting
	// failed.
	if skipped {
		t.Skip("PostgreSQL skipped on purpose")
	}
	ctx := context.Background()
	if first == "" {
		t.Fatal("the subtest made no database")
	}
	conn, err := pgx.Connect(ctx, first)
	if err == nil {
		conn.Close(ctx)
		t.Fatalf("database %s still exists after its test ended", first)
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "3D000" {
		t.Fatalf("connecting to the dropped database: %v, want SQLSTATE 3D000 (invalid catalog name)", err)
	}
}
