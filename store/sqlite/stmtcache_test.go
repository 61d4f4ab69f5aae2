package sqlite

import (
	"context"
	"path/filepath"
	"testing"
)

// A connection prepares a query once and uses the statement again for the
// next query of the same text; a query run while the same one still has
// rows open gets a statement of its own; the answers are the database's.
func TestStatementsKeptPerConnection(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "runs.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	conn, err := s.(*sqliteStore).db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	kept := func() (n int, idle int) {
		if err := conn.Raw(func(dc any) error {
			c := dc.(*cachingConn)
			c.mu.Lock()
			defer c.mu.Unlock()
			n, idle = c.kept, len(c.idle["SELECT ? + 1"])
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return n, idle
	}
	n0, _ := kept()
	one := func(x int) int {
		var y int
		if err := conn.QueryRowContext(ctx, "SELECT ? + 1", x).Scan(&y); err != nil {
			t.Fatal(err)
		}
		return y
	}
	if one(1) != 2 || one(41) != 42 {
		t.Fatal("wrong answers")
	}
	if n, idle := kept(); n != n0+1 || idle != 1 {
		t.Fatalf("after two queries: %d statements kept (%d before), %d idle; want one more, idle", n, n0, idle)
	}
	rows, err := conn.QueryContext(ctx, "SELECT ? + 1", 1)
	if err != nil {
		t.Fatal(err)
	}
	if one(9) != 10 {
		t.Fatal("wrong answer while the same query's rows are open")
	}
	var y int
	if !rows.Next() || rows.Scan(&y) != nil || y != 2 {
		t.Fatalf("the open rows: %d %v", y, rows.Err())
	}
	rows.Close()
	if n, idle := kept(); n != n0+2 || idle != 2 {
		t.Fatalf("after a query beside open rows: %d kept, %d idle; want %d, 2", n, idle, n0+2)
	}
}
