// Package storeimpl is what tollgate's store adapters (store/memory,
// store/sqlite, store/postgres) share, so that each keeps only what its
// backend needs: the state machines of Decide, Consume, ClaimRun,
// RenewLease, UpdateRun and the rule layer; the checks of what a caller
// gives them and the limits they enforce; page cursors; the text form of
// principals in a column; and the [Sealer] that seals decisions and
// accepted layer rules with a store's decision key (HMAC-SHA256).
//
// The semantics are package store's (its package doc and the [store.Store]
// and [layerstore.Layers] methods); a state machine returns the record as it
// must be stored, or the error the method returns, and never writes.
package storeimpl
