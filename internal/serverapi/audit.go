package serverapi

import (
	"encoding/json"
	"time"

	"github.com/tollgate-dev/tollgate/tool"
)

// AuditEntry is one decided tool call, as GET /v1/audit shows it.
type AuditEntry struct {
	// Time is when the call was decided.
	Time time.Time `json:"time"`
	// RunID, CallID and Tool name the call; Source what started the run
	// ([RunContext.Source]).
	RunID  string `json:"runId"`
	CallID string `json:"callId"`
	Tool   string `json:"tool"`
	Source string `json:"source"`
	// Outcome is the gate's (allowed, approved, denied, declined, ...).
	Outcome string `json:"outcome"`
	// By decided ("rule:no-rm", "person:alice"); Actor, when set, acted on
	// By's behalf; Reason is the decision's reason.
	By     string `json:"by"`
	Actor  string `json:"actor,omitempty"`
	Reason string `json:"reason,omitempty"`
	// RuleAt is where the rule that decided, or the last rule that voted
	// (the one that asked, on an approved call), is written in the run's
	// policy file ("policy.yaml:12:5"), when the file still has it.
	RuleAt string `json:"ruleAt,omitempty"`
	// RulePolicy, with RuleAt, is the agent whose policy file GET
	// /v1/agents/{name}/policy shows, RuleAt's file as it is now; empty
	// when the server's configuration no longer names that file.
	RulePolicy string `json:"rulePolicy,omitempty"`
	// LayerVersion is the version of the tenant's rule layer that decided
	// the call (a remembered allow that answered it, a remembered deny),
	// 0 when the layer did not.
	LayerVersion int64 `json:"layerVersion,omitempty"`
	// Args are the arguments the call ran with (or was refused with).
	Args json.RawMessage `json:"args,omitempty"`
	// Votes are every source that had a say; Shadow the shadow rules'
	// would-be votes.
	Votes  []tool.Vote `json:"votes,omitempty"`
	Shadow []tool.Vote `json:"shadow,omitempty"`
}

// AuditPage is GET /v1/audit.
type AuditPage struct {
	// Entries are the decisions found, in the store's order.
	Entries []AuditEntry `json:"entries"`
	// Truncated is set when more decisions matched than the limit.
	Truncated bool `json:"truncated,omitempty"`
}
