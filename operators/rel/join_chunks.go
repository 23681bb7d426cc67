package rel

import "github.com/apache/arrow/go/v17/arrow"

// probePairs bounds the matches one Probe call gathers: a probe batch whose
// rows each meet many build rows (a cross join meets all of them) is joined
// a slice of rows at a time, so that one output record, and the match
// indexes behind it, stay the size of a few batches (4 of the default 4096
// rows) however large the product is: what the join has in flight is then
// its output queue's length times that. The product still costs its time,
// but not its size in memory.
const probePairs = 1 << 14

// MaxMatches is the most build rows one key has (its chain's length): how
// many output rows one probe row can make. Computed on first use after
// Build, in one pass over the chains.
func (j *HashJoin) MaxMatches() int {
	if j.maxMatches > 0 || !j.built {
		return j.maxMatches
	}
	heads := j.first
	if j.direct != nil {
		heads = j.direct.first
	}
	m := 1
	for _, h := range heads {
		n := 0
		for r := h; r >= 0; r = j.next[r] {
			n++
		}
		m = max(m, n)
	}
	j.maxMatches = m
	return m
}

// GoBytes estimates what the built join holds beside its build columns
// (Arrow buffers its allocator counts): the chains, the key table or the
// direct index, and the probe's index buffers.
func (j *HashJoin) GoBytes() int64 {
	n := 4 * int64(cap(j.first)+cap(j.last)+cap(j.next)+cap(j.li)+cap(j.ri)+cap(j.found))
	if j.direct != nil {
		n += 4 * int64(cap(j.direct.first))
	}
	if j.table != nil {
		n += int64(j.table.n) * groupEntryBytes
	}
	return n
}

// ProbeEach joins rec against the built table like Probe, emitting the
// result as it goes: in one record when its rows can make at most
// probePairs matches together, else a slice of rec's rows at a time, each
// making at most that many (one row at a time when a single row's matches
// are more). rec is not released; emit owns each record it is given.
func (j *HashJoin) ProbeEach(rec arrow.Record, emit func(arrow.Record) error) error {
	n := int(rec.NumRows())
	step := n
	if m := j.MaxMatches(); m*n > probePairs {
		step = max(1, probePairs/m)
	}
	if step >= n {
		out, err := j.Probe(rec)
		if err != nil || out == nil {
			return err
		}
		return emit(out)
	}
	for off := 0; off < n; off += step {
		sl := rec.NewSlice(int64(off), int64(min(off+step, n)))
		out, err := j.Probe(sl)
		sl.Release()
		if err != nil {
			return err
		}
		if out == nil {
			continue
		}
		if err := emit(out); err != nil {
			return err
		}
	}
	return nil
}
