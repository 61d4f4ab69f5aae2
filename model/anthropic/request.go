package anthropic

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/tollgate-dev/tollgate/model"
)

// request translates a tollgate request into a Messages API request.
func (m *Model) request(ctx context.Context, req *model.Request) (wireRequest, error) {
	return m.requestWith(ctx, req, new(scratch))
}

// scratch is room for the turns of a short request, from scratchPool,
// until the request is encoded.
type scratch struct {
	blocks [8]wireBlock
	texts  [4]wireText
	turns  [4]wireMessage
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// free clears sc, which must no longer be used, and puts it back into the
// pool.
func (sc *scratch) free() {
	*sc = scratch{}
	scratchPool.Put(sc)
}

// requestWith is request, with the turns in sc when they fit: the request
// is valid while sc is.
func (m *Model) requestWith(ctx context.Context, req *model.Request, sc *scratch) (wireRequest, error) {
	id := cmp.Or(req.Model, m.model)
	if id == "" {
		return wireRequest{}, errors.New("anthropic: no model ID: set Request.Model or Options.Model")
	}
	w := wireRequest{Model: id, MaxTokens: m.maxTokens} // rule 9: at least 1
	if req.MaxTokens > 0 {
		w.MaxTokens = req.MaxTokens
	}
	if c := m.tools.Load(); c.matches(req.Tools) {
		w.Tools = c.wire
	} else if len(req.Tools) > 0 {
		tools, err := m.wireTools(req.Tools)
		if err != nil {
			return wireRequest{}, err
		}
		w.Tools = tools
	}
	msgs, err := messagesWith(req.Messages, sc)
	if err != nil {
		return wireRequest{}, err
	}
	w.Messages = msgs
	for _, msg := range req.Messages {
		if msg.Role == model.RoleSystem && strings.TrimSpace(msg.Content) != "" {
			w.System = append(w.System, wireText{Type: "text", Text: msg.Content})
		}
	}
	if req.Temperature != nil {
		if m.temperature {
			t := min(max(*req.Temperature, 0), 1) // rule 11 (OpenAI's range is 0 to 2)
			w.Temperature = &t
		} else {
			m.log.LogAttrs(ctx, slog.LevelDebug, "temperature not sent: the API version rejects sampling parameters")
		}
	}
	return w, nil
}

// The Messages API's rules for a request, which [messages] and the tool
// checks of params keep by construction
// (https://docs.anthropic.com/en/api/messages):
//
//  1. messages is not empty, and its turns alternate between user and
//     assistant, starting with user;
//  2. a text block holds non-whitespace text, and the final assistant turn
//     does not end with whitespace;
//  3. tool_use.input is a JSON object;
//  4. tool_use ids match ^[a-zA-Z0-9_-]+$;
//  5. every tool_use of an assistant turn has its tool_result in the user
//     turn right after it, and every tool_result answers a tool_use of the
//     assistant turn right before it;
//  6. in a user turn, the tool_result blocks come before any other block;
//  7. a tool_result with is_error set has content;
//  8. tool names match ^[a-zA-Z0-9_-]{1,128}$ and are unique, and a tool's
//     input_schema is a JSON object of type "object";
//  9. max_tokens is at least 1;
//  10. tool_use ids are unique in the request, across turns too ("`tool_use`
//     ids must be unique");
//  11. temperature, under an API version that takes it, is from 0 to 1;
//  12. a tool_use block has a name (the field is required).

// Texts the provider writes where the API needs content tollgate's transcript
// does not have.
const (
	// emptyErrorText is the content of a failed tool result without text.
	emptyErrorText = "the tool call failed without a message"
	// missingResultText answers a tool call the transcript has no result for.
	missingResultText = "no result was recorded for this tool call"
	// continueText opens a conversation that would otherwise start with an
	// assistant turn.
	continueText = "(continue)"
	// unnamedTool names a tool call that has no name (a model's call that
	// named no tool, which failed as an unknown tool).
	unnamedTool = "unnamed_tool"
)

// turn is one user or assistant turn under construction.
type turn struct {
	assistant bool
	results   []wireBlock // tool_result blocks, user turns only
	blocks    []wireBlock // for an assistant turn, its tool_use blocks are its calls
}

// messages translates a transcript into Messages API turns that keep rules
// 1 to 7 above whatever the transcript holds: system messages are skipped
// (the caller hoists them); consecutive messages of one role merge into one
// turn; blank text is left out; arguments that are not a JSON object are sent
// as {} (the transcript keeps the model's text); ids are mapped onto the
// allowed alphabet; a tool call without a result is answered by an error
// result, a result that answers no call of the turn before becomes text; a
// conversation that starts with the assistant gets a short user turn first.
// The only error is an unknown role, or a transcript with no content at all.
func messages(in []model.Message) ([]wireMessage, error) {
	return messagesWith(in, new(scratch))
}

// messagesWith is messages, with the blocks, texts and turns in sc when
// they fit.
func messagesWith(in []model.Message, sc *scratch) ([]wireMessage, error) {
	// The blocks of all turns share one array, the results another part of
	// it and their texts a second one: only the last turn grows, so each
	// turn's blocks and results stay contiguous. At most one turn per
	// message, one for a conversation that starts with the assistant and
	// one that answers trailing calls; a short transcript keeps its turns
	// on the stack.
	nBlocks, nResults := 0, 0
	for _, msg := range in {
		switch msg.Role {
		case model.RoleUser:
			if strings.TrimSpace(msg.Content) != "" {
				nBlocks++
			}
		case model.RoleAssistant:
			if strings.TrimSpace(msg.Content) != "" {
				nBlocks++
			}
			nBlocks += len(msg.ToolCalls)
		case model.RoleTool:
			nResults++
		}
	}
	arena := sc.blocks[:]
	if n := nBlocks + nResults; n > len(arena) {
		arena = make([]wireBlock, n)
	}
	texts := sc.texts[:0]
	if nResults > len(sc.texts) {
		texts = make([]wireText, 0, nResults)
	}
	nb, nr := 0, nBlocks // the next free block and result
	addBlock := func(t *turn, b wireBlock) {
		arena[nb] = b
		nb++
		t.blocks = arena[nb-len(t.blocks)-1 : nb : nb]
	}
	var stack [8]turn
	turns := stack[:0]
	if len(in)+2 > len(stack) {
		turns = make([]turn, 0, len(in)+2)
	}
	last := func(assistant bool) *turn {
		if n := len(turns); n > 0 && turns[n-1].assistant == assistant {
			return &turns[n-1]
		}
		turns = append(turns, turn{assistant: assistant})
		return &turns[len(turns)-1]
	}
	for i, msg := range in {
		switch msg.Role {
		case model.RoleSystem:
		case model.RoleUser:
			if strings.TrimSpace(msg.Content) != "" {
				addBlock(last(false), textBlock(msg.Content))
			}
		case model.RoleAssistant:
			if strings.TrimSpace(msg.Content) == "" && len(msg.ToolCalls) == 0 {
				continue
			}
			t := last(true)
			if strings.TrimSpace(msg.Content) != "" {
				addBlock(t, textBlock(msg.Content))
			}
			for _, c := range msg.ToolCalls {
				addBlock(t, wireBlock{Type: "tool_use", ID: toolUseID(c.ID), Name: cmp.Or(c.Name, unnamedTool), Input: inputObject(c.Arguments)}) // rule 12
			}
		case model.RoleTool:
			tr := wireBlock{Type: "tool_result", ToolUseID: toolUseID(msg.ToolCallID), IsError: msg.IsError}
			text := msg.Content
			if msg.IsError && strings.TrimSpace(text) == "" {
				text = emptyErrorText
			}
			if strings.TrimSpace(text) != "" { // rule 2: no blank text, in results too
				texts = append(texts, wireText{Type: "text", Text: text})
				tr.Content = texts[len(texts)-1 : len(texts) : len(texts)]
			}
			t := last(false)
			arena[nr] = tr
			nr++
			t.results = arena[nr-len(t.results)-1 : nr : nr]
		default:
			return nil, fmt.Errorf("anthropic: message %d has unknown role %q", i, msg.Role)
		}
	}
	// Rule 5: pair results with the calls of the assistant turn before.
	for i := range turns {
		t := &turns[i]
		if t.assistant {
			continue
		}
		var calls []wireBlock
		if i > 0 {
			calls = turns[i-1].blocks
		}
		t.results, t.blocks = pairResults(calls, t.results, t.blocks)
	}
	if n := len(turns); n > 0 && turns[n-1].assistant && hasCalls(turns[n-1].blocks) {
		// A transcript that ends on tool calls: answer them, so that the
		// model can go on.
		var t turn
		t.results, t.blocks = pairResults(turns[n-1].blocks, nil, nil)
		turns = append(turns, t)
	}
	uniqueToolUseIDs(turns)
	if len(turns) == 0 {
		return nil, errors.New("anthropic: the request has no user or assistant content (the Messages API needs at least one message)")
	}
	if turns[0].assistant {
		turns = slices.Insert(turns, 0, turn{blocks: []wireBlock{textBlock(continueText)}})
	}
	out := sc.turns[:0]
	if len(turns) > len(sc.turns) {
		out = make([]wireMessage, 0, len(turns))
	}
	for i, t := range turns {
		if t.assistant {
			if i == len(turns)-1 {
				trimFinalText(t.blocks)
			}
			out = append(out, wireMessage{Role: "assistant", Content: t.blocks})
			continue
		}
		content := t.results
		switch {
		case len(t.blocks) == 0:
		case len(content) == 0:
			content = t.blocks
		default:
			content = append(content, t.blocks...)
		}
		out = append(out, wireMessage{Role: "user", Content: content})
	}
	return out, nil
}

// uniqueToolUseIDs keeps rule 10 in turns, whose results [pairResults] has
// left one per call of the assistant turn before, in their order: a tool_use
// id that an earlier block of the request already has (a server that numbers
// its calls per turn, as Kimi's "functions.read_file:0", or two ids that
// [toolUseID] maps onto one) becomes the id with a suffix "_2", "_3", ...
// that no block has, and so does the result that answers it. The transcript
// keeps its own ids. Without a repeat (the common case, checked without
// allocating up to 64 calls) nothing changes.
func uniqueToolUseIDs(turns []turn) {
	var ids []*wireBlock
	var stack [64]*wireBlock
	ids = stack[:0]
	for i := range turns {
		if !turns[i].assistant {
			continue
		}
		for j := range turns[i].blocks {
			if b := &turns[i].blocks[j]; b.Type == "tool_use" {
				ids = append(ids, b)
			}
		}
	}
	repeat := len(ids) > len(stack)
	for i := 1; i < len(ids) && !repeat; i++ {
		for _, e := range ids[:i] {
			if e.ID == ids[i].ID {
				repeat = true
				break
			}
		}
	}
	if !repeat {
		return
	}
	all := make(map[string]bool, len(ids))
	for _, b := range ids {
		all[b.ID] = true
	}
	seen := make(map[string]bool, len(ids))
	for i := range turns {
		if !turns[i].assistant {
			continue
		}
		k := 0 // the call's position among its turn's calls
		for j := range turns[i].blocks {
			b := &turns[i].blocks[j]
			if b.Type != "tool_use" {
				continue
			}
			if seen[b.ID] {
				id := b.ID
				for n := 2; all[id]; n++ {
					id = b.ID + "_" + strconv.Itoa(n)
				}
				all[id] = true
				if i+1 < len(turns) && !turns[i+1].assistant && k < len(turns[i+1].results) {
					turns[i+1].results[k].ToolUseID = id
				}
				b.ID = id
			}
			seen[b.ID] = true
			k++
		}
	}
}

// hasCalls reports whether blocks hold a tool_use block.
func hasCalls(blocks []wireBlock) bool {
	for _, b := range blocks {
		if b.Type == "tool_use" {
			return true
		}
	}
	return false
}

// pairResults returns the tool results of a user turn that follows an
// assistant turn with the blocks prev: one per tool_use block of prev, in
// their order (an error result for a call without one), and the turn's other
// blocks, after text blocks that stand for the results that answer no call
// (or a call answered already).
func pairResults(prev, results, blocks []wireBlock) ([]wireBlock, []wireBlock) {
	if inOrder(prev, results) {
		return results, blocks
	}
	byID := make(map[string]wireBlock, len(results))
	var orphans []wireBlock
	want := make(map[string]bool, len(prev))
	calls := 0
	for _, c := range prev {
		if c.Type == "tool_use" {
			want[c.ID] = true
			calls++
		}
	}
	for _, r := range results {
		id := r.ToolUseID
		if _, dup := byID[id]; dup || !want[id] {
			orphans = append(orphans, r)
			continue
		}
		byID[id] = r
	}
	out := make([]wireBlock, 0, calls)
	for _, c := range prev {
		if c.Type != "tool_use" {
			continue
		}
		r, ok := byID[c.ID]
		if !ok {
			r = wireBlock{Type: "tool_result", ToolUseID: c.ID, IsError: true, Content: []wireText{{Type: "text", Text: missingResultText}}}
		}
		out = append(out, r)
	}
	if len(orphans) == 0 {
		return out, blocks
	}
	texts := make([]wireBlock, 0, len(orphans)+len(blocks))
	for _, tr := range orphans {
		var text strings.Builder
		fmt.Fprintf(&text, "result of tool call %s", tr.ToolUseID)
		if tr.IsError {
			text.WriteString(" (error)")
		}
		text.WriteString(":")
		for _, c := range tr.Content {
			text.WriteString(" " + c.Text)
		}
		texts = append(texts, textBlock(text.String()))
	}
	return out, append(texts, blocks...)
}

// inOrder reports whether results answer the tool_use blocks of prev one
// for one, in their order, with ids that are all different: the common case,
// in which [pairResults] has nothing to reorder, add or turn into text.
func inOrder(prev, results []wireBlock) bool {
	j := 0
	for _, c := range prev {
		if c.Type != "tool_use" {
			continue
		}
		if j >= len(results) || results[j].ToolUseID != c.ID {
			return false
		}
		j++
	}
	if j != len(results) || len(results) > 64 {
		return false // (past 64 results, the maps of pairResults check faster)
	}
	for i := range results {
		for k := range i {
			if results[k].ToolUseID == results[i].ToolUseID {
				return false
			}
		}
	}
	return true
}

// trimFinalText removes trailing whitespace from the last block of the final
// assistant turn when it is text (rule 2). The block stays non-empty: blank
// text blocks are never added.
func trimFinalText(blocks []wireBlock) {
	if n := len(blocks); n > 0 && blocks[n-1].Type == "text" {
		blocks[n-1].Text = strings.TrimRightFunc(blocks[n-1].Text, unicode.IsSpace)
	}
}

// inputObject returns arguments as a tool_use input, which must be a JSON
// object (rule 3): anything else (a cut-off text kept as a JSON string, an
// array, nothing) becomes {}.
func inputObject(args json.RawMessage) json.RawMessage {
	b := bytes.TrimSpace(args)
	if len(b) > 0 && b[0] == '{' && json.Valid(b) {
		return b
	}
	return json.RawMessage("{}")
}

// toolUseID maps id onto the alphabet the API accepts for tool_use ids
// (rule 4): every other byte becomes '_', and an empty id becomes "toolu_".
// Calls and results go through the same mapping, so they still pair up.
func toolUseID(id string) string {
	if id == "" {
		return "toolu_"
	}
	ok := true
	for i := 0; i < len(id) && ok; i++ {
		ok = idByte(id[i])
	}
	if ok {
		return id
	}
	b := []byte(id)
	for i := range b {
		if !idByte(b[i]) {
			b[i] = '_'
		}
	}
	return string(b)
}

func idByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}
