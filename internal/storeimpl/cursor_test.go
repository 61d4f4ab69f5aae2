package storeimpl_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/storeimpl"
	"github.com/tollgate-dev/tollgate/store"
)

func TestCursorRoundTrip(t *testing.T) {
	for _, pos := range []int64{1, 9, 10, 1 << 40, 1<<63 - 1} {
		c := storeimpl.EncodeCursor("runs", pos)
		got, err := storeimpl.DecodeCursor("runs", c)
		if err != nil || got != pos {
			t.Errorf("DecodeCursor(EncodeCursor(%d)) = %d, %v", pos, got, err)
		}
		if _, err := storeimpl.DecodeCursor("approvals", c); !errors.Is(err, store.ErrBadCursor) {
			t.Errorf("a runs cursor decoded as an approvals one: %v", err)
		}
	}
	if pos, err := storeimpl.DecodeCursor("runs", ""); pos != 0 || err != nil {
		t.Errorf("the empty cursor: %d, %v", pos, err)
	}
}

func TestPageLimit(t *testing.T) {
	for in, want := range map[int]int{0: storeimpl.DefaultLimit, 1: 1, store.MaxLimit: store.MaxLimit, store.MaxLimit + 1: store.MaxLimit, 1 << 40: store.MaxLimit} {
		if got, err := storeimpl.PageLimit(in); got != want || err != nil {
			t.Errorf("PageLimit(%d) = %d, %v; want %d", in, got, err, want)
		}
	}
	if _, err := storeimpl.PageLimit(-1); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("PageLimit(-1): %v", err)
	}
}

// FuzzDecodeCursor: a cursor comes from a client; whatever it holds, decoding
// either fails with ErrBadCursor (with a short message) or yields a positive
// position that encodes back to the same cursor.
func FuzzDecodeCursor(f *testing.F) {
	f.Add(storeimpl.EncodeCursor("runs", 42))
	f.Add(storeimpl.EncodeCursor("approvals", 7))
	f.Add("cnVuczowMDE") // runs:001
	f.Add("cnVuczotMQ")  // runs:-1
	f.Add("")
	f.Fuzz(func(t *testing.T, c string) {
		pos, err := storeimpl.DecodeCursor("runs", c)
		if err != nil {
			if !errors.Is(err, store.ErrBadCursor) {
				t.Fatalf("error %v is not ErrBadCursor", err)
			}
			if len(err.Error()) > 200 || strings.ContainsFunc(err.Error(), func(r rune) bool { return r < 0x20 }) {
				t.Fatalf("error message too long or with control characters: %q", err)
			}
			return
		}
		if c == "" {
			if pos != 0 {
				t.Fatalf("empty cursor gave %d", pos)
			}
			return
		}
		if pos <= 0 || storeimpl.EncodeCursor("runs", pos) != c {
			t.Fatalf("cursor %q decoded to %d, which encodes to %q", c, pos, storeimpl.EncodeCursor("runs", pos))
		}
	})
}
