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
