//go:build unix

package sqlite_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/sqlite"
)

// The database holds transcripts, tool arguments and outputs: in a state
// directory others may enter (an existing one, given with --state-dir),
// its files were readable by every local user (0644 under the usual umask),
// the write-ahead log and shared memory too. They are the owner's alone,
// and a database made so by an earlier version is made so on open.
func TestDatabaseFilesAreTheOwnersOnly(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	check := func(path string) {
		t.Helper()
		s, err := sqlite.Open(ctx, path, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := s.CreateRun(ctx, store.CreateRunRequest{Run: store.Run{ID: "run_1", Status: store.RunPending}}); err != nil && !errors.Is(err, store.ErrConflict) {
			t.Fatal(err)
		}
		for _, suffix := range []string{"", "-wal", "-shm"} {
			fi, err := os.Stat(path + suffix)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm()&0o077 != 0 {
				t.Errorf("%s: mode %v, want no access for group and others", filepath.Base(path+suffix), fi.Mode().Perm())
			}
		}
	}
	check(filepath.Join(dir, "new.db"))
	older := filepath.Join(dir, "older.db")
	if err := os.WriteFile(older, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	check(older)
}
