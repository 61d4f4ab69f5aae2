// Package ids makes the random IDs of runs, tool calls, approval requests
// and gateway calls.
package ids

import (
	"crypto/rand"
	"encoding/hex"
)

// New returns prefix and 16 random hex digits ("call_3f9a...").
func New(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
