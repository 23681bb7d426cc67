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
// merges them (Accumulator.Merge).
type sessionState struct {
	keys  *keyChunks
	accs  []functions.Accumulator
	byKey map[uint32][]*session
	next  uint32
	free  []uint32 // ids of closed or merged-away sessions, reset for reuse
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
	g := st.next
	st.next++
	return g
}

func (st *sessionState) release(g uint32) {
	for _, acc := range st.accs {
		acc.Reset(g)
	}
	st.free = append(st.free, g)
}

type session struct {
	start, end int64 // end = last event time + gap
	gid        uint32
	key        uint32
}

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
		list := st.byKey[k]
		var rep *session
		kept := list[:0]
		for _, s := range list {
			if s.start < t+gap && t < s.end {
				if rep == nil {
					rep = s
					rep.start = min(rep.start, t)
					rep.end = max(rep.end, t+gap)
					kept = append(kept, s)
					continue
				}
				rep.start = min(rep.start, s.start)
				rep.end = max(rep.end, s.end)
				forward[s.gid] = rep.gid
				merged = append(merged, s.gid)
				st.open--
				continue
			}
			kept = append(kept, s)
		}
		if rep == nil {
			if t+gap <= h.lateBy() {
				h.late++
				gids[i] = noGroup
				st.byKey[k] = kept
				continue
			}
			rep = &session{start: t, end: t + gap, gid: st.newGid(), key: k}
			st.open++
			kept = append(kept, rep)
		}
		st.byKey[k] = kept
		gids[i] = rep.gid
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
		acc.Grow(int(st.next))
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

// closeSessions emits every session whose end is at or before watermark, ordered
// by end, then start, then key id.
func (h *HashAggregate) closeSessions(watermark int64) ([]arrow.Record, error) {
	st := h.sess
	var due []*session
	for k, list := range st.byKey {
		kept := list[:0]
		for _, s := range list {
			if s.end <= watermark {
				due = append(due, s)
			} else {
				kept = append(kept, s)
			}
		}
		if len(kept) == 0 {
			delete(st.byKey, k)
		} else {
			st.byKey[k] = kept
		}
	}
	if len(due) == 0 {
		return nil, nil
	}
	st.open -= len(due)
	sort.Slice(due, func(i, j int) bool {
		a, b := due[i], due[j]
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
	gids := make([]uint32, len(due))
	starts := array.NewTimestampBuilder(h.mem, h.schema.Field(nk).Type.(*arrow.TimestampType))
	ends := array.NewTimestampBuilder(h.mem, h.schema.Field(nk+1).Type.(*arrow.TimestampType))
	for i, s := range due {
		if nk > 0 {
			st.keys.appendKey(builders, s.key)
		}
		starts.Append(arrow.Timestamp(s.start))
		ends.Append(arrow.Timestamp(s.end))
		gids[i] = s.gid
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
