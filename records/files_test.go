package records_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/records"
)

// A line keeps the path a file tool was given next to the real path of the
// file it reached (a link may lead elsewhere), for one file and for each
// file of a patch, also after the metadata went through JSON; paths are cut.
func TestLineKeepsRealPaths(t *testing.T) {
	long := strings.Repeat("a", 5000)
	patchMeta := map[string]any{"files": []map[string]any{
		{"op": "M", "path": "a.txt", "realPath": "/ws/a.txt"},
		{"op": "R", "path": "b.txt", "to": "link/c.txt", "realPath": "/ws/b.txt", "realTo": "/ws/real/c.txt"},
	}}
	var roundTripped map[string]any
	b, _ := json.Marshal(patchMeta)
	if err := json.Unmarshal(b, &roundTripped); err != nil {
		t.Fatal(err)
	}
	wantPatch := []records.FileRecord{{Path: "a.txt", RealPath: "/ws/a.txt"}, {Path: "b.txt", RealPath: "/ws/b.txt", To: "link/c.txt", RealTo: "/ws/real/c.txt"}}
	for _, tc := range []struct {
		meta map[string]any
		want []records.FileRecord
	}{
		{map[string]any{"path": "public/key.txt", "realPath": "/ws/secret/key.txt", "lines": 3}, []records.FileRecord{{Path: "public/key.txt", RealPath: "/ws/secret/key.txt"}}},
		{patchMeta, wantPatch},
		{roundTripped, wantPatch},
		{map[string]any{"path": "no-real-path"}, nil},
		{nil, nil},
	} {
		l := records.LineOf("run", gate.Record{ID: "c", Name: "read", Metadata: tc.meta}, time.Time{})
		if diff := cmp.Diff(tc.want, l.Files); diff != "" {
			t.Errorf("%v: (-want +got)\n%s", tc.meta, diff)
		}
	}
	l := records.LineOf("run", gate.Record{Metadata: map[string]any{"path": long, "realPath": "/ws/" + long}}, time.Time{})
	if len(l.Files) != 1 || len(l.Files[0].Path) > 4200 || !strings.Contains(l.Files[0].Path, "bytes cut") {
		t.Errorf("a long path is kept whole: %d bytes", len(l.Files[0].Path))
	}
}
