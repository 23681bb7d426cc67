package rel

import (
	"math"
	"sort"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/tierflow/tierflow/operators/functions"
)

// sessionState keeps, per group key, the open sessions. Each session owns a
// group id in one shared set of accumulators; a row that bridges two sessions
// merges them (Accumulator.Merge). The sessions are a slab indexed by their
// group ids, each key's a list through it, so that no session is a heap
// object of its own for the collector to mark (#25).
type sessionState struct {
	keys  *keyChunks
	accs  []functions.Accumulator
	sess  []session         // by group id (a freed id's entry is unused)
	byKey map[uint32]uint32 // a key id's first open session
	free  []uint32          // ids of closed or merged-away sessions, reset for reuse
	open  int
}

// newGid hands out a group id, reusing freed ones so state stays proportional
// to the open sessions on an endless stream.
func (st *sessionState) newGid() uint32 {
	if n := len(st.free); n > 0 {
		g := st.free[n-1]
		st.free = st.free[:n-1]
		return g
	}
	st.sess = append(st.sess, session{})
	return uint32(len(st.sess) - 1)
}

func (st *sessionState) release(g uint32) {
	for _, acc := range st.accs {
		acc.Reset(g)
	}
	st.free = append(st.free, g)
}

// session is an open session: its group id is its index in
// sessionState.sess.
type session struct {
	start, end int64  // end = last event time + gap
	key        uint32 // its key's id
	next       uint32 // the key's next open session (noGroup: none)
}

// sessionBytes is what GoStateBytes charges a session: its slot.
const sessionBytes = 24

const noGroup = math.MaxUint32

func (h *HashAggregate) addSessions(keys, args []arrow.Array, ts arrow.Array, gap int64) error {
	st := h.sess
	tv := functions.Int64Values(ts)
	n := ts.Len()
	gids := h.gids[:n]
	forward := map[uint32]uint32{}
	var merged []uint32
	for i := 0; i < n; i++ {
		if ts.IsNull(i) {
			h.nulls++
			gids[i] = noGroup
			continue
		}
		t := tv[i]
		k := st.keys.t.lookup(keys, i)
		head, ok := st.byKey[k]
		if !ok {
			head = noGroup
		}
		// The key's sessions, in the order they opened: the first that
		// the row falls in takes it, and every other it falls in merges
		// into that one and leaves the list.
		rep, prev := uint32(noGroup), uint32(noGroup)
		for g := head; g != noGroup; {
			s := &st.sess[g]
			next := s.next
			if s.start < t+gap && t < s.end {
				if rep == noGroup {
					rep = g
					s.start = min(s.start, t)
					s.end = max(s.end, t+gap)
					prev, g = g, next
					continue
				}
				r := &st.sess[rep]
				r.start = min(r.start, s.start)
				r.end = max(r.end, s.end)
				forward[g] = rep
				merged = append(merged, g)
				st.open--
				if prev == noGroup {
					head = next
				} else {
					st.sess[prev].next = next
				}
				g = next
				continue
			}
			prev, g = g, next
		}
		if rep == noGroup {
			if t+gap <= h.lateBy() {
				h.late++
				gids[i] = noGroup
				st.setHead(k, head)
				continue
			}
			rep = st.newGid()
			st.sess[rep] = session{start: t, end: t + gap, key: k, next: noGroup}
			st.open++
			if prev == noGroup {
				head = rep
			} else {
				st.sess[prev].next = rep
			}
		}
		st.setHead(k, head)
		gids[i] = rep
	}
	final := func(g uint32) uint32 {
		for {
			f, ok := forward[g]
			if !ok {
				return g
			}
			g = f
		}
	}
	for _, acc := range st.accs {
		acc.Grow(len(st.sess))
	}
	for _, g := range merged {
		for _, acc := range st.accs {
			acc.Merge(final(g), g)
		}
	}
	// Only now may merged-away ids be reused: rows of this batch that pointed
	// at them have been redirected above.
	defer func() {
		for _, g := range merged {
			st.release(g)
		}
	}()
	for i, g := range gids {
		if g != noGroup {
			gids[i] = final(g)
		}
	}
	for i := 0; i < n; {
		if gids[i] == noGroup {
			i++
			continue
		}
		k := i + 1
		for k < n && gids[k] != noGroup {
			k++
		}
		for a, acc := range st.accs {
			acc.Update(gids[i:k], args[a], i)
		}
		i = k
	}
	for a, acc := range st.accs {
		if err := accErr(acc, h.spec.Aggs[a]); err != nil {
			return err
		}
	}
	return nil
}

// setHead records head as key k's first open session (none: k leaves the
// map).
func (st *sessionState) setHead(k, head uint32) {
	if head == noGroup {
		delete(st.byKey, k)
		return
	}
	st.byKey[k] = head
}

// closeSessions emits every session whose end is at or before watermark, ordered
// by end, then start, then key id.
func (h *HashAggregate) closeSessions(watermark int64) ([]arrow.Record, error) {
	st := h.sess
	var due []uint32
	for k, head := range st.byKey {
		prev := uint32(noGroup)
		for g := head; g != noGroup; {
			next := st.sess[g].next
			if st.sess[g].end <= watermark {
				due = append(due, g)
				if prev == noGroup {
					head = next
				} else {
					st.sess[prev].next = next
				}
			} else {
				prev = g
			}
			g = next
		}
		st.setHead(k, head)
	}
	if len(due) == 0 {
		return nil, nil
	}
	st.open -= len(due)
	sort.Slice(due, func(i, j int) bool {
		a, b := &st.sess[due[i]], &st.sess[due[j]]
		if a.end != b.end {
			return a.end < b.end
		}
		if a.start != b.start {
			return a.start < b.start
		}
		return a.key < b.key
	})
	nk := len(h.spec.Group)
	builders := make([]array.Builder, nk)
	for i := range builders {
		builders[i] = array.NewBuilder(h.mem, h.schema.Field(i).Type)
	}
	gids := due
	starts := array.NewTimestampBuilder(h.mem, h.schema.Field(nk).Type.(*arrow.TimestampType))
	ends := array.NewTimestampBuilder(h.mem, h.schema.Field(nk+1).Type.(*arrow.TimestampType))
	for _, g := range due {
		s := &st.sess[g]
		if nk > 0 {
			st.keys.appendKey(builders, s.key)
		}
		starts.Append(arrow.Timestamp(s.start))
		ends.Append(arrow.Timestamp(s.end))
	}
	var cols []arrow.Array
	for _, b := range append(builders, starts, ends) {
		cols = append(cols, b.NewArray())
		b.Release()
	}
	for _, acc := range st.accs {
		cols = append(cols, acc.Finish(h.mem, gids))
	}
	for _, g := range gids {
		st.release(g)
	}
	rec := array.NewRecord(h.schema, cols, int64(len(due)))
	for _, c := range cols {
		c.Release()
	}
	return []arrow.Record{rec}, nil
}
