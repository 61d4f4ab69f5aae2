package server

import (
	"context"
	"encoding/json"

	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/store"
)

// sessionNotesKey is the key of a session's request data that keeps the
// last prompt and stated intent its agent reported when the request was
// made (beside approval.RequestData's keys, which ignore it).
const sessionNotesKey = "sessionNotes"

// sessionNotes are what a session's agent reported about the call's
// context.
type sessionNotes struct {
	Prompt string `json:"prompt,omitempty"`
	Intent string `json:"intent,omitempty"`
}

// withSessionNotes returns the request data data with n added; data as
// it was when it is not a JSON object.
func withSessionNotes(data json.RawMessage, n sessionNotes) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil || m == nil {
		return data
	}
	b, err := json.Marshal(n)
	if err != nil {
		return data
	}
	m[sessionNotesKey] = b
	out, err := json.Marshal(m)
	if err != nil {
		return data
	}
	return out
}

// sessionContext fills c, the context of request a of a Claude Code or
// Codex session's run, and returns the session's agent: the source and
// workspace the session was opened with, the last prompt and stated
// intent its agent reported with the request (marked Reported), and the
// earlier decisions on the same tool from the session's records.
func (s *Server) sessionContext(ctx context.Context, c *serverapi.RunContext, a store.Approval, run store.Run) string {
	var sc sessionConfig
	_ = json.Unmarshal(run.Config, &sc)
	if c == nil {
		return sc.Agent
	}
	c.Source, c.Workspace = sourceOf(sc.Agent, sc.Source), sc.Workspace
	var d struct {
		Notes sessionNotes `json:"sessionNotes"`
	}
	_ = json.Unmarshal(a.Request.Data, &d)
	c.Prompt, c.Intent = clip(d.Notes.Prompt), clip(d.Notes.Intent)
	c.Reported = c.Prompt != "" || c.Intent != ""
	recs, err := s.toolRecords(ctx, run, a.Tool)
	if err != nil {
		return sc.Agent
	}
	c.Earlier = nil
	for _, r := range recs {
		if r.Name == a.Tool && r.ID != a.CallID && r.Decision.Outcome != gate.OutcomePending {
			c.Earlier = append(c.Earlier, serverapi.EarlierDecision{Outcome: string(r.Decision.Outcome), By: r.Decision.By.String(), Reason: r.Decision.Reason, Args: r.Args})
		}
	}
	if len(c.Earlier) > maxEarlier {
		c.Earlier = c.Earlier[len(c.Earlier)-maxEarlier:]
	}
	return sc.Agent
}
