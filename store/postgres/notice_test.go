package postgres

import (
	"strings"
	"testing"
)

// A notice's payload is read by every listener, and anyone who may
// NOTIFY on the channel writes it: its Seqs are taken only when well
// formed (first > 0, last ≥ first), and the rest is what follows them.
func FuzzNoticeSeqs(f *testing.F) {
	for _, s := range []string{"41-43 {\"tenants\":[\"\"],\"runs\":[]}", "7-7 *", "*", "x", "", "0-1 *", "5-4 *", "-1-2 *", "9223372036854775807-9223372036854775807 *", "1-2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		first, last, rest := noticeSeqs(payload)
		switch {
		case first == 0 && last == 0:
			if rest != payload {
				t.Fatalf("%q: no Seqs, rest %q", payload, rest)
			}
		case first <= 0 || last < first:
			t.Fatalf("%q: Seqs %d-%d", payload, first, last)
		case !strings.HasSuffix(payload, " "+rest):
			t.Fatalf("%q: rest %q is not what follows the Seqs", payload, rest)
		}
	})
}

// A notice ends a wait without a read only when it holds for sure an event
// the waiter selects: a waiter of one tenant's run is not sure of a notice
// of two tenants whose runs include it (the run may be the other's).
func TestNoticeHolds(t *testing.T) {
	n := &notice{Tenants: []string{"acme", "globex"}, Runs: []string{"run_1"}}
	for _, tt := range []struct {
		w    waiter
		want bool
	}{
		{waiter{all: true}, true},
		{waiter{tenant: "acme"}, true},
		{waiter{tenant: "initech"}, false},
		{waiter{all: true, runID: "run_1"}, true},
		{waiter{all: true, runID: "run_2"}, false},
		{waiter{tenant: "acme", runID: "run_1"}, false},
	} {
		if got := tt.w.holds(n); got != tt.want {
			t.Errorf("waiter %+v: holds %v, want %v", tt.w, got, tt.want)
		}
		if tt.w.holds(nil) {
			t.Errorf("waiter %+v holds a notice that is not one", tt.w)
		}
	}
}
