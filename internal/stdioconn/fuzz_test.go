package stdioconn_test

import (
	"io"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/stdioconn"
)

// FuzzRead feeds arbitrary input to a connection: it must end in an error
// (io.EOF at the end), never panic, and never read past its limit.
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
		if _, err := read(c); err == nil {
			t.Fatal("read ended without an error")
		}
	})
}
