package serverapi

import (
	"github.com/tollgate-dev/tollgate/internal/layerstore"
)

// ProposeRequest is the body of POST /v1/rules/proposals: remember the
// decision on an approval as a rule of the tenant's layer.
type ProposeRequest struct {
	// Approval is the decided approval's ID (a request of the tenant).
	Approval string `json:"approval"`
	// Effect is "allow" (always allow what was approved) or "deny"
	// (always deny it).
	Effect string `json:"effect"`
}

// RuleLayerView is the answer of GET /v1/rules: the tenant's layer (its
// version, accepted rules and proposals) and its latest changes.
type RuleLayerView struct {
	layerstore.Layer
	// History is the layer's last changes, newest first.
	History []layerstore.LayerChange `json:"history"`
}
