package sources

import (
	"sync"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/apache/arrow/go/v17/arrow/array"
)

// aheadGate bounds what a parallel reader holds parsed ahead of its
// consumer by bytes of records, not by a count of chunks per core: the
// chunks (or row groups) in flight, from the one being read to the one
// whose records are being handed out, take at most allow bytes, and one
// always goes ahead whatever its size. A count per core made the
// read-ahead of a 16-core worker ~34 MiB, so a query under a 10 MiB limit
// failed in its scan on that machine and ran on a 2-core one: whether a
// query fits its budget would depend on the machine.
//
// A chunk is charged what its records will hold before it is parsed (its
// input bytes times the largest ratio of records to input seen so far;
// before any chunk is measured, half the allowance, so that two go at
// once: one parsed while the next is read), and what they do hold once
// parsed. The nil gate (no budget
// limits the query) admits everything: the channels' capacity bounds the
// read-ahead then.
type aheadGate struct {
	allow int64

	mu     sync.Mutex
	cond   sync.Cond
	held   int64
	ratio  float64 // largest bytes of records per input byte seen; 0: none yet
	closed bool
}

// newAheadGate is a gate of allow bytes; nil for allow <= 0.
func newAheadGate(allow int64) *aheadGate {
	if allow <= 0 {
		return nil
	}
	g := &aheadGate{allow: allow}
	g.cond.L = &g.mu
	return g
}

// acquire waits until a chunk of in input bytes fits (or nothing is
// held), and charges it what its records are expected to hold (before any
// chunk is measured, half the allowance: two go at once, and as a CSV
// chunk is at most a quarter of the allowance, records of up to 2 bytes
// per byte of text fit it); false once the gate is closed (the reader
// stopped).
func (g *aheadGate) acquire(in int64) (charged int64, ok bool) {
	if g == nil {
		return 0, true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for {
		if g.closed {
			return 0, false
		}
		n := g.allow / 2
		if g.ratio > 0 {
			n = int64(float64(in) * g.ratio)
		}
		if g.held == 0 || g.held+n <= g.allow {
			g.held += n
			return n, true
		}
		g.cond.Wait()
	}
}

// settle replaces a chunk's charge (*charged) by what its records hold,
// parsed from in input bytes, and learns their ratio.
func (g *aheadGate) settle(charged *int64, in int64, recs []arrow.Record) {
	if g == nil {
		return
	}
	var n int64
	for _, r := range recs {
		for _, c := range r.Columns() {
			n += allocatedBytes(c.Data())
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if n > 0 && in > 0 {
		g.ratio = max(g.ratio, float64(n)/float64(in))
	}
	g.held += n - *charged
	*charged = n
	g.cond.Broadcast()
}

// release gives back a chunk's charge once its records are handed out.
func (g *aheadGate) release(charged *int64) {
	if g == nil || *charged == 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held -= *charged
	*charged = 0
	g.cond.Broadcast()
}

// close wakes and refuses every waiter: the reader has stopped.
func (g *aheadGate) close() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	g.cond.Broadcast()
}

// aheadChunkBytes is the size of a CSV chunk read ahead under allow bytes
// of read-ahead: csvChunkBytes, or less where the allowance would hold
// fewer than aheadChunks of them, so that several chunks are parsed at
// once under a small budget too (a chunk of a quarter of a 10 MiB budget's
// allowance parses in parallel with the next; a chunk of 1 MiB would go
// alone). Never under csvMinChunkBytes, where a chunk's fixed costs (its
// builders, a record per batch) would dominate.
func aheadChunkBytes(allow int64) int {
	if allow <= 0 {
		return csvChunkBytes
	}
	return int(min(int64(csvChunkBytes), max(allow/aheadChunks, csvMinChunkBytes)))
}

// aheadChunks is how many chunks an allowance is cut into: room for the
// chunk being handed out, one being parsed and two more, when records take
// the bytes of their text.
const aheadChunks = 4

// csvMinChunkBytes is the smallest chunk aheadChunkBytes cuts.
const csvMinChunkBytes = 64 << 10

// allocatedBytes is what d's buffers took from the allocator (their
// capacity: a builder's buffer grows by doubling, and the budget is
// charged the allocation, not the length used).
func allocatedBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Cap())
		}
	}
	for _, c := range d.Children() {
		n += allocatedBytes(c)
	}
	if dict, ok := d.Dictionary().(*array.Data); ok && dict != nil {
		n += allocatedBytes(dict)
	}
	return n
}
