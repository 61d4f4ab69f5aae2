package replay_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/replay"
	"github.com/tollgate-dev/tollgate/store/sqlite"
)

// BenchmarkReplayStore reads 100,000 recorded calls (1,000 finished runs
// of 100 calls each) from a SQLite store and replays them against the
// candidate policy: what `tollgate policy replay` and POST
// /v1/policy/replay do, the store's reading included.
func BenchmarkReplayStore(b *testing.B) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "tollgate.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	tools := []string{"bash", "read", "write", "webfetch"}
	for r := range 1000 {
		recs := make([]gate.Record, 100)
		for i := range recs {
			name := tools[i%len(tools)]
			args := fmt.Sprintf(`{"path":"f%d.txt"}`, i)
			if name == "bash" {
				args = fmt.Sprintf(`{"command":"go test ./pkg%d && rm -f out%d"}`, i, i)
			}
			recs[i] = rec(fmt.Sprint(i), name, args, gate.OutcomeApproved, askBash, alice)
		}
		addRun(b, s, fmt.Sprintf("run_%04d", r), "acme", recs...)
	}
	p := candidatePolicy(b)
	b.ResetTimer()
	for b.Loop() {
		calls, err := replay.Calls(ctx, s, replay.Options{Tenant: "acme"})
		if err != nil || len(calls) != 100_000 {
			b.Fatal(len(calls), err)
		}
		if r := replay.Replay(p, replay.Seq(calls)); r.Calls != len(calls) {
			b.Fatal(r.Calls)
		}
	}
}
