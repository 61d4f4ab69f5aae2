package serverapi

import (
	"encoding/json"
	"time"
)

// StreamEvent is one event of the store's log as GET /v1/events (the data
// of an SSE event whose id is Seq) and /v1/ws carry it.
type StreamEvent struct {
	Seq   int64           `json:"seq"`
	Type  string          `json:"type"`
	RunID string          `json:"runId,omitempty"`
	Time  time.Time       `json:"time"`
	Data  json.RawMessage `json:"data,omitempty"`
}

// WSMessage is a message on /v1/ws, in either direction; V is 1.
//
// From the server: {"v":1,"type":"event","event":{...}} for each store
// event (as on GET /v1/events), and {"v":1,"type":"result","ref":...,
// "approval":{...}} or {"v":1,"type":"autonomy",...} or
// {"v":1,"type":"error","ref":...,"problem":{...}} answering a client
// message with the same ref.
//
// From the client: {"v":1,"type":"approve"|"deny"|"modify","ref":"r1",
// "id":"req_...","argsDigest":"...","reason":"...","editedArgs":{...}}
// (modify is approve with editedArgs, seed 000's server's Modify),
// {"v":1,"type":"answer","ref":"r3","id":"question_...","argsDigest":"...",
// "answer":{"answers":[["blue"]]}} (approve with an answer to a question), and
// {"v":1,"type":"set_autonomy","ref":"r2","level":"cautious","run":"run_..."}.
// The principal is the connection's, as on the HTTP API.
type WSMessage struct {
	// V is the message format's version, 1.
	V int `json:"v"`
	// Type is "event", "result", "autonomy" or "error" from the server;
	// "approve", "deny", "modify", "answer" or "set_autonomy" from the
	// client.
	Type string `json:"type"`
	// Ref is the client's name for a message it sent (any text), repeated
	// on the server's answer to it.
	Ref string `json:"ref,omitempty"`
	// Event is the store event of a server "event" message.
	Event *StreamEvent `json:"event,omitempty"`
	// ID is the approval ("req_...") a client's decision is about.
	ID string `json:"id,omitempty"`
	// ArgsDigest is the digest of the arguments the person was shown
	// ("sha256:" and 64 hex digits); required to approve.
	ArgsDigest string `json:"argsDigest,omitempty"`
	// Reason is the decision's reason, free text.
	Reason string `json:"reason,omitempty"`
	// EditedArgs are the arguments of a "modify" (a JSON object the tool's
	// input schema must accept).
	EditedArgs json.RawMessage `json:"editedArgs,omitempty"`
	// Answer is the answer of an "answer" to a question (the forms of
	// DecisionRequest.Answer).
	Answer json.RawMessage `json:"answer,omitempty"`
	// Level is the autonomy level of a "set_autonomy" (full_auto,
	// supervised, cautious, manual; empty removes the override).
	Level string `json:"level,omitempty"`
	// Run is the run ID a "set_autonomy" is for; empty for the tenant.
	Run string `json:"run,omitempty"`
	// Approval is the decided approval of a server "result".
	Approval *ApprovalView `json:"approval,omitempty"`
	// Autonomy is the change a server "autonomy" message reports.
	Autonomy *AutonomyChange `json:"autonomy,omitempty"`
	// Problem is what went wrong in a server "error" (RFC 9457).
	Problem *Problem `json:"problem,omitempty"`
}
