package stdioconn

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// maxBatch is the most messages one batch line may hold.
const maxBatch = 1000

// noBatchesFrom is the first protocol version without JSON-RPC batches (MCP
// specification 2025-06-18, changelog: "Remove support for JSON-RPC
// batching"); as in the SDK, they are accepted until a version is agreed.
const noBatchesFrom = "2025-06-18"

// batches tracks the calls of incoming batches until each has its response
// (JSON-RPC 2.0, "Batch": the responses go back as one array), and the
// protocol version the initialize response agreed.
type batches struct {
	mu      sync.Mutex
	open    map[jsonrpc.ID]*batch // by the call's ID
	initID  jsonrpc.ID
	version string
}

type batch struct {
	unresolved int
	index      map[jsonrpc.ID]int
	responses  []*jsonrpc.Response
}

// readBatch decodes a batch line, queues all but its first message and
// returns that one.
func (c *Conn) readBatch(line []byte) (jsonrpc.Message, error) {
	if !c.batches.allowed() {
		return nil, fmt.Errorf("stdioconn: JSON-RPC batches are not part of protocol %s and later", noBatchesFrom)
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(line, &raws); err != nil {
		return nil, fmt.Errorf("stdioconn: a batch: %w", err)
	}
	if len(raws) == 0 || len(raws) > maxBatch {
		return nil, fmt.Errorf("stdioconn: a batch of %d messages (1 to %d)", len(raws), maxBatch)
	}
	msgs := make([]jsonrpc.Message, 0, len(raws))
	for _, raw := range raws {
		m, err := c.decode(raw)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, m)
	}
	if err := c.batches.add(msgs); err != nil {
		return nil, err
	}
	c.queue = msgs[1:]
	return msgs[0], nil
}

func (b *batches) allowed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.version == "" || b.version < noBatchesFrom
}

// initializing notes the ID of an initialize call, unless one is waiting
// for its response: that one agrees the version.
func (b *batches) initializing(id jsonrpc.ID) {
	b.mu.Lock()
	if !b.initID.IsValid() {
		b.initID = id
	}
	b.mu.Unlock()
}

// answered notes the protocol version of the initialize call's response.
func (b *batches) answered(resp *jsonrpc.Response) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.initID.IsValid() || resp.ID != b.initID {
		return
	}
	b.initID = jsonrpc.ID{}
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if json.Unmarshal(resp.Result, &r) == nil {
		b.version = r.ProtocolVersion
	}
}

// add records the calls of a batch; a call ID seen in an open batch, or
// twice in this one, is an error.
func (b *batches) add(msgs []jsonrpc.Message) error {
	bt := &batch{index: map[jsonrpc.ID]int{}}
	for _, m := range msgs {
		req, ok := m.(*jsonrpc.Request)
		if !ok || !req.ID.IsValid() {
			continue
		}
		key := req.ID
		if _, dup := bt.index[key]; dup {
			return errors.New("stdioconn: a batch holds one call ID twice")
		}
		bt.index[key] = len(bt.responses)
		bt.responses = append(bt.responses, nil)
	}
	if len(bt.responses) == 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for key := range bt.index {
		if _, dup := b.open[key]; dup {
			return errors.New("stdioconn: a batch reuses the ID of a call still open")
		}
	}
	if b.open == nil {
		b.open = map[jsonrpc.ID]*batch{}
	}
	for key := range bt.index {
		b.open[key] = bt
	}
	bt.unresolved = len(bt.responses)
	return nil
}

// complete files resp in its batch: held is false when resp answers no
// batch's call; all is the batch's responses once every call has one.
func (b *batches) complete(resp *jsonrpc.Response) (all []*jsonrpc.Response, held bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.open) == 0 {
		return nil, false
	}
	key := resp.ID
	bt, ok := b.open[key]
	if !ok {
		return nil, false
	}
	delete(b.open, key)
	bt.responses[bt.index[key]] = resp
	bt.unresolved--
	if bt.unresolved > 0 {
		return nil, true
	}
	return bt.responses, true
}

// writeBatch writes responses as one JSON array line.
func (c *Conn) writeBatch(resps []*jsonrpc.Response) error {
	raws := make([]json.RawMessage, len(resps))
	for i, r := range resps {
		data, err := jsonrpc.EncodeMessage(r)
		if err != nil {
			return fmt.Errorf("stdioconn: encoding a batch's response: %w", err)
		}
		raws[i] = data
	}
	data, err := json.Marshal(raws)
	if err != nil {
		return err
	}
	return c.writeLine(data)
}
