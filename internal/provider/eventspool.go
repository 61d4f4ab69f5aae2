package provider

import (
	"bufio"
	"io"
	"sync"
)

// maxPooledEventData is the largest event data buffer, in bytes, that
// [PutEvents] keeps for reuse.
const maxPooledEventData = 64 << 10

var eventsPool = sync.Pool{New: func() any { return new(Events) }}

// GetEvents is [NewEventsLimit] with an Events from a pool, whose buffers
// (4 KiB for lines, the data of the largest event it read) are reused: a
// stream costs no allocation for its reader. Give it back with [PutEvents]
// once its events have been read.
func GetEvents(r io.Reader, limit int64) *Events {
	e := eventsPool.Get().(*Events)
	if limit <= 0 {
		limit = MaxBodyBytes
	}
	e.body = capReader{r: r, left: limit, limit: limit}
	e.sc = *bufio.NewScanner(&e.body)
	e.sc.Buffer(e.buf[:0], MaxEventBytes)
	e.event, e.data, e.err = e.evbuf[:0], e.data[:0], nil
	return e
}

// PutEvents gives e, from [GetEvents], back to the pool. Neither e nor the
// type and data it returned may be used after. A nil e is ignored.
func PutEvents(e *Events) {
	if e == nil || cap(e.data) > maxPooledEventData {
		return
	}
	e.body, e.sc, e.err = capReader{}, bufio.Scanner{}, nil
	e.event, e.data = e.evbuf[:0], e.data[:0]
	eventsPool.Put(e)
}
