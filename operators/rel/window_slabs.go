package rel

import (
	"math"
	"sort"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/internal/arrowx"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

// windowSlabs holds the open windows of a TUMBLE or HOP aggregation in a
// few slabs that all of them share, so that no window owns a Go pointer
// (#25): a window per millisecond kept 15 heap objects a window (its key
// table, builders and accumulators), and the worker's collector marked
// them all, 30-78 ms of CPU for 40,000 windows. Here a window is a slot of
// integers and a map entry of integers (memory the collector does not
// scan), and its groups are ids into one set of accumulators:
//
//   - keys gives an id to each group tuple across windows (its builders
//     keep the tuples' values, frozen into a few arrays to read them back),
//   - pairs gives a group id to each (window, key id),
//   - gkey, gwin and gnext say per group its key, its window and the next
//     group of that window (each window's groups in the order they came).
//
// Closed windows' groups are dead until the slabs are compacted (compact),
// which happens when there are at least as many dead groups as live, so
// its copying costs at most one move per group closed.
type windowSlabs struct {
	mem   memory.Allocator
	types []arrow.DataType
	keys  *keyTable
	vals  keyValues
	pairs *intTable
	accs  []functions.Accumulator
	gkey  []uint32
	gwin  []uint32
	gnext []uint32
	wins  []slabWindow
	bySt  map[int64]uint32 // an open window's slot by its start
	// ends is the open windows' slots as a min-heap by (end, start): an
	// Advance pops the windows it closes, in the order they leave, without
	// looking at the ones that stay open.
	ends []uint32
	dead int      // groups of closed windows, not yet compacted away
	kids []uint32 // a batch's key ids (scratch)
}

// slabWindow is a window's slot: no pointers.
type slabWindow struct {
	start, end int64
	head, tail uint32 // its first and last group (noGroup when none)
	n          uint32 // its groups
	open       bool
}

// Costs GoStateBytes charges for the slabs, per entry of their capacity:
// a window's slot (slabWindow, 40 bytes, in a slice that doubles), its
// id in the heap of ends and its entry in bySt (windowMapBytes); a
// group's key, window and next ids.
const (
	slabWindowBytes = 40
	windowEndBytes  = 4
	slabGroupBytes  = 12
)

// compactMin is the fewest dead groups worth a compaction: below it the
// dead groups' slots take less than the fresh tables a compaction makes.
const compactMin = 1024

func newWindowSlabs(mem memory.Allocator, types []arrow.DataType, accs []functions.Accumulator) *windowSlabs {
	return &windowSlabs{mem: mem, types: types, keys: newGroupKeyTable(mem, types), pairs: newIntTable(), accs: accs, bySt: map[int64]uint32{}}
}

// open is the number of open windows.
func (s *windowSlabs) open() int { return len(s.bySt) }

// window is the slot of the open window [start, end), and whether it was
// just made.
func (s *windowSlabs) window(start, end int64) (uint32, bool) {
	if w, ok := s.bySt[start]; ok {
		return w, false
	}
	w := uint32(len(s.wins))
	s.wins = append(s.wins, slabWindow{start: start, end: end, head: noGroup, tail: noGroup, open: true})
	s.bySt[start] = w
	s.pushEnd(w)
	return w, true
}

// endsBefore orders windows by end, then start: the order they close in.
func (s *windowSlabs) endsBefore(a, b uint32) bool {
	x, y := &s.wins[a], &s.wins[b]
	return x.end < y.end || (x.end == y.end && x.start < y.start)
}

func (s *windowSlabs) pushEnd(w uint32) {
	h := append(s.ends, w)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !s.endsBefore(h[i], h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	s.ends = h
}

func (s *windowSlabs) popEnd() uint32 {
	h := s.ends
	w, last := h[0], len(h)-1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		c := 2*i + 1
		if c >= len(h) {
			break
		}
		if c+1 < len(h) && s.endsBefore(h[c+1], h[c]) {
			c++
		}
		if !s.endsBefore(h[c], h[i]) {
			break
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
	s.ends = h
	return w
}

// lookup sets gids[i-from] to the group of row i's key in window w for
// rows [from, to), making new groups; the accumulators are grown to hold
// them.
func (s *windowSlabs) lookup(w uint32, keys []arrow.Array, from, to int, gids []uint32) {
	if cap(s.kids) < to-from {
		s.kids = make([]uint32, to-from)
	}
	kids := s.kids[:to-from]
	s.keys.lookupBatch(keys, from, to, kids)
	for i, k := range kids {
		p := int64(w)<<32 | int64(k)
		g, ok := s.pairs.get(p)
		if !ok {
			g = s.newGroup(w, k)
			s.pairs.put(p, g)
		}
		gids[i] = g
	}
	for _, acc := range s.accs {
		acc.Grow(len(s.gkey))
	}
}

func (s *windowSlabs) newGroup(w, k uint32) uint32 {
	g := uint32(len(s.gkey))
	s.gkey = append(s.gkey, k)
	s.gwin = append(s.gwin, w)
	s.gnext = append(s.gnext, noGroup)
	s.link(w, g)
	return g
}

// link appends group g to window w's list.
func (s *windowSlabs) link(w, g uint32) {
	win := &s.wins[w]
	if win.tail == noGroup {
		win.head = g
	} else {
		s.gnext[win.tail] = g
	}
	win.tail = g
	win.n++
}

// goBytes is what the slabs hold in Go memory beside the key builders'
// and frozen arrays' buffers (the allocator's): the tables and slabs as
// allocated, a slot per group of each aggregate, what the aggregates
// hold beyond it (Sizer), and the key table's copies of string keys
// (as many bytes as the keys' values, in the builders and frozen chunks).
func (s *windowSlabs) goBytes() int64 {
	n := s.keys.goBytes() + s.pairs.bytes() + int64(cap(s.kids))*4 +
		int64(cap(s.gkey)+cap(s.gwin)+cap(s.gnext))*4 + int64(cap(s.ends))*windowEndBytes +
		int64(cap(s.wins))*slabWindowBytes + int64(len(s.bySt))*windowMapBytes +
		int64(cap(s.gkey))*int64(groupAccBytes*len(s.accs)) + accStateBytes(s.accs) + s.vals.strBytes
	for _, b := range s.keys.keys {
		if sb, ok := b.(*array.StringBuilder); ok {
			n += int64(sb.DataLen())
		}
	}
	return n
}

// growBound is at most what rows more rows could add to goBytes, each
// as a new group: the tables' doublings, the group slabs' growth (append
// at most doubles what they need), what Sizer aggregates keep per row.
func (s *windowSlabs) growBound(rows int) int64 {
	var g int64
	if need := len(s.gkey) + rows; need > cap(s.gkey) {
		g = int64(2*need - cap(s.gkey))
	}
	return s.keys.growBound(rows) + s.pairs.bytesWith(rows) - s.pairs.bytes() + int64(max(0, rows-cap(s.kids)))*4 +
		g*int64(slabGroupBytes+groupAccBytes*len(s.accs)) + int64(rows)*sizerBound(s.accs)
}

// sizerBound is what a row may add to accs beyond their slots.
func sizerBound(accs []functions.Accumulator) int64 {
	var n int64
	for _, a := range accs {
		if _, ok := a.(functions.Sizer); ok {
			n += sizerRowBytes
		}
	}
	return n
}

// finishAll closes windows ws and returns all their rows in one record,
// window after window in the order of ws (each window's groups in the
// order they came): its keys, window_start and window_end when cols, its
// aggregates; rows[i] is window ws[i]'s row count. The record is nil when
// no window has rows. Building the windows' columns once, not a set of
// builders and arrays per window, is what closing many windows together
// saves (#25: a window per millisecond closes 40,000 at the input's end).
// Their groups are emptied (Accumulator.Reset) and dead.
func (s *windowSlabs) finishAll(ws []uint32, schema *arrow.Schema, cols bool) (rec arrow.Record, rows []int) {
	rows = make([]int, len(ws))
	n := 0
	for i, w := range ws {
		win := &s.wins[w]
		delete(s.bySt, win.start)
		win.open = false
		rows[i] = int(win.n)
		n += int(win.n)
	}
	if n == 0 {
		return nil, rows
	}
	gids := make([]uint32, 0, n)
	for _, w := range ws {
		for g := s.wins[w].head; g != noGroup; g = s.gnext[g] {
			gids = append(gids, g)
		}
	}
	s.vals.freeze(s.keys, s.mem)
	out := make([]arrow.Array, 0, schema.NumFields())
	bs := make([]array.Builder, len(s.types))
	for c, ty := range s.types {
		bs[c] = array.NewBuilder(s.mem, ty)
		arrowx.Reserve(bs[c], n)
	}
	for _, g := range gids {
		s.vals.appendKey(bs, s.gkey[g])
	}
	for _, b := range bs {
		out = append(out, b.NewArray())
		b.Release()
	}
	if cols {
		out = append(out, s.bounds(ws, rows, n, false), s.bounds(ws, rows, n, true))
	}
	for _, acc := range s.accs {
		out = append(out, acc.Finish(s.mem, gids))
	}
	for _, g := range gids {
		for _, acc := range s.accs {
			acc.Reset(g)
		}
		s.gwin[g] = noGroup
	}
	s.dead += n
	rec = array.NewRecord(schema, out, int64(n))
	for _, c := range out {
		c.Release()
	}
	return rec, rows
}

// bounds is the window_start (window_end when end) column of windows ws,
// rows[i] rows of window ws[i], n in all.
func (s *windowSlabs) bounds(ws []uint32, rows []int, n int, end bool) arrow.Array {
	b := array.NewTimestampBuilder(s.mem, expr.Timestamp.(*arrow.TimestampType))
	defer b.Release()
	arrowx.Reserve(b, n)
	for i, w := range ws {
		t := arrow.Timestamp(s.wins[w].start)
		if end {
			t = arrow.Timestamp(s.wins[w].end)
		}
		for range rows[i] {
			b.UnsafeAppend(t)
		}
	}
	return b.NewArray()
}

// due is the open windows ending at or before watermark (all at
// math.MaxInt64), by end, then start.
func (s *windowSlabs) due(watermark int64) []uint32 {
	var out []uint32
	for len(s.ends) > 0 && (s.wins[s.ends[0]].end <= watermark || watermark == math.MaxInt64) {
		out = append(out, s.popEnd())
	}
	return out
}

// compactIfDue compacts when the dead groups (or closed windows' slots)
// are at least as many as the live ones.
func (s *windowSlabs) compactIfDue() {
	live := len(s.gkey) - s.dead
	closed := len(s.wins) - s.open()
	if (s.dead >= compactMin && s.dead >= live) || (closed >= compactMin && closed >= s.open()) {
		s.compact()
	}
}

// compact drops the closed windows and their groups: open windows and
// live groups and keys are numbered again in the order they had, so that
// each window's groups keep their order, and each live group's
// accumulator state moves down to its new id (Merge into an emptied id,
// then Reset).
func (s *windowSlabs) compact() {
	slot := make([]uint32, len(s.wins))
	var wins []slabWindow
	for i, w := range s.wins {
		if !w.open {
			continue
		}
		slot[i] = uint32(len(wins))
		w.head, w.tail, w.n = noGroup, noGroup, 0
		wins = append(wins, w)
		s.bySt[w.start] = slot[i]
	}
	s.wins = wins
	// Renumbering keeps each window's end and start, so the heap's order
	// holds as it is.
	for i, w := range s.ends {
		s.ends[i] = slot[w]
	}
	// The live keys, again in order, from the frozen values.
	s.vals.freeze(s.keys, s.mem)
	liveKey := make([]bool, s.keys.n)
	for g, w := range s.gwin {
		if w != noGroup {
			liveKey[s.gkey[g]] = true
		}
	}
	keys := newGroupKeyTable(s.mem, s.types)
	kid := make([]uint32, s.keys.n)
	for c, chunk := range s.vals.chunks {
		for k := s.vals.starts[c]; k < s.vals.starts[c]+uint32(chunkLen(chunk)); k++ {
			if liveKey[k] {
				kid[k] = keys.lookup(chunk, int(k-s.vals.starts[c]))
			}
		}
	}
	if len(s.types) == 0 && s.keys.n > 0 {
		kid[0], keys.n = 0, 1 // no GROUP BY: one key, id 0
	}
	s.vals.release()
	s.keys.release()
	s.keys = keys
	s.pairs = newIntTable()
	n := 0 // the next new id: never past g, so g's entries are read before n's are written
	for g := range s.gkey {
		w := s.gwin[g]
		if w == noGroup {
			continue
		}
		nw, k := slot[w], kid[s.gkey[g]]
		if n != g {
			for _, acc := range s.accs {
				acc.Merge(uint32(n), uint32(g))
				acc.Reset(uint32(g))
			}
		}
		s.gkey[n], s.gwin[n], s.gnext[n] = k, nw, noGroup
		s.link(nw, uint32(n))
		s.pairs.put(int64(nw)<<32|int64(k), uint32(n))
		n++
	}
	s.gkey, s.gwin, s.gnext = s.gkey[:n], s.gwin[:n], s.gnext[:n]
	s.dead = 0
}

func chunkLen(c []arrow.Array) int {
	if len(c) == 0 {
		return 0
	}
	return c[0].Len()
}

func (s *windowSlabs) release() {
	s.vals.release()
	s.keys.release()
	*s = windowSlabs{mem: s.mem, types: s.types, accs: s.accs}
}

// keyValues is a keyTable's values, frozen from its builders into arrays
// as they are needed (a closing window's keys), so that key id k stays
// readable while new keys keep arriving. The last two chunks are joined
// while the last is as long as the one before, so the chunks halve in
// length and there are at most about log2(keys) of them, whatever the
// number of freezes.
type keyValues struct {
	chunks   [][]arrow.Array
	starts   []uint32
	frozen   uint32
	strBytes int64 // string keys' bytes in chunks (the key table's copies)
}

func (v *keyValues) freeze(t *keyTable, mem memory.Allocator) {
	if t.n == v.frozen || len(t.keys) == 0 {
		v.frozen = t.n
		return
	}
	c := t.finishKeys()
	v.strBytes += stringBytes(c)
	v.chunks = append(v.chunks, c)
	v.starts = append(v.starts, v.frozen)
	v.frozen = t.n
	for k := len(v.chunks); k >= 2 && chunkLen(v.chunks[k-1]) >= chunkLen(v.chunks[k-2]); k = len(v.chunks) {
		a, b := v.chunks[k-2], v.chunks[k-1]
		joined := make([]arrow.Array, len(a))
		for col := range a {
			j, err := array.Concatenate([]arrow.Array{a[col], b[col]}, mem)
			if err != nil {
				// Cannot join (out of memory): keep both chunks.
				for _, x := range joined[:col] {
					x.Release()
				}
				return
			}
			joined[col] = j
		}
		for col := range a {
			a[col].Release()
			b[col].Release()
		}
		v.chunks = append(v.chunks[:k-2], joined)
		v.starts = v.starts[:k-1]
	}
}

func stringBytes(cols []arrow.Array) int64 {
	var n int64
	for _, c := range cols {
		if s, ok := c.(*array.String); ok && s.Len() > 0 {
			n += int64(s.ValueOffset(s.Len()-1) + s.ValueLen(s.Len()-1) - s.ValueOffset(0))
		}
	}
	return n
}

// appendKey appends key id k's values to out (the values must be frozen).
func (v *keyValues) appendKey(out []array.Builder, k uint32) {
	j := sort.Search(len(v.starts), func(i int) bool { return v.starts[i] > k }) - 1
	for col, b := range out {
		appendValue(b, v.chunks[j][col], int(k-v.starts[j]))
	}
}

func (v *keyValues) release() {
	for _, c := range v.chunks {
		for _, a := range c {
			a.Release()
		}
	}
	*v = keyValues{}
}
