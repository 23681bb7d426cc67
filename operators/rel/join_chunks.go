package rel

import (
	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/dataflow"
)

// probePairs bounds the matches one probe gathers at once: a probe batch
// whose rows each meet many build rows (a cross join meets all of them) is
// joined a slice of rows at a time, so that the match indexes (8 bytes a
// pair) and the output records behind them stay the size of a few batches
// however large the product is (a cross join of two 1M-row tables made a
// billion pairs per 1024-row batch: 8 GB of indexes). The product still
// costs its time, not its size in memory.
const probePairs = 1 << 16

// MaxMatches is the most build rows one key has (its chain's length): how
// many matches one probe row can make. Computed on first use after Build,
// in one pass over the chains, and kept by this HashJoin (the table may be
// shared; it is read-only once built).
func (j *HashJoin) MaxMatches() int {
	if j.maxMatches > 0 || !j.built || j.tab == nil {
		return j.maxMatches
	}
	heads := j.tab.first
	if j.tab.direct != nil {
		heads = j.tab.direct.first
	}
	m := 1
	for _, h := range heads {
		n := 0
		for r := h; r >= 0; r = j.tab.next[r] {
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
	n := 4 * int64(cap(j.li)+cap(j.ri)+cap(j.found))
	if t := j.tab; t != nil {
		n += 4 * int64(cap(t.first)+cap(t.next)+cap(t.marks))
		if t.direct != nil {
			n += 4 * int64(cap(t.direct.first))
		}
		if t.table != nil {
			n += int64(t.table.n) * groupEntryBytes
		}
		if t.band != nil {
			n += t.band.bytes()
		}
	}
	return n
}

// ProbeEach joins rec against the built table, handing emit (which owns
// each record it is given) the joined rows as they are made: the whole
// batch at once when its rows can make at most probePairs matches
// together, else a slice of its rows at a time, each making at most that
// many (one row at a time when a single row's matches are more). rec is
// not released.
func (j *HashJoin) ProbeEach(rec arrow.Record, emit func(arrow.Record) error) error {
	if j.tab != nil && j.tab.band != nil {
		return j.probeBand(rec, emit)
	}
	n := int(rec.NumRows())
	step := n
	if m := j.MaxMatches(); m*n > probePairs {
		step = max(1, probePairs/m)
	}
	if step >= n {
		return j.probeEach(rec, emit)
	}
	for off := 0; off < n; off += step {
		if off > 0 {
			if err := j.pauseNow(); err != nil {
				return err
			}
		}
		sl := rec.NewSlice(int64(off), int64(min(off+step, n)))
		err := j.probeEach(sl, emit)
		sl.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// PauseWith has a probe call pause between its pieces (a slice of probe
// rows, a piece of maxJoinOut pairs): a probe whose pairs the residual
// drops emits nothing for as long as it takes (200,000 rows by 200,000
// under a WHERE that keeps none is 4e10 pairs), and pause is where it
// meets its query's turn and its end. An error from pause ends the
// probe.
func (j *HashJoin) PauseWith(pause func() error) { j.pause = pause }

func (j *HashJoin) pauseNow() error {
	if j.pause == nil {
		return nil
	}
	return j.pause()
}

// pauseOf is an operator's pause between pieces of a long step: its
// end (a stopped or failed query), then its query's turn
// (dataflow.Yield) under a shared worker.
func pauseOf(ctx *dataflow.Context) func() error {
	return func() error {
		c := ctx.Context()
		if err := c.Err(); err != nil {
			return err
		}
		return dataflow.Yield(c)
	}
}
