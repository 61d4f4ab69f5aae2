//go:build !unix

package stdioconn

import "os"

// Pollable reports false: here a [Conn] reads only what the caller makes
// pollable itself.
func Pollable(f *os.File) (in *os.File, closer interface{ Close() error }, ok bool) {
	return nil, nil, false
}
