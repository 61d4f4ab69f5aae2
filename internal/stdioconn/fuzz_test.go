package stdioconn_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/stdioconn"
)

// FuzzRead feeds arbitrary input to a connection: it must never panic, and
// must end at the input's end (io.EOF), at a line over its limit
// (ErrTooLong), or at a line it refuses, saying so as its own error.
func FuzzRead(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n",
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"x"}]` + "\n",
		`{"jsonrpc":"2.0","id":1,"result":{}}` + "\r\n\n",
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}` + "\n[]\n",
		"[[[[[[",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		c := stdioconn.New(strings.NewReader(in), io.Discard, io.NopCloser(nil), 1<<10)
		_, err := read(c)
		if !errors.Is(err, io.EOF) && !errors.Is(err, stdioconn.ErrTooLong) && !strings.HasPrefix(err.Error(), "stdioconn: ") {
			t.Fatalf("read ended with %v", err)
		}
	})
}
