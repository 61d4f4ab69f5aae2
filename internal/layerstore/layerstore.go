// Package layerstore is the rule layer's vocabulary and the interface the
// stores keep it behind.
//
// A tenant's rule layer is the policy that people build from their
// decisions ("approve and remember", docs/approvals.md): rules proposed
// from a decided approval by an approver, accepted into the layer by an
// administrator, removed by one. The store keeps each rule's text (policy
// YAML) as given and never parses it; package internal/layer does.
//
// The layer is versioned per tenant: version 0 is the empty layer, and
// every change (an acceptance, a removal) makes the next version and is
// kept in the layer's history with who made it and when. Every method
// takes the tenant and touches that tenant's rules only: a rule of another
// tenant is [store.ErrNotFound]. Only the server's administrators and the
// local command write the layer; no tool does (the store's file is outside
// every workspace and protected from the tools). The layer is edited
// through the server's /v1/rules and `tollgate policy rules`, and applied
// to the runs the command and the server build (internal/runcore's
// WithLayer); the memory, SQLite and PostgreSQL stores implement
// [Layers].
package layerstore

import (
	"context"
	"time"

	"github.com/tollgate-dev/tollgate/tool"
)

// LayerRuleStatus is a layer rule's status: proposed, then accepted, and
// removed (from either).
type LayerRuleStatus string

// Layer rule statuses.
const (
	LayerProposed LayerRuleStatus = "proposed"
	LayerAccepted LayerRuleStatus = "accepted"
	LayerRemoved  LayerRuleStatus = "removed"
)

// LayerAction is what a change of the layer did.
type LayerAction string

// Layer actions.
const (
	// LayerAccept: a proposed rule entered the layer.
	LayerAccept LayerAction = "accept"
	// LayerRemove: an accepted rule left the layer, or a proposal was
	// dropped.
	LayerRemove LayerAction = "remove"
)

// LayerRule is one rule of a tenant's layer, or a proposal for one.
type LayerRule struct {
	// ID names the rule within its tenant: letters, digits, '-', '_' and
	// '.', at most 128 bytes.
	ID     string `json:"id"`
	Tenant string `json:"tenant"`
	// Text is the rule as policy YAML (a document with one rule), at most
	// 16 KiB; the store keeps it as given.
	Text string `json:"text"`
	// Effect ("allow" or "deny") and Tool describe the rule for listings.
	Effect string `json:"effect"`
	Tool   string `json:"tool"`
	// Source names the decision the rule was proposed from
	// ("RUN/APPROVAL"), empty when none.
	Source string          `json:"source,omitempty"`
	Status LayerRuleStatus `json:"status"`
	// ProposedBy and ProposedAt: who proposed it, when (set by the store).
	ProposedBy tool.Principal `json:"proposedBy,omitzero"`
	ProposedAt time.Time      `json:"proposedAt"`
	// AcceptedBy, AcceptedAt and Version: who accepted it, when, and the
	// layer version its acceptance made; zero while proposed.
	AcceptedBy tool.Principal `json:"acceptedBy,omitzero"`
	AcceptedAt *time.Time     `json:"acceptedAt,omitempty"`
	Version    int64          `json:"version,omitempty"`
	// RemovedBy and RemovedAt: who removed it, when.
	RemovedBy tool.Principal `json:"removedBy,omitzero"`
	RemovedAt *time.Time     `json:"removedAt,omitempty"`
	// MAC seals an accepted rule with the store's decision key
	// (an HMAC-SHA256 of its tenant, ID, text, effect, status, who accepted
	// it and its version); the store sets it.
	MAC string `json:"-"`
}

// LayerChange is one entry of a layer's history: the version it made,
// what it did to which rule, who did it and when.
type LayerChange struct {
	Tenant  string      `json:"tenant"`
	Version int64       `json:"version"`
	Action  LayerAction `json:"action"`
	RuleID  string      `json:"ruleId"`
	// Text, Effect and Tool are the rule's.
	Text   string         `json:"text"`
	Effect string         `json:"effect"`
	Tool   string         `json:"tool"`
	By     tool.Principal `json:"by"`
	At     time.Time      `json:"at"`
}

// Layer is a tenant's rule layer at one version.
type Layer struct {
	Tenant string `json:"tenant"`
	// Version counts the changes made to the layer (0: never changed).
	Version int64 `json:"version"`
	// Rules are the accepted rules, in the order they were accepted.
	Rules []LayerRule `json:"rules"`
	// Proposed are the proposals waiting for an administrator, oldest
	// first.
	Proposed []LayerRule `json:"proposed"`
	// Unsealed are rules the store holds as accepted that carry no valid
	// MAC: written into the database directly,
	// altered there, or accepted with another store key. They are not in
	// Rules and apply to nothing.
	Unsealed []LayerRule `json:"unsealed,omitempty"`
}

// Layers keeps each tenant's rule layer. The memory, SQLite and
// PostgreSQL stores implement it; find it on a [store.Store] by type assertion.
// Every method is atomic, also across processes sharing one store.
type Layers interface {
	// ProposeLayerRule stores r as a proposal of r.Tenant's layer and
	// returns it as stored (Status proposed, ProposedAt set). Errors:
	// [store.ErrExists] for a taken ID; [store.ErrInvalid] for a bad ID, text, effect
	// or proposer, or a layer that holds 1,000 rules (proposed and accepted).
	ProposeLayerRule(ctx context.Context, r LayerRule) (LayerRule, error)
	// AcceptLayerRule moves the proposal id of tenant into the layer, as
	// the next version, accepted by by. Errors: [store.ErrNotFound];
	// [store.ErrDecided] when it is not a proposal; [store.ErrInvalid] for a bad by.
	AcceptLayerRule(ctx context.Context, tenant, id string, by tool.Principal) (LayerChange, error)
	// RemoveLayerRule removes the rule or proposal id of tenant, as the
	// next version. Errors: [store.ErrNotFound]; [store.ErrDecided] when it was
	// removed already; [store.ErrInvalid] for a bad by.
	RemoveLayerRule(ctx context.Context, tenant, id string, by tool.Principal) (LayerChange, error)
	// GetLayer returns tenant's layer as it is now: the accepted rules
	// whose seal is missing or wrong are in Unsealed, not in Rules.
	GetLayer(ctx context.Context, tenant string) (Layer, error)
	// LayerVersion returns the version of tenant's layer (0: never
	// changed): one cheap read, for a caller that keeps the layer of a
	// version and reads it again only when the version changed.
	LayerVersion(ctx context.Context, tenant string) (int64, error)
	// LayerHistory returns the last limit changes of tenant's layer,
	// newest first (limit as [store.RunFilter]'s Limit; [store.ErrInvalid] when
	// negative).
	LayerHistory(ctx context.Context, tenant string, limit int) ([]LayerChange, error)
}
