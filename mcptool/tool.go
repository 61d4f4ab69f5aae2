package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/internal/argcheck"
	"github.com/tollgate-dev/tollgate/tool"
)

// Metadata keys that [Tool.Call] sets on every result it returns.
const (
	// metaServer holds the server's name (a string).
	metaServer = "mcpServer"
	// metaTool holds the tool's name on the server (a string).
	metaTool = "mcpTool"
	// metaStructuredContent holds the result's structuredContent as a
	// json.RawMessage, when the server sent one; one nested deeper than
	// argcheck.MaxDepth is held as its JSON text (a string), so that
	// records, states and stores can read it back.
	metaStructuredContent = "mcpStructuredContent"
	// metaContent holds a []contentInfo describing every content item that is
	// not text, when there is one.
	metaContent = "mcpContent"
)

// strictHints returns the hints of every tool of an untrusted server, and the MCP
// specification's defaults for annotations a server leaves out (2025-06-18,
// "Tools: Tool annotations": readOnlyHint false, destructiveHint true,
// idempotentHint false, openWorldHint true). Each is the value under which a
// gate is strictest.
func strictHints() tool.Hints {
	return tool.Hints{ReadOnly: false, Destructive: true, Idempotent: false, OpenWorld: true}
}

// claimedHints maps MCP tool annotations onto [tool.Hints] as the server claims
// them: each hint the annotations set is taken as given, and each one they
// leave out (or nil annotations) gets the MCP default (see strictHints).
//
// The go-sdk decodes readOnlyHint and idempotentHint as plain booleans, so for
// those two "absent" and "false" are the same; both mean the default, false.
func claimedHints(a *mcp.ToolAnnotations) tool.Hints {
	h := strictHints()
	if a == nil {
		return h
	}
	h.ReadOnly = a.ReadOnlyHint
	h.Idempotent = a.IdempotentHint
	if a.DestructiveHint != nil {
		h.Destructive = *a.DestructiveHint
	}
	if a.OpenWorldHint != nil {
		h.OpenWorld = *a.OpenWorldHint
	}
	return h
}

// HintsFor returns the hints tollgate's gates use for a tool with annotations
// a from a server that is trusted or not.
//
// A trusted server's claims are believed: each hint the annotations set is
// taken as given, and each one they leave out (or nil annotations) gets the
// MCP default (2025-06-18, "Tools: Tool annotations": readOnlyHint false,
// destructiveHint true, idempotentHint false, openWorldHint true). The
// go-sdk decodes readOnlyHint and idempotentHint as plain booleans, so for
// those two "absent" and "false" are the same; both mean the default, false.
// HintsFor(a, true) is thus what a server claims, trusted or not.
//
// An untrusted server's annotations may only make a gate stricter, never
// looser. Every MCP default is already the strictest value of its hint (not
// read-only, destructive, not idempotent, open world), so nothing an untrusted
// server claims can tighten a gate further, and every claim that would loosen
// one is disbelieved: HintsFor(a, false) returns those defaults whatever a
// says, the same as HintsFor(nil, false). A claim such as readOnlyHint: true
// from an untrusted server is therefore kept for display (the annotations of
// [Tool.Listed]) but changes no decision.
func HintsFor(a *mcp.ToolAnnotations, trusted bool) tool.Hints {
	if trusted {
		return claimedHints(a)
	}
	return strictHints()
}

// contentInfo describes one content item of a tool result that is not text
// (MCP specification 2025-06-18, "Tools: Tool result").
type contentInfo struct {
	// Type is the MCP content type: "image", "audio", "resource_link" or
	// "resource" (an embedded resource).
	Type string `json:"type"`
	// MIMEType is the item's MIME type, when the server gave one.
	MIMEType string `json:"mimeType,omitempty"`
	// Size is the item's size in bytes (decoded, for base64 data); -1 when unknown.
	Size int64 `json:"size"`
	// URI is the resource's URI (resource links and embedded resources).
	URI string `json:"uri,omitempty"`
	// Name is a resource link's name.
	Name string `json:"name,omitempty"`
}

// String renders the description the model sees, such as
// "[image: image/png, 68 bytes]".
func (c contentInfo) String() string {
	kind := c.Type
	switch c.Type {
	case "resource_link":
		kind = "resource link"
	case "resource":
		kind = "embedded resource"
	}
	var parts []string
	if c.URI != "" {
		parts = append(parts, c.URI)
	}
	if c.Name != "" {
		parts = append(parts, fmt.Sprintf("name %q", c.Name))
	}
	if c.MIMEType != "" {
		parts = append(parts, c.MIMEType)
	}
	if c.Size >= 0 {
		parts = append(parts, fmt.Sprintf("%d bytes", c.Size))
	}
	if len(parts) == 0 {
		return "[" + kind + "]"
	}
	return "[" + kind + ": " + strings.Join(parts, ", ") + "]"
}

// Tool is one tool of an MCP server, as a [tool.Tool]. Its Spec's Name is
// "mcp__<server>__<remote name>", with every byte outside [A-Za-z0-9_-]
// replaced by '_' (as [tool.SanitizeName] does); a name longer than
// [tool.MaxNameLen] is cut and ends with "_" and 8 hex digits of a SHA-256
// of the unsanitized name, so that two long names differing only at their
// ends stay distinct. Its Source "mcp:<server>", its Hints
// [HintsFor] the tool's annotations and the server's trust. It is safe for
// concurrent use. Hosts that show tools may type-assert a tool.Tool to *Tool to
// see what the server claimed.
type Tool struct {
	spec        tool.Spec
	server      string
	remote      string
	annotations *mcp.ToolAnnotations
	trusted     bool
	callTimeout time.Duration
	conn        *conn
	// listed is the tool as the server listed it (see [Tool.Listed]).
	listed *mcp.Tool
}

// newTool makes the tool.Tool of one listed tool. Its error says, in one
// sentence without the tool's name, why the tool cannot be used; the caller
// skips that tool alone (see [SkippedTool]).
func newTool(server string, sc *ServerConfig, t *mcp.Tool, c *conn) (*Tool, error) {
	if err := checkToolName(t.Name); err != nil {
		return nil, err
	}
	var schema *jsonschema.Schema
	if t.InputSchema != nil {
		raw, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("input schema: %w", err)
		}
		schema = new(jsonschema.Schema)
		if err := json.Unmarshal(raw, schema); err != nil {
			return nil, fmt.Errorf("input schema: %w", err)
		}
		// A schema that cannot be used for validation (a $ref to a
		// definition it lacks, say) leaves this tool out here rather than
		// failing every agent that would offer it later; so does one that no
		// arguments object could satisfy (MCP: inputSchema is an object
		// schema). Refs that resolve, to $defs or to draft-07 definitions,
		// are fine.
		if schema.Type != "" && schema.Type != "object" {
			return nil, fmt.Errorf("input schema has type %q; tool arguments are a JSON object", schema.Type)
		}
		if _, err := argcheck.New(schema); err != nil {
			return nil, err
		}
	}
	var ann *mcp.ToolAnnotations
	if t.Annotations != nil {
		a := *t.Annotations
		ann = &a
	}
	h := HintsFor(ann, sc.Trusted)
	return &Tool{
		spec: tool.Spec{
			Name:        toolName(server, t.Name),
			Description: t.Description,
			InputSchema: schema,
			Hints:       &h,
			Source:      "mcp:" + server,
		},
		server:      server,
		remote:      t.Name,
		annotations: ann,
		trusted:     sc.Trusted,
		callTimeout: sc.CallTimeout,
		conn:        c,
		listed:      listedCopy(t),
	}, nil
}

// maxRemoteNameLen bounds the name a server may give a tool, in bytes. The MCP
// specification (2025-11-25, "Tools: Tool names") asks for 1 to 128
// characters; tollgate allows more, since toolName shortens long names, but
// not without end.
const maxRemoteNameLen = 1024

// checkToolName rejects a tool name that cannot be shown or used safely: empty,
// longer than maxRemoteNameLen, not UTF-8, or holding control characters
// (which would reach a terminal through every listing). Other characters are
// replaced by toolName.
func checkToolName(name string) error {
	switch {
	case name == "":
		return errors.New("the tool has an empty name")
	case len(name) > maxRemoteNameLen:
		return fmt.Errorf("the tool's name is %d bytes long; at most %d are allowed", len(name), maxRemoteNameLen)
	case !utf8.ValidString(name):
		return errors.New("the tool's name is not valid UTF-8")
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return fmt.Errorf("the tool's name holds the control character %U", r)
		}
	}
	return nil
}

// Spec returns the tool's spec; its Hints are a fresh copy on every call.
func (t *Tool) Spec() tool.Spec {
	s := t.spec
	h := *t.spec.Hints
	s.Hints = &h
	return s
}

// Server returns the name of the server the tool belongs to.
func (t *Tool) Server() string { return t.server }

// Call sends a tools/call request with args passed through unchanged (empty
// args send {}), and turns the server's answer into a [tool.Result]:
//
//   - the content items, in order, each on its own line: text as it is, and
//     every other kind described by its type, MIME type and size, as
//     "[image: image/png, 68 bytes]" (an embedded text
//     resource is described, then its text follows);
//   - a structuredContent's JSON comes first when no content item is text.
//     When there is text, the text stands for it (the MCP specification asks
//     servers to put the serialized structured result in a text item too),
//     and the structured value is only in the metadata;
//   - isError: true makes an error result with that same output (or a
//     sentence saying the tool failed without a message).
//
// The result's Metadata holds what the package documentation lists
// ("mcpServer", "mcpTool", and when present "mcpStructuredContent",
// "mcpContent", "mcpCutFrom", "mcpElicitations").
//
// Cancelling ctx abandons the call and sends notifications/cancelled to the
// server (MCP specification, "Utilities: Cancellation"); Call then returns
// ctx's error. A call that exceeds the server's CallTimeout is an error result.
// A failure of the protocol or the connection (an unknown tool, a server that
// exited) is returned as an error naming the server and the tool.
//
// A session that is gone is renewed (see [ServerStatus].Renewals): when a
// streamable-HTTP server answers 404 for the session (it restarted; MCP
// specification 2025-06-18, "Transports: Session management"), Call starts a
// new session and sends the call once more, since the server did not run it;
// when the session had already ended before the call (a stdio server that
// exited), Call starts a new one first. A renewal tries at most 3 times,
// backing off 200 ms then 400 ms, each try bounded by the server's Timeout.
// A call that fails while in flight is not sent again: it may have run. A
// renewal during the call is reported to the call's reporter as a notice
// of kind "restart"; the server's progress notifications for the call
// (it is sent with a progress token) as progress ([tool.Invocation.Progress]).
//
// A server's elicitation during the call that nobody can answer now
// ([Options].Elicit nil or returning [ErrAskLater]) halts the call: the
// server is told cancel, the call is cancelled, and Call returns the
// elicitation as a pending request ([tool.Pending]): a question per field
// of the form, its Data the [ElicitData]. Called again
// with the answer ([tool.Invocation].Answer), the call gives it to the server's
// identical elicitation (same server, tool, arguments' digest, message,
// schema's digest and URL without its query), once; any other elicitation
// halts the call again. Only a person's answer accepts
// ([ElicitAnswer] reads its data); another's declines. This relies on the
// server's tool asking before it acts, as the specification's examples do.
func (t *Tool) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	return t.call(ctx, args, nil)
}

// drainGrace is how long the end of a server's answer may still be read
// once a call has returned.
const drainGrace = time.Second

// releaseLater ends a call's contexts drainGrace after the call returned,
// not at once: on streamable HTTP the SDK still reads the end of the
// response stream after the answer has come, and a context ended at that
// moment closes the connection, so the next call pays for a new one. The
// grace bounds what a server that never ends its stream can hold.
func releaseLater(cancels ...context.CancelFunc) {
	time.AfterFunc(drainGrace, func() {
		for _, c := range cancels {
			c()
		}
	})
}

// call is [Tool.Call]; when raw is not nil, it is set to the server's
// answer as it came, when there is one.
func (t *Tool) call(ctx context.Context, args json.RawMessage, raw **mcp.CallToolResult) (tool.Result, error) {
	if len(strings.TrimSpace(string(args))) == 0 || strings.TrimSpace(string(args)) == "null" {
		args = json.RawMessage("{}")
	}
	callCtx, cancel := ctx, context.CancelFunc(func() {})
	if t.callTimeout > 0 {
		callCtx, cancel = context.WithTimeout(ctx, t.callTimeout)
	}
	// A server's elicitation that nobody can answer now halts the call
	// (elicitLater): it is cancelled, and its pending request returned.
	callCtx, halt := context.WithCancel(callCtx)
	defer releaseLater(cancel, halt)
	params := &mcp.CallToolParams{Name: t.remote, Arguments: args}
	// A progress token with every call (MCP specification 2025-06-18,
	// "Utilities: Progress"): the server's notifications/progress for it
	// reach the call's reporter (agent progress events).
	token, done := t.conn.newProgressToken(ctx)
	defer done()
	params.SetProgressToken(token)
	cs := newCallState(ctx, t.remote, args, halt)
	t.conn.calls.Store(token, cs)
	defer t.conn.calls.Delete(token)
	session, gen, dead := t.conn.current()
	startGen := gen
	defer func() {
		if _, now, _ := t.conn.current(); now != startGen {
			t.noticeRenewed(ctx)
		}
	}()
	var err error
	if dead {
		// The session ended before this call (a stdio server that exited, an
		// HTTP session the server dropped): the call was never sent, so a
		// new session may carry it.
		session, gen, err = t.conn.renew(callCtx, gen, errors.New("the session had ended"))
	}
	var res *mcp.CallToolResult
	if err == nil {
		res, err = session.CallTool(callCtx, params)
		if err != nil && refusedUnsent(err) && callCtx.Err() == nil {
			// The session was closing when the call was made (its server
			// exited a moment ago), so the call was never written: a new
			// session may carry it.
			session, gen, err = t.conn.renew(callCtx, gen, err)
			if err == nil {
				res, err = session.CallTool(callCtx, params)
			}
		}
		if err != nil && errors.Is(err, mcp.ErrSessionMissing) && callCtx.Err() == nil {
			// HTTP 404 for the session: the server does not know it (it
			// restarted) and did not run the call. Start a new session and
			// send the call once more.
			if session, _, err = t.conn.renew(callCtx, gen, err); err == nil {
				res, err = session.CallTool(callCtx, params)
			}
		}
	}
	if p := cs.takePending(); p != nil && ctx.Err() == nil {
		// The server asked a person and nobody can answer now: whatever the
		// server made of the cancel, the call waits for the answer.
		return tool.Pending(*p), nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return tool.Result{}, fmt.Errorf("mcp server %q: tool %q: %w", t.server, t.remote, ctx.Err())
		}
		if callCtx.Err() != nil {
			r := tool.Errorf("MCP tool %s timed out after %s", t.spec.Name, t.callTimeout)
			r.Metadata = map[string]any{metaServer: t.server, metaTool: t.remote}
			return r, nil
		}
		if errors.Is(err, ErrLoginRequired) {
			tool.InvocationFrom(ctx).Notice(tool.Notice{Kind: noticeLogin, Source: "mcp:" + t.server,
				Message: fmt.Sprintf("MCP server %q needs an OAuth login: run `tollgate mcp login %s`", t.server, t.server)})
		}
		if over := t.conn.oversized.Swap(nil); over != nil && !errors.Is(err, ErrHTTPMessageTooLarge) {
			err = fmt.Errorf("%w (%w)", *over, err)
		}
		return tool.Result{}, fmt.Errorf("mcp server %q: tool %q: %w", t.server, t.remote, err)
	}
	if raw != nil {
		*raw = res
	}
	out := t.result(res)
	if recs := cs.elicitations(); len(recs) > 0 {
		out.Metadata[metaElicitations] = recs
	}
	return out, nil
}

// noticeRenewed tells the call's reporter that the server's session was
// renewed during the call (agent notice events).
func (t *Tool) noticeRenewed(ctx context.Context) {
	msg := fmt.Sprintf("MCP server %q was started again: its process had exited", t.server)
	if t.conn.sc.URL != "" {
		msg = fmt.Sprintf("MCP server %q was given a new session: it no longer knew the old one (it restarted)", t.server)
	}
	tool.InvocationFrom(ctx).Notice(tool.Notice{Kind: noticeRestart, Source: "mcp:" + t.server, Message: msg})
}

// refusedUnsent reports whether err is the SDK refusing a call because its
// connection was already closing, before anything was written. The SDK wraps
// its internal jsonrpc2.ErrClientClosing in [mcp.ErrConnectionClosed] with %v,
// so only the text ("client is closing") tells it apart from a connection that
// closed while the call was in flight (which may have run the call).
func refusedUnsent(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) && strings.Contains(err.Error(), "client is closing")
}

func (t *Tool) result(res *mcp.CallToolResult) tool.Result {
	meta := map[string]any{metaServer: t.server, metaTool: t.remote}
	var lines []string
	var infos []contentInfo
	hasText := false
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			lines = append(lines, c.Text)
			hasText = true
			continue
		case *mcp.EmbeddedResource:
			info := contentInfo{Type: "resource", Size: -1}
			if r := c.Resource; r != nil {
				info.URI, info.MIMEType = r.URI, r.MIMEType
				if r.Blob != nil {
					info.Size = int64(len(r.Blob))
				} else {
					info.Size = int64(len(r.Text))
				}
				infos = append(infos, info)
				lines = append(lines, info.String())
				if r.Blob == nil && r.Text != "" {
					lines = append(lines, r.Text)
				}
				continue
			}
			infos = append(infos, info)
			lines = append(lines, info.String())
			continue
		}
		info := describe(c)
		infos = append(infos, info)
		lines = append(lines, info.String())
	}
	if res.StructuredContent != nil {
		if raw, err := json.Marshal(res.StructuredContent); err == nil {
			meta[metaStructuredContent] = json.RawMessage(raw)
			if argcheck.TooDeep(raw) {
				// Kept as text: the records, the run's state and the
				// stores that hold them must read it back.
				meta[metaStructuredContent] = string(raw)
			}
			if !hasText {
				lines = append([]string{string(raw)}, lines...)
			}
		}
	}
	out := strings.Join(lines, "\n")
	if len(infos) > 0 {
		meta[metaContent] = infos
	}
	if n, ok := res.Meta[cutMeta].(float64); ok {
		meta[metaCut] = int64(n)
	}
	if res.IsError {
		if out == "" {
			out = fmt.Sprintf("MCP tool %s failed without a message", t.spec.Name)
		}
		return tool.Result{Output: out, IsError: true, Metadata: meta}
	}
	return tool.Result{Output: out, Metadata: meta}
}

// describe returns the contentInfo of a content item that is neither text nor
// an embedded resource.
func describe(c mcp.Content) contentInfo {
	switch c := c.(type) {
	case *mcp.ImageContent:
		return contentInfo{Type: "image", MIMEType: c.MIMEType, Size: int64(len(c.Data))}
	case *mcp.AudioContent:
		return contentInfo{Type: "audio", MIMEType: c.MIMEType, Size: int64(len(c.Data))}
	case *mcp.ResourceLink:
		size := int64(-1)
		if c.Size != nil {
			size = *c.Size
		}
		return contentInfo{Type: "resource_link", MIMEType: c.MIMEType, Size: size, URI: c.URI, Name: c.Name}
	}
	// A kind this version does not know: name its wire type.
	info := contentInfo{Type: "unknown", Size: -1}
	if raw, err := c.MarshalJSON(); err == nil {
		var w struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(raw, &w) == nil && w.Type != "" {
			info.Type = w.Type
		}
	}
	return info
}

// The kinds of the notices mcptool gives (tool.Notice's Kind).
const (
	// noticeRestart: the server was started again, or given a new
	// session, during the call.
	noticeRestart = "restart"
	// noticeElicitation: the server asked the person for input during the
	// call, and what became of it.
	noticeElicitation = "elicitation"
	// noticeLogin: the server asked for an OAuth login during the call and
	// nobody could log in there and then.
	noticeLogin = "login"
)
