package connectors

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/dataflow"
)

// A message over the server's max payload (one row too large to split by
// rows) goes out as chunks, as the relay moves large batches: each chunk
// carries ChunkHeader "i/n" (0-based) and ChunkIDHeader, an id unique to
// the message, so chunks of messages from several publishers on one subject
// can interleave. tierflow's sources put the message back together; a
// message larger than the reader's pending budget is dropped as oversized
// (or fails the query under --on-error fail).
const (
	ChunkHeader   = "Tierflow-Chunk"
	ChunkIDHeader = "Tierflow-Chunk-Id"
)

// chunkOverhead is room for a chunk's headers within the max payload.
const chunkOverhead = 256

// Chunks returns what publishes data on subject: one message when it fits
// max (0: no limit), else its chunks. Anything that publishes payloads of
// unbounded size uses it (sinks, a query's results to its client).
func Chunks(subject string, data []byte, max int) []*nats.Msg {
	if max <= 0 || len(data) <= max {
		return []*nats.Msg{{Subject: subject, Data: data}}
	}
	size := max - chunkOverhead
	n := (len(data) + size - 1) / size
	id := nats.NewInbox()[len(nats.InboxPrefix):]
	out := make([]*nats.Msg, 0, n)
	for i := 0; i < n; i++ {
		m := nats.NewMsg(subject)
		m.Data = data[i*size : min((i+1)*size, len(data))]
		m.Header.Set(ChunkHeader, fmt.Sprintf("%d/%d", i, n))
		m.Header.Set(ChunkIDHeader, id)
		out = append(out, m)
	}
	return out
}

// Assembler puts chunked messages back together. The zero value is ready.
type Assembler struct {
	Limit int // bytes one message may have (0: no limit)
	// Charger, when set, is the query's memory (its allocator's
	// dataflow.Charger): what the messages in progress hold is charged
	// to it, so that chunks that never end (many first chunks, each of
	// a message never finished) fail the query for its memory instead
	// of growing the worker.
	Charger dataflow.Charger
	partial map[string]*partialMsg
}

type partialMsg struct {
	next, of int
	data     []byte
	over     bool  // past the limit: the rest is read and dropped
	charged  int64 // bytes charged to Charger
}

// drop forgets message id, uncharging what it held.
func (a *Assembler) drop(id string) {
	if p := a.partial[id]; p != nil {
		if a.Charger != nil && p.charged > 0 {
			a.Charger.Uncharge(p.charged)
		}
		delete(a.partial, id)
	}
}

// Release forgets every message in progress (the reader is closing).
func (a *Assembler) Release() {
	for id := range a.partial {
		a.drop(id)
	}
}

// errOversized: a chunked message over the reader's limit.
var errOversized = fmt.Errorf("%w: chunked message over the reader's limit", ErrTooLarge)

// Add takes one chunk; it returns the message once its last chunk came
// (done), or an error wrapping ErrBadMessage (out of order) or ErrTooLarge
// (over Limit).
func (a *Assembler) Add(h nats.Header, data []byte) (whole []byte, done bool, err error) {
	id := h.Get(ChunkIDHeader)
	i, n, ok := parseChunk(h.Get(ChunkHeader))
	if !ok || id == "" {
		return nil, false, fmt.Errorf("%w: chunk header %q id %q", ErrBadMessage, h.Get(ChunkHeader), id)
	}
	if a.partial == nil {
		a.partial = map[string]*partialMsg{}
	}
	p := a.partial[id]
	if p == nil {
		if i != 0 {
			return nil, false, fmt.Errorf("%w: chunk %d/%d of %s without its first", ErrBadMessage, i, n, id)
		}
		p = &partialMsg{of: n}
		a.partial[id] = p
	}
	if i != p.next || n != p.of {
		a.drop(id)
		return nil, false, fmt.Errorf("%w: chunk %d/%d of %s where %d/%d was due", ErrBadMessage, i, n, id, p.next, p.of)
	}
	p.next++
	if !p.over {
		if a.Limit > 0 && len(p.data)+len(data) > a.Limit {
			if a.Charger != nil && p.charged > 0 {
				a.Charger.Uncharge(p.charged)
			}
			p.over, p.data, p.charged = true, nil, 0
		} else {
			if a.Charger != nil {
				if err := a.Charger.Charge(int64(len(data))); err != nil {
					a.drop(id)
					return nil, false, fmt.Errorf("chunked message %s: %w", id, err)
				}
				p.charged += int64(len(data))
			}
			p.data = append(p.data, data...)
		}
	}
	if p.next < p.of {
		return nil, false, nil
	}
	// The whole message goes to its decoder, whose record the query's
	// allocator charges: the chunks' charge ends here.
	a.drop(id)
	if p.over {
		return nil, true, fmt.Errorf("%w (%d bytes at most)", errOversized, a.Limit)
	}
	return p.data, true, nil
}

func parseChunk(s string) (i, n int, ok bool) {
	a, b, found := strings.Cut(s, "/")
	if !found {
		return 0, 0, false
	}
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	return i, n, err1 == nil && err2 == nil && n > 0 && i >= 0 && i < n
}
