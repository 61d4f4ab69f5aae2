package sqlmigrate

import (
	"strings"
	"testing"
	"testing/fstest"
)

// Migrations come in their numbers' order; a gap or a duplicate number is
// refused.
func TestLoad(t *testing.T) {
	ok := fstest.MapFS{
		"migrations/0002_b.sql": {Data: []byte("B")},
		"migrations/0001_a.sql": {Data: []byte("A")},
	}
	got, err := Load(ok)
	if err != nil || strings.Join(got, ",") != "A,B" {
		t.Fatalf("Load = %q, %v; want A,B", got, err)
	}
	for name, fsys := range map[string]fstest.MapFS{
		"gap":       {"migrations/0001_a.sql": {}, "migrations/0003_c.sql": {}},
		"duplicate": {"migrations/0001_a.sql": {}, "migrations/0001_b.sql": {}},
	} {
		if _, err := Load(fsys); err == nil || !strings.Contains(err.Error(), "out of sequence") {
			t.Errorf("%s: %v, want out of sequence", name, err)
		}
	}
}
