package dataflow

import (
	"sync"

	"github.com/apache/arrow/go/v17/arrow/memory"
)

// A query's readers (file scans, each branch of a UNION ALL its own) read
// ahead of the operators that consume them out of one allowance, the
// query's read-ahead (ReadAhead: a quarter of its budget), not one each: a
// query of N scans held N quarters ahead, so a UNION ALL of four scans of
// one file failed under the limit one scan fits, and one of 200 took its
// worker to 1.7 GB. Each reader bounds what it holds ahead by a
// ReadAheadGate of the query's pool; one chunk always goes ahead of each
// reader whatever its size, so every reader makes progress, and a reader
// cuts its chunks from its share of the pool (ReadAheadGate.Share).

// readAheadPool is the allowance a budget's readers share.
type readAheadPool struct {
	allow int64

	mu      sync.Mutex
	cond    sync.Cond
	held    int64
	readers int
}

// readAheadPool is m's pool of allow bytes, made by its first reader.
func (m *Memory) readAheadPool(allow int64) *readAheadPool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ahead == nil {
		m.ahead = &readAheadPool{allow: allow}
		m.ahead.cond.L = &m.ahead.mu
	}
	return m.ahead
}

// ReadAheadGate is one reader's part of its query's read-ahead: what the
// reader holds ahead (chunks or row groups in flight, from the one being
// read to the one whose records are being handed out) is charged to the
// query's pool before it is read, at what it is expected to hold (its
// input bytes times the largest ratio of held bytes to input the reader
// has seen; before it has seen any, half its share: two go at once, one
// parsed while the next is read), and settled at what it does hold once
// parsed. The nil gate (no budget limits the query) admits everything.
// Safe for concurrent use.
type ReadAheadGate struct {
	pool   *readAheadPool
	held   int64
	ratio  float64
	closed bool
}

// NewReadAheadGate is a gate for a reader allocating from mem, in the pool
// of mem's budget; nil when nothing limits mem (ReadAhead is 0).
func NewReadAheadGate(mem memory.Allocator) *ReadAheadGate {
	b := budgetOf(mem)
	allow := b.readAhead()
	if allow <= 0 {
		return nil
	}
	p := b.m.readAheadPool(allow)
	p.mu.Lock()
	p.readers++
	p.mu.Unlock()
	return &ReadAheadGate{pool: p}
}

// Share is the reader's share of its query's read-ahead: the pool over
// the readers reading now (0 for the nil gate).
func (g *ReadAheadGate) Share() int64 {
	if g == nil {
		return 0
	}
	g.pool.mu.Lock()
	defer g.pool.mu.Unlock()
	return g.pool.allow / int64(max(g.pool.readers, 1))
}

// Acquire waits until what in input bytes will hold fits the pool (or
// the reader holds nothing ahead), and charges it; false once the gate is
// closed (the reader stopped).
func (g *ReadAheadGate) Acquire(in int64) (charged int64, ok bool) {
	if g == nil {
		return 0, true
	}
	p := g.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		if g.closed {
			return 0, false
		}
		n := p.allow / int64(max(p.readers, 1)) / 2
		if g.ratio > 0 {
			n = int64(float64(in) * g.ratio)
		}
		if g.held == 0 || p.held+n <= p.allow {
			g.held += n
			p.held += n
			return n, true
		}
		p.cond.Wait()
	}
}

// Settle replaces a charge (*charged) by held, what in input bytes turned
// out to hold, and learns their ratio.
func (g *ReadAheadGate) Settle(charged *int64, in, held int64) {
	if g == nil {
		return
	}
	p := g.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	if held > 0 && in > 0 {
		g.ratio = max(g.ratio, float64(held)/float64(in))
	}
	if !g.closed {
		g.held += held - *charged
		p.held += held - *charged
	}
	*charged = held
	p.cond.Broadcast()
}

// Release gives back a charge once its records are handed out.
func (g *ReadAheadGate) Release(charged *int64) {
	if g == nil || *charged == 0 {
		return
	}
	p := g.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	if !g.closed {
		g.held -= *charged
		p.held -= *charged
	}
	*charged = 0
	p.cond.Broadcast()
}

// Close leaves the pool (what the reader held goes back, and its share to
// the readers left) and wakes and refuses the reader's waiters.
// Idempotent.
func (g *ReadAheadGate) Close() {
	if g == nil {
		return
	}
	p := g.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	if g.closed {
		return
	}
	g.closed = true
	p.held -= g.held
	g.held = 0
	p.readers--
	p.cond.Broadcast()
}

// budgetOf is the budget allocator under mem's wrappers, nil if none.
func budgetOf(mem memory.Allocator) *budgetAllocator {
	for {
		switch a := mem.(type) {
		case *budgetAllocator:
			return a
		case *unrefusedAllocator:
			return a.budgetAllocator
		case Wrapper:
			mem = a.Wrapped()
		default:
			return nil
		}
	}
}
