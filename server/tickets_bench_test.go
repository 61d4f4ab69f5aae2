package server

import (
	"testing"
	"time"
)

// BenchmarkTicketMint mints tickets with 8,000 alive, in the steady state
// where each mint outlives one: its cost does not grow with the live ones.
func BenchmarkTicketMint(b *testing.B) {
	const live = 8000
	ts := tickets{max: 1 << 20, perPrincipal: 1 << 20}
	now := time.Unix(0, 0)
	step := ticketTTL / live
	p := Principal{Name: "vic", Tenant: "acme", Roles: []Role{RoleViewer}}
	for range live {
		if _, _, err := ts.mint(p, now); err != nil {
			b.Fatal(err)
		}
		now = now.Add(step)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ts.mint(p, now); err != nil {
			b.Fatal(err)
		}
		now = now.Add(step)
	}
}
