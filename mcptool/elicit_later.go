package mcptool

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/builtin"
	"github.com/tollgate-dev/tollgate/tool"
)

// ErrAskLater is what an [Options].Elicit returns when no person can answer
// now (no terminal; a server's or a worker's run): the elicitation becomes
// the pending request of the call during which the server asked, as when
// [Options].Elicit is nil (see [Tool.Call]).
var ErrAskLater = errors.New("nobody to ask now")

// laterPrefix begins the ID of the pending request an elicitation becomes
// when nobody can answer at once: "elicitation_", the elicitation's key
// (32 hex digits, see elicitKey), "_", 16 random hex digits.
const laterPrefix = "elicitation_"

// callState is what the elicitation handler knows of one call in flight:
// its tool and arguments, the answer it was retried with, and the pending
// request an elicitation made of it.
type callState struct {
	tool   string // the server's name of the tool
	digest string // approval.Digest of the arguments
	halt   context.CancelFunc

	mu      sync.Mutex
	answer  *tool.Answer // the answer to the call's elicitation, until used
	pending *tool.Request
	records []elicitationRecord
}

// elicitations returns what the call's record keeps of its elicitations.
func (cs *callState) elicitations() []elicitationRecord {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.records
}

// newCallState returns the state of a call of remote with args, carrying
// the answer of ctx when it answers an elicitation.
func newCallState(ctx context.Context, remote string, args json.RawMessage, halt context.CancelFunc) *callState {
	cs := &callState{tool: remote, digest: approval.Digest(args), halt: halt}
	if a := tool.InvocationFrom(ctx).Answer; a != nil && keyOfID(a.ID) != "" {
		ac := *a
		cs.answer = &ac
	}
	return cs
}

// takePending returns the pending request an elicitation made of the call.
func (cs *callState) takePending() *tool.Request {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.pending
}

// elicitKey is what makes two elicitations the same: the server, the tool
// and the digest of the call's arguments, and the elicitation's mode,
// message, the digest of its schema and its URL (without the query, where
// a server puts a fresh nonce each time). 32 hex digits of a SHA-256.
func elicitKey(server string, cs *callState, d *ElicitData) string {
	h := sha256.New()
	u := d.URL
	if p, err := url.Parse(u); err == nil {
		p.RawQuery, p.Fragment = "", ""
		u = p.String()
	}
	schema := ""
	if len(d.RequestedSchema) > 0 {
		schema = approval.Digest(d.RequestedSchema)
	}
	for _, s := range []string{server, cs.tool, cs.digest, d.Mode, d.Message, schema, u} {
		fmt.Fprintf(h, "%d:%s\n", len(s), s)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// keyOfID returns the elicitation key in a pending request's ID, or "".
func keyOfID(id string) string {
	rest, ok := strings.CutPrefix(id, laterPrefix)
	if !ok {
		return ""
	}
	key, _, ok := strings.Cut(rest, "_")
	if !ok || len(key) != 32 {
		return ""
	}
	if _, err := hex.DecodeString(key); err != nil {
		return ""
	}
	return key
}

// inFlight returns the calls in flight on the server.
func (c *conn) inFlight() []*callState {
	var out []*callState
	c.calls.Range(func(_, v any) bool {
		out = append(out, v.(*callState))
		return true
	})
	return out
}

// elicitLater answers an elicitation nobody can answer now. A call in
// flight that was retried with the answer to this very elicitation (same
// key) gets that answer, once. Otherwise the call during which the server
// asked (the only call in flight on the server) halts: the elicitation
// becomes its pending request, the server is told cancel and the call is
// cancelled. With several calls in flight, none can be told apart as the
// asker: the server is told cancel. by names who gave a stored answer.
func (c *conn) elicitLater(d *ElicitData) (res *mcp.ElicitResult, outcome, by string) {
	calls := c.inFlight()
	for _, cs := range calls {
		if res, who, ok := c.replay(cs, elicitKey(c.name, cs, d), d); ok {
			return res, "answered from a stored answer: " + res.Action, who
		}
	}
	if len(calls) != 1 {
		c.o.Logger.Warn("mcp server's elicitation cancelled: several calls in flight, none known as the asker", "server", c.name, "calls", len(calls))
		return &mcp.ElicitResult{Action: elicitCancel}, fmt.Sprintf("cancelled: %d calls in flight, none known as the asker", len(calls)), ""
	}
	cs := calls[0]
	req, err := laterRequest(elicitKey(c.name, cs, d), d)
	if err != nil {
		c.o.Logger.Warn("mcp server's elicitation cancelled", "server", c.name, "error", err)
		return &mcp.ElicitResult{Action: elicitCancel}, "cancelled: " + err.Error(), ""
	}
	cs.mu.Lock()
	second := cs.pending != nil
	if !second {
		cs.pending = &req
	}
	cs.mu.Unlock()
	if second {
		return &mcp.ElicitResult{Action: elicitCancel}, "cancelled: the call already waits for an answer", ""
	}
	c.o.Logger.Info("mcp server's elicitation is the call's pending request", "server", c.name, "request", req.ID)
	cs.halt()
	return &mcp.ElicitResult{Action: elicitCancel}, "the call halts for a person's answer: request " + req.ID, ""
}

// replay answers the elicitation with cs's stored answer when that answer
// was given for an elicitation of the same key, and uses the answer up;
// who is who gave it.
// Only a person's answer accepts: any other (a flag's, a hook's) declines.
func (c *conn) replay(cs *callState, key string, d *ElicitData) (*mcp.ElicitResult, string, bool) {
	cs.mu.Lock()
	a := cs.answer
	if a == nil || keyOfID(a.ID) != key {
		cs.mu.Unlock()
		return nil, "", false
	}
	cs.answer = nil
	cs.mu.Unlock()
	res, ok := c.replayed(a, d)
	return res, a.Who().String(), ok
}

// replayed is the server's answer of the stored answer a to d.
func (c *conn) replayed(a *tool.Answer, d *ElicitData) (*mcp.ElicitResult, bool) {
	switch {
	case !a.OK:
		return &mcp.ElicitResult{Action: elicitDecline}, true
	case a.Who().Kind != tool.PrincipalPerson:
		c.o.Logger.Info("mcp server's elicitation declined: not answered by a person", "server", c.name, "by", a.Who().String())
		return &mcp.ElicitResult{Action: elicitDecline}, true
	}
	action, content, err := ElicitAnswer(d, a.Data)
	if err != nil {
		c.o.Logger.Warn("mcp server's elicitation cancelled: the stored answer does not fit it", "server", c.name, "error", err)
		return &mcp.ElicitResult{Action: elicitCancel}, true
	}
	if action != elicitAccept {
		return &mcp.ElicitResult{Action: action}, true
	}
	if d.Mode == "url" {
		content = nil
	}
	return &mcp.ElicitResult{Action: elicitAccept, Content: content}, true
}

// laterRequest is the pending request an elicitation becomes: a question
// (one per field of the form, see elicitQuestions) when the form has 1
// to 10 fields, an input request for another form (answered with the
// content as JSON, or approved to take the defaults), an authorization
// request for URL mode. Its Data is the [ElicitData] with the questions.
func laterRequest(key string, d *ElicitData) (tool.Request, error) {
	var r [8]byte
	_, _ = rand.Read(r[:])
	req := tool.Request{ID: laterPrefix + key + "_" + hex.EncodeToString(r[:]), Kind: tool.KindInput,
		Prompt: fmt.Sprintf("MCP server %q asks: %s", d.Server, printable(d.Message))}
	later := *d
	switch d.Mode {
	case "url":
		req.Kind, req.URL = tool.KindAuthorization, d.URL
		if u, err := url.Parse(d.URL); err == nil {
			req.Prompt = fmt.Sprintf("MCP server %q asks you to open %s: %s", d.Server, u.Redacted(), printable(d.Message))
		}
	default:
		if qs, err := elicitQuestions(d.RequestedSchema); err == nil && fitsQuestionTool(qs) {
			req.Kind, later.Questions = tool.KindQuestion, qs
			req.Prompt += questionsText(qs)
		}
	}
	data, err := json.Marshal(later)
	if err != nil {
		return tool.Request{}, err
	}
	req.Data = data
	return req, nil
}

// isLater reports whether req is the pending request of an elicitation
// (made by laterRequest).
func isLater(req tool.Request) bool { return keyOfID(req.ID) != "" }

// questionsText renders qs under a prompt, one line per field and one per
// choice, numbered as the answers pick them.
func questionsText(qs []builtin.Question) string {
	var b strings.Builder
	for _, q := range qs {
		fmt.Fprintf(&b, "\n[%s] %s", printable(q.Header), q.Question)
		for i, o := range q.Options {
			fmt.Fprintf(&b, "\n  %d. %s", i+1, o.Label)
			if o.Description != "" {
				fmt.Fprintf(&b, ": %s", o.Description)
			}
		}
	}
	return b.String()
}

// fitsQuestionTool reports whether qs are within the question tool's
// limits (options per question, text), so that everything that shows and
// answers its requests takes them; a form that is not is an input request.
func fitsQuestionTool(qs []builtin.Question) bool {
	data, err := json.Marshal(map[string][]builtin.Question{"questions": qs})
	if err != nil {
		return false
	}
	_, err = builtin.ParseQuestions(tool.Request{ID: "check", Kind: tool.KindQuestion, Data: data})
	return err == nil
}
