package mcptool

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/builtin"
	"github.com/tollgate-dev/tollgate/tool"
)

// Limits of an elicitation (MCP specification 2025-11-25, "Client
// features: Elicitation"): what a server may ask, and what a person's answer
// may hold. A request over them is refused with an error (-32602), an answer
// over them is an error for the server.
const (
	// maxElicitMessageBytes bounds the message a server shows the person.
	maxElicitMessageBytes = 4 << 10
	// maxElicitSchemaBytes bounds the requested schema, encoded as JSON.
	maxElicitSchemaBytes = 32 << 10
	// maxElicitFields bounds the properties of the requested schema.
	maxElicitFields = 50
	// maxElicitAnswerBytes bounds the content of an accepted answer.
	maxElicitAnswerBytes = 64 << 10
	// maxElicitURLBytes bounds the URL of a URL-mode elicitation.
	maxElicitURLBytes = 2 << 10
)

// The actions of an elicitation's result (MCP specification 2025-11-25).
const (
	elicitAccept  = "accept"
	elicitDecline = "decline"
	elicitCancel  = "cancel"
)

// ElicitData is the Data of the [tool.Request] that an MCP server's
// elicitation/create becomes ([Options].Elicit): kind [tool.KindInput] for
// form mode, with the requested schema, or [tool.KindAuthorization] for URL
// mode, with the request's URL also in [tool.Request].URL.
type ElicitData struct {
	// Server is the server's name in the configuration.
	Server string `json:"server"`
	// Mode is "form" or "url".
	Mode string `json:"mode"`
	// Message is what the server says it wants, as it wrote it.
	Message string `json:"message"`
	// RequestedSchema is the flat object schema of a form (form mode), with
	// its defaults (SEP-1034) and enums (SEP-1330); the answer's Data is an
	// object of it.
	RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
	// URL is where the person goes (URL mode).
	URL string `json:"url,omitempty"`
	// Questions, in the pending request of an elicitation nobody could
	// answer at once, are the form's fields as questions (one per field,
	// as the question tool asks them), so that whatever answers the
	// question tool's requests answers it.
	Questions []builtin.Question `json:"questions,omitempty"`
}

// screenElicit runs the checks of onElicit that do not depend on who
// answers, for a request handed on to a host's own client ([Forward]):
// malformed or oversized requests and URLs that are not http(s) are
// refused, a form that asks for a secret and a server the policy forbids
// to elicit are declined. It returns nil, nil when the request may go on.
func (c *conn) screenElicit(req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	if req == nil || req.Params == nil {
		return nil, invalidParams("elicitation without params")
	}
	if _, err := c.elicitRequest(req.Params); err != nil {
		if se, ok := errors.AsType[*secretError](err); ok {
			c.o.Logger.Warn("mcp server's form asks for a secret; declined", "server", c.name, "reason", se.Error())
			return &mcp.ElicitResult{Action: elicitDecline}, nil
		}
		c.o.Logger.Warn("mcp server's elicitation refused", "server", c.name, "error", err)
		return nil, invalidParams(err.Error())
	}
	if c.o.ElicitPolicy != nil {
		if ok, by, reason := c.o.ElicitPolicy(c.name, c.sc.Trusted); !ok {
			c.o.Logger.Info("mcp server's elicitation declined by policy", "server", c.name, "by", by, "reason", reason)
			return &mcp.ElicitResult{Action: elicitDecline}, nil
		}
	}
	return nil, nil
}

// onElicit answers a server's elicitation/create: it is checked (mode,
// size, no secrets in form mode), then becomes a [tool.Request] handed to
// [Options].Elicit. The person's answer accepts (with the form's content),
// declines (OK false) or cancels (no answer: an error, or ctx ended). With
// no Elicit set, or one that returns [ErrAskLater], nobody can answer now:
// the call during which the server asked halts on a pending request
// (elicitLater), answered later as the question tool's are. The SDK
// validates the form's schema before, and the accepted content against it
// after, filling in the schema's defaults.
func (c *conn) onElicit(ctx context.Context, req *mcp.ElicitRequest) (res *mcp.ElicitResult, err error) {
	if req == nil || req.Params == nil {
		return nil, invalidParams("elicitation without params")
	}
	outcome, by, reason := "", "", ""
	defer func() {
		action := "refused"
		if res != nil {
			action = res.Action
		}
		c.recordCalls(elicitationRecord{Server: c.name, Mode: modeOf(req.Params), Outcome: action, By: by, Reason: reason})
		c.noticeCalls(tool.Notice{Kind: noticeElicitation, Source: "mcp:" + c.name,
			Message: fmt.Sprintf("the server asked the person for input (%s mode): %s", modeOf(req.Params), cmp.Or(outcome, action))})
	}()
	treq, err := c.elicitRequest(req.Params)
	if se, ok := errors.AsType[*secretError](err); ok {
		// Declined, with the reason in the call's record and notice: the
		// person sees why the server got nothing.
		c.o.Logger.Warn("mcp server's form asks for a secret; declined", "server", c.name, "reason", se.Error())
		by, reason = "runtime", se.Error()
		outcome = fmt.Sprintf("decline (%s: %s)", by, printable(reason))
		return &mcp.ElicitResult{Action: elicitDecline}, nil
	}
	if err != nil {
		c.o.Logger.Warn("mcp server's elicitation refused", "server", c.name, "error", err)
		return nil, invalidParams(err.Error())
	}
	d, err := ParseElicitData(treq)
	if err != nil {
		return nil, invalidParams(err.Error())
	}
	if c.o.ElicitPolicy != nil {
		var ok bool
		if ok, by, reason = c.o.ElicitPolicy(c.name, c.sc.Trusted); !ok {
			c.o.Logger.Info("mcp server's elicitation declined by policy", "server", c.name, "by", by, "reason", reason)
			outcome = fmt.Sprintf("decline (%s: %s)", by, printable(reason))
			return &mcp.ElicitResult{Action: elicitDecline}, nil
		}
		by, reason = "", ""
	}
	if c.o.Elicit == nil {
		res, outcome, by = c.elicitLater(d)
		return res, nil
	}
	c.o.Logger.Info("mcp server asks a person", "server", c.name, "mode", modeOf(req.Params), "request", treq.ID)
	ans, err := c.o.Elicit(ctx, treq)
	switch {
	case errors.Is(err, ErrAskLater):
		res, outcome, by = c.elicitLater(d)
		return res, nil
	case err != nil:
		c.o.Logger.Info("mcp server's elicitation cancelled", "server", c.name, "request", treq.ID, "error", err)
		return &mcp.ElicitResult{Action: elicitCancel}, nil
	case !ans.OK:
		return &mcp.ElicitResult{Action: elicitDecline}, nil
	case modeOf(req.Params) == "url":
		return &mcp.ElicitResult{Action: elicitAccept}, nil
	}
	content, err := elicitContent(ans.Data)
	if err != nil {
		return nil, invalidParams(err.Error())
	}
	return &mcp.ElicitResult{Action: elicitAccept, Content: content}, nil
}

// metaElicitations is the metadata key of an MCP tool's result that lists
// the elicitations the server made during the call ([]elicitationRecord),
// so that the call's record keeps them.
const metaElicitations = "mcpElicitations"

// elicitationRecord is what the record of a call keeps of one elicitation
// its server made: never the person's answer.
type elicitationRecord struct {
	// Server is the server's name; Mode is "form" or "url".
	Server string `json:"server"`
	Mode   string `json:"mode"`
	// Outcome is what the server was told (accept, decline, cancel) or
	// "refused" (an error: a request over the limits).
	Outcome string `json:"outcome"`
	// By and Reason, when a policy declined it, name the rule
	// ("rule:<ID>") and say why; for a form that asks for a secret,
	// declined without asking, By is "runtime" and Reason names what asks.
	// By alone, for an elicitation answered from a stored answer (the call
	// halted on it and was resumed), names who gave that answer
	// ("person:<name>").
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// recordCalls adds r to every call in flight on the server (see
// noticeCalls), for its result's metaElicitations.
func (c *conn) recordCalls(r elicitationRecord) {
	for _, cs := range c.inFlight() {
		cs.mu.Lock()
		if len(cs.records) < maxElicitRecords {
			cs.records = append(cs.records, r)
		}
		cs.mu.Unlock()
	}
}

// maxElicitRecords bounds the elicitations one call's record keeps.
const maxElicitRecords = 32

// noticeCalls reports n to every call in flight on the server: the call
// during which it asked (MCP elicitation names no call), so that the run's
// events and records show it.
func (c *conn) noticeCalls(n tool.Notice) {
	c.progress.Range(func(_, v any) bool {
		tool.InvocationFrom(v.(context.Context)).Notice(n)
		return true
	})
}

// elicitRequest checks p and turns it into the request a person answers.
func (c *conn) elicitRequest(p *mcp.ElicitParams) (tool.Request, error) {
	if len(p.Message) > maxElicitMessageBytes {
		return tool.Request{}, fmt.Errorf("the message is %d bytes; at most %d", len(p.Message), maxElicitMessageBytes)
	}
	d := ElicitData{Server: c.name, Mode: modeOf(p), Message: p.Message}
	var r [8]byte
	_, _ = rand.Read(r[:])
	treq := tool.Request{ID: "elicitation_" + hex.EncodeToString(r[:])}
	switch d.Mode {
	case "form":
		schema, err := json.Marshal(p.RequestedSchema)
		if err != nil {
			return tool.Request{}, fmt.Errorf("requestedSchema: %v", err)
		}
		if len(schema) > maxElicitSchemaBytes {
			return tool.Request{}, fmt.Errorf("requestedSchema is %d bytes; at most %d", len(schema), maxElicitSchemaBytes)
		}
		if err := checkFormSchema(schema); err != nil {
			return tool.Request{}, err
		}
		if err := formSecret(p.Message, schema); err != nil {
			return tool.Request{}, err
		}
		d.RequestedSchema = schema
		treq.Kind = tool.KindInput
		treq.Prompt = fmt.Sprintf("MCP server %q asks: %s", c.name, printable(p.Message))
	case "url":
		u, err := url.Parse(p.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || len(p.URL) > maxElicitURLBytes {
			return tool.Request{}, fmt.Errorf("url: want an http or https URL of at most %d bytes", maxElicitURLBytes)
		}
		d.URL = u.String()
		treq.Kind, treq.URL = tool.KindAuthorization, d.URL
		treq.Prompt = fmt.Sprintf("MCP server %q asks you to open %s: %s", c.name, u.Redacted(), printable(p.Message))
	default:
		return tool.Request{}, fmt.Errorf("unsupported elicitation mode %q", d.Mode)
	}
	data, err := json.Marshal(d)
	if err != nil {
		return tool.Request{}, err
	}
	treq.Data = data
	return treq, nil
}

// checkFormSchema refuses a form with too many fields or a field that asks
// for a secret (by its name, title or description, or format "password").
func checkFormSchema(schema []byte) error {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return fmt.Errorf("requestedSchema: %v", err)
	}
	if len(s.Properties) > maxElicitFields {
		return fmt.Errorf("requestedSchema has %d fields; at most %d", len(s.Properties), maxElicitFields)
	}
	return nil
}

// elicitContent reads an accepted answer's Data: a JSON object, at most
// maxElicitAnswerBytes; empty data is an empty object (the form's defaults).
func elicitContent(data json.RawMessage) (map[string]any, error) {
	data = bytes.TrimSpace(data)
	if len(data) > maxElicitAnswerBytes {
		return nil, fmt.Errorf("the answer is %d bytes; at most %d", len(data), maxElicitAnswerBytes)
	}
	content := map[string]any{}
	if len(data) == 0 || string(data) == "null" {
		return content, nil
	}
	if err := json.Unmarshal(data, &content); err != nil || content == nil {
		return nil, fmt.Errorf("the answer is not a JSON object")
	}
	return content, nil
}

// ParseElicitData reads the [ElicitData] of a request that an elicitation
// became; it fails for another kind of request.
func ParseElicitData(req tool.Request) (*ElicitData, error) {
	if !strings.HasPrefix(req.ID, "elicitation_") {
		return nil, fmt.Errorf("request %s is not an MCP elicitation", req.ID)
	}
	var d ElicitData
	if err := json.Unmarshal(req.Data, &d); err != nil {
		return nil, fmt.Errorf("request %s: %v", req.ID, err)
	}
	return &d, nil
}

func modeOf(p *mcp.ElicitParams) string {
	if p.Mode == "" {
		return "form"
	}
	return p.Mode
}

func invalidParams(msg string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
}

// printable replaces control characters (which could rewrite a terminal)
// with spaces.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}
