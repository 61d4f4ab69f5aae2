package postgres

import (
	"testing"
)

// A notice's payload is read by every listener, and anyone who may
// NOTIFY on the channel writes it: it is this log's, with Seqs to go by,
// only when it names the log and its Seqs are well formed (first > 0,
// last ≥ first); anything else is no notice or another's.
func FuzzParseNotice(f *testing.F) {
	for _, s := range []string{`{"tenants":[""],"runs":[],"log":"public","first":41,"last":43}`, `{"tenants":["acme"],"runs":["run_1"]}`,
		`{"log":"other","first":1,"last":1}`, `{"log":"public","first":5,"last":4}`, `{"log":"public","first":0,"last":3}`, "*", "x", "", "7-7 *"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		n, ours := parseNotice(payload, "public")
		switch {
		case ours && (n == nil || n.Log != "public" || n.First <= 0 || n.Last < n.First):
			t.Fatalf("%q: taken as this log's with %+v", payload, n)
		case payload == "*" && n != nil:
			t.Fatalf("%q: a notice %+v", payload, n)
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
