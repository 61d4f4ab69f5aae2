// Package sqlmigrate reads a store's embedded schema migrations, shared by
// the SQLite and PostgreSQL stores.
package sqlmigrate

import (
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// Load returns the texts of the migrations/*.sql files of fsys in order:
// migration i (from 0), named "migrations/%04d_…" with i+1, brings the
// schema to version i+1. A file out of that sequence (a gap, a duplicate
// number) is an error, as is a file that cannot be read.
func Load(fsys fs.FS) ([]string, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	out := make([]string, len(names))
	for i, n := range names {
		want := fmt.Sprintf("migrations/%04d_", i+1)
		if !strings.HasPrefix(n, want) {
			return nil, fmt.Errorf("migration %s is out of sequence (want %s...)", n, want)
		}
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, err
		}
		out[i] = string(b)
	}
	return out, nil
}
