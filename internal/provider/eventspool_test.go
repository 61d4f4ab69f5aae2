package provider

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// readPooled reads in with an Events from the pool and gives it back.
func readPooled(in string, limit int64) ([]event, error) {
	e := GetEvents(strings.NewReader(in), limit)
	defer PutEvents(e)
	var out []event
	for e.Next() {
		out = append(out, event{string(e.Type()), string(e.Data())})
	}
	return out, e.Err()
}

// TestEventsPool reads streams one after another with pooled readers (each
// may get the one the stream before left: a long event, a line too long, a
// stream over its limit, a type it did not end) and compares each with a
// fresh reader's events.
func TestEventsPool(t *testing.T) {
	long := strings.Repeat("x", 10000)
	streams := []struct {
		in    string
		limit int64
	}{
		{"event: message_start\ndata: {\"a\":1}\n\ndata: [DONE]\n\n", 0},
		{"data: " + long + "\ndata: " + long + "\n\n", 0},
		{"event: cut\ndata: a", 0},
		{"data: a\n\ndata: b\n\n", 0},
		{"data: 0123456789\n\ndata: more\n\n", 12},
		{"event: e\n\n: c\ndata:y\r\n\r\n", 0},
		{"data: " + strings.Repeat("y", MaxEventBytes+1) + "\n\n", 0},
		{"data: after\n\n", 0},
		{"data: " + strings.Repeat("z", maxPooledEventData+1) + "\n\n", 0},
		{"", 0},
	}
	for round := range 3 {
		for i, s := range streams {
			want, werr := readAll(NewEventsLimit(strings.NewReader(s.in), s.limit))
			got, gerr := readPooled(s.in, s.limit)
			if diff := cmp.Diff(want, got); diff != "" || !errors.Is(gerr, werr) && (gerr == nil || werr == nil || gerr.Error() != werr.Error()) {
				t.Fatalf("round %d, stream %d: %v (-fresh +pooled):\n%s\nerror %v, fresh %v", round, i, s.in[:min(len(s.in), 40)], diff, gerr, werr)
			}
		}
	}
}

// TestEventsPoolReuse checks that a reader given back is taken again with
// its buffers, so that a stream costs no allocation for its reader.
func TestEventsPoolReuse(t *testing.T) {
	in := []byte("data: {\"a\":1}\n\ndata: [DONE]\n\n")
	r := bytes.NewReader(in)
	n := testing.AllocsPerRun(100, func() {
		r.Reset(in)
		e := GetEvents(r, 0)
		for e.Next() {
		}
		PutEvents(e)
	})
	if n >= 1 {
		t.Errorf("%v allocations per stream, want none", n)
	}
}

// readAll reads every event of e.
func readAll(e *Events) ([]event, error) {
	var out []event
	for e.Next() {
		out = append(out, event{string(e.Type()), string(e.Data())})
	}
	return out, e.Err()
}
