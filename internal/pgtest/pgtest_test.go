package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestDatabaseIsFreshAndDropped(t *testing.T) {
	var first string
	t.Run("create", func(t *testing.T) {
		first = Database(t)
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
	// After the subtest, its databases are gone.
	ctx := context.Background()
	if conn, err := pgx.Connect(ctx, first); err == nil {
		conn.Close(ctx)
		t.Fatalf("database %s still exists after its test ended", first)
	}
}
