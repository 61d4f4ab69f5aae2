package serverapi

import (
	"time"

	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/mcpgateway"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// GateAskRequest is the body of POST /v1/gate/asks: a call the caller's
// gate decided to ask about ([gate.Gate.Decide] returned Pending), in the
// session it belongs to. The run is the session's of the token's
// principal; Session.Client is ignored (the token says who asks).
type GateAskRequest struct {
	Session mcpgateway.Session `json:"session"`
	Call    gate.Call          `json:"call"`
	Pending gate.Pending       `json:"pending"`
}

// GateAskView is an asked call's approval as its caller sees it.
type GateAskView struct {
	// RunID is the session's run; ApprovalID the approval (the request's
	// ID); the page shows them at /#run=RUNID.
	RunID      string `json:"runId"`
	ApprovalID string `json:"approvalId"`
	// Status is pending, approved, denied or expired. An approved one is
	// used by the GET that returns it: once.
	Status store.Status `json:"status"`
	// Answer is the decision, on approved and denied: who, why, and on
	// an edit the new arguments (Data), which the caller's gate validates
	// and authorizes again.
	Answer *tool.Answer `json:"answer,omitempty"`
	// ExpiresAt is when the request stops being answerable.
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
}

// GateRecordRequest is the body of POST /v1/gate/records.
type GateRecordRequest struct {
	Session mcpgateway.Session `json:"session"`
	Record  gate.Record        `json:"record"`
}
