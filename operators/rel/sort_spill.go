package rel

import (
	"bufio"
	"bytes"
	"container/heap"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/internal/arrowx"
	"github.com/tierflow/tierflow/operators/eval"
	"github.com/tierflow/tierflow/operators/functions"
)

// An ORDER BY over a whole input (NewSortAtEndWithin) is an external merge
// sort past its memory: the rows it holds are sorted into a run on disk
// whenever they and their keys pass half its limit, or its query's budget
// is a third full (overBudget), and when the input ends the runs are merged, a chunk
// of each at a time. The keys are encoded as the rows come, as bytes that
// compare as the rows sort (appendSortKey, NULL last ascending and first
// descending, as compareRows), so what a run costs is counted before it is
// cut. A run puts its rows end to end once and writes them a chunk at a
// time in key order: it needs its rows, their keys and that copy, so half
// the limit leaves the other half to the copy, and a third of the budget
// leaves the rest to what is in flight. Runs keep their input's order
// among equal keys and the merge takes the earlier run first, so the order
// is as stable as in memory.

// sortChunkRows is the rows of each record a run is written in and the
// merge emits: the merge holds one of each run's, so it bounds what a
// merge of many runs holds.
const sortChunkRows = 1024

// NewSortAtEndWithin is NewSortAtEnd that spills sorted runs to disk past
// limit bytes of rows held (0: only when its query's budget is a third
// full; with neither it never spills), when every key can be encoded
// (orderable); stats may be nil.
func NewSortAtEndWithin(keys []SortKey, in *arrow.Schema, fns *functions.Registry, limit int64, stats *SpillStats) (*Sort, error) {
	s, err := NewSortAtEnd(keys, in, fns)
	if err != nil {
		return nil, err
	}
	s.spill = &sortSpill{limit: limit, stats: stats, can: true}
	for _, k := range keys {
		if !orderable(k.Expr.Type()) {
			s.spill.can = false
		}
	}
	return s, nil
}

// sortSpill is a Sort's runs on disk.
type sortSpill struct {
	limit int64
	stats *SpillStats
	can   bool // every key encodes (orderable)
	made  int  // runs made, merged ones included: the next file's number
	// first: only the first rows matter (a top n), 0 for all: a run and
	// a merge keep no more.
	first int64
	held  int64       // the rows held and their keys, in bytes
	keys  []*sortKeys // the keys of the rows held, a record's each
	dir   string
	runs  []*os.File
	// chunkBytes is the largest chunk written to a run: the merge's
	// fan-in follows from it.
	chunkBytes int64
}

// took encodes rec's keys, counts rec and its keys as held, and reports
// whether the rows held go to a run. The keys are encoded as the rows
// come, so that what a run will need is counted before it is cut (two
// integer keys take 18 bytes a row beside the row's 16).
func (s *Sort) took(ctx *dataflow.Context, rec arrow.Record) (bool, error) {
	sp := s.spill
	if sp == nil || !sp.can {
		return false, nil
	}
	acct := ctx.Memory()
	if _, budget := acct.Budget(); sp.limit <= 0 && budget <= 0 {
		return false, nil // nothing to spill for: no key is encoded
	}
	k, err := s.encodeKeys(s.c.get(ctx), rec)
	if err != nil {
		return false, err
	}
	if err := acct.Grow(k.bytes()); err != nil {
		return false, err
	}
	sp.keys = append(sp.keys, k)
	sp.held += arrowx.RecordBytes(rec) + k.bytes()
	return overBudget(acct, sp.limit, sp.held), nil
}

// overBudget reports whether an operator holding held bytes of rows that
// it sorts in runs (a sort, a top n) cuts one: past half its limit, or
// with its query's budget a third full once it holds a sixth of the
// budget, half that third. Without the sixth an operator beside a larger
// one would cut a run of every batch once the query were a third full;
// with it no run is less than half the size a sort alone cuts, and one
// beside another operator holding up to half the budget still fits.
func overBudget(acct *dataflow.Account, limit, held int64) bool {
	if limit > 0 && held > limit/2 {
		return true
	}
	used, budget := acct.Budget()
	return budget > 0 && used > budget/3 && 6*held >= budget
}

// sortKeys are the encoded keys of one record's rows: row i's are
// buf[off[i]:off[i+1]].
type sortKeys struct {
	buf []byte
	off []int32
}

func (k *sortKeys) row(i int) []byte { return k.buf[k.off[i]:k.off[i+1]] }

func (k *sortKeys) bytes() int64 { return int64(len(k.buf) + 4*len(k.off)) }

// encodeKeys encodes the keys of rec's rows.
func (s *Sort) encodeKeys(c *functions.Ctx, rec arrow.Record) (*sortKeys, error) {
	karr, err := evalKeys(c, s.evs, rec)
	if err != nil {
		return nil, err
	}
	defer releaseArrays(karr)
	n := int(rec.NumRows())
	k := &sortKeys{off: make([]int32, 1, n+1)}
	for i := range n {
		for j, a := range karr {
			desc := s.keys[j].Desc
			if k.buf, err = appendSortKey(k.buf, a, i, desc, desc); err != nil {
				return nil, err
			}
		}
		k.off = append(k.off, int32(len(k.buf)))
	}
	return k, nil
}

// rowRef is one row of one of several records.
type rowRef struct{ rec, row int32 }

// takeRows builds the rows refs name, in their order, from recs: each
// record's rows are gathered, the pieces put end to end, and that put in
// order, so no copy is larger than the rows taken.
func takeRows(c *functions.Ctx, schema *arrow.Schema, recs []arrow.Record, refs []rowRef) (arrow.Record, error) {
	per := make([][]int32, len(recs))
	for _, r := range refs {
		per[r.rec] = append(per[r.rec], r.row)
	}
	start := make([]int32, len(recs)) // each record's first row in the pieces
	var pieces []arrow.Record
	defer func() { releaseAll(pieces) }()
	var n int32
	for i, idx := range per {
		start[i] = n
		if len(idx) == 0 {
			continue
		}
		p, err := eval.GatherRecord(c.Context(), c.Mem, recs[i], idx)
		if err != nil {
			return nil, err
		}
		pieces = append(pieces, p)
		n += int32(len(idx))
	}
	if len(pieces) == 1 {
		// The rows of one record, already in order.
		pieces[0].Retain()
		return pieces[0], nil
	}
	cols := make([]arrow.Array, schema.NumFields())
	defer func() { releaseArrays(cols) }()
	for j := range cols {
		chunks := make([]arrow.Array, len(pieces))
		for k, p := range pieces {
			chunks[k] = p.Column(j)
		}
		a, err := array.Concatenate(chunks, c.Mem)
		if err != nil {
			return nil, err
		}
		cols[j] = a
	}
	all := array.NewRecord(schema, cols, int64(n))
	defer all.Release()
	next := make([]int32, len(recs))
	perm := make([]int32, len(refs))
	for k, r := range refs {
		perm[k] = start[r.rec] + next[r.rec]
		next[r.rec]++
	}
	return eval.GatherRecord(c.Context(), c.Mem, all, perm)
}

// spillRun sorts the rows held into a run on disk and lets them go.
func (s *Sort) spillRun(ctx *dataflow.Context) error {
	c := s.c.get(ctx)
	recs := s.pending[0]
	delete(s.pending, 0)
	acct := ctx.Memory()
	goBytes := recordsGoBytes(recs)
	defer func() {
		releaseAll(recs)
		acct.Shrink(goBytes)
		s.spill.held = 0
	}()
	keys := s.spill.keys
	s.spill.keys = nil
	var keyBytes int64
	for _, k := range keys {
		keyBytes += k.bytes()
	}
	defer func() { acct.Shrink(keyBytes) }()
	if len(keys) != len(recs) {
		return fmt.Errorf("%w: a sort's run has %d records and the keys of %d", ErrPlan, len(recs), len(keys))
	}
	var refs []rowRef
	for i, r := range recs {
		for row := range int32(r.NumRows()) {
			refs = append(refs, rowRef{int32(i), row})
		}
	}
	if err := acct.Grow(8 * int64(len(refs))); err != nil {
		return fmt.Errorf("sorting a run of %d rows: %w", len(refs), err)
	}
	keyBytes += 8 * int64(len(refs))
	sort.SliceStable(refs, func(a, b int) bool {
		x, y := refs[a], refs[b]
		return bytes.Compare(keys[x.rec].row(int(x.row)), keys[y.rec].row(int(y.row))) < 0
	})
	sp := s.spill
	if sp.first > 0 && int64(len(refs)) > sp.first {
		refs = refs[:sp.first] // no row past a run's first n is among the whole's
	}
	if len(refs) == 0 {
		return nil
	}
	// The run's rows end to end, once, so that each chunk is one gather
	// from one record (taken from the records they came in, a chunk of
	// rows from a hundred records cost a hundred gathers).
	all, err := concatRecords(c, s.in, recs)
	if err != nil {
		return err
	}
	defer all.Release()
	base := make([]int32, len(recs)) // each record's first row in all
	for i := 1; i < len(recs); i++ {
		base[i] = base[i-1] + int32(recs[i-1].NumRows())
	}
	f, err := sp.create(s.in, c.Mem)
	if err != nil {
		return err
	}
	idx := make([]int32, 0, sortChunkRows)
	for lo := 0; lo < len(refs); lo += sortChunkRows {
		idx = idx[:0]
		for _, r := range refs[lo:min(lo+sortChunkRows, len(refs))] {
			idx = append(idx, base[r.rec]+r.row)
		}
		chunk, err := eval.GatherRecord(c.Context(), c.Mem, all, idx)
		if err != nil {
			return err
		}
		sp.chunkBytes = max(sp.chunkBytes, arrowx.RecordBytes(chunk))
		err = f.write(chunk)
		chunk.Release()
		if err != nil {
			return err
		}
	}
	if err := f.finish(); err != nil {
		return err
	}
	if sp.stats != nil {
		sp.stats.Spills.Add(1)
		sp.stats.Rows.Add(int64(len(refs)))
	}
	return nil
}

// create makes the next run's file.
func (sp *sortSpill) create(schema *arrow.Schema, mem memory.Allocator) (*spillFile, error) {
	if sp.dir == "" {
		dir, err := os.MkdirTemp("", "tierflow-sort-spill-*")
		if err != nil {
			return nil, fmt.Errorf("spill: %w", err)
		}
		sp.dir = dir
	}
	f, err := createSpillFile(sp.dir, filepath.Join(sp.dir, fmt.Sprintf("run%d.arrow", sp.made)), schema, mem)
	if err != nil {
		return nil, err
	}
	sp.made++
	sp.runs = append(sp.runs, f.f)
	return f, nil
}

// runReader reads a run a chunk at a time, with the chunk's keys.
type runReader struct {
	r    *ipc.Reader
	rec  arrow.Record
	keys *sortKeys
	row  int
}

// openRun reads run f from its start.
func openRun(f *os.File, mem memory.Allocator) (*runReader, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("spill: %w", err)
	}
	r, err := ipc.NewReader(bufio.NewReaderSize(f, spillBuffer), ipc.WithAllocator(mem))
	if err != nil {
		return nil, fmt.Errorf("spill: %w", err)
	}
	return &runReader{r: r}, nil
}

// next moves to the run's next chunk; false at its end.
func (rr *runReader) next(s *Sort, c *functions.Ctx) (bool, error) {
	if rr.rec != nil {
		rr.rec.Release()
		rr.rec, rr.keys = nil, nil
	}
	for rr.r.Next() {
		rec := rr.r.Record()
		if rec.NumRows() == 0 {
			continue
		}
		k, err := s.encodeKeys(c, rec)
		if err != nil {
			return false, err
		}
		rec.Retain()
		rr.rec, rr.keys, rr.row = rec, k, 0
		return true, nil
	}
	if err := rr.r.Err(); err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("spill: %w", err)
	}
	return false, nil
}

func (rr *runReader) close() {
	if rr.rec != nil {
		rr.rec.Release()
	}
	rr.r.Release()
}

// runHeap orders runs by their current row's key, the earlier run first
// among equal keys.
type runHeap struct {
	runs []*runReader
	at   []int // each entry's run number
}

func (h *runHeap) Len() int { return len(h.at) }
func (h *runHeap) Less(a, b int) bool {
	x, y := h.runs[h.at[a]], h.runs[h.at[b]]
	if c := bytes.Compare(x.keys.row(x.row), y.keys.row(y.row)); c != 0 {
		return c < 0
	}
	return h.at[a] < h.at[b]
}
func (h *runHeap) Swap(a, b int) { h.at[a], h.at[b] = h.at[b], h.at[a] }
func (h *runHeap) Push(x any)    { h.at = append(h.at, x.(int)) }
func (h *runHeap) Pop() any {
	x := h.at[len(h.at)-1]
	h.at = h.at[:len(h.at)-1]
	return x
}

// merge merges runs in order and hands each chunk of at most
// sortChunkRows rows to out. A chunk ends where one of the runs it takes
// rows from moves to its next record, which it then no longer holds.
func (s *Sort) merge(c *functions.Ctx, runs []*os.File, out func(arrow.Record) error) error {
	left := s.spill.first // rows still wanted; 0: all
	h := &runHeap{}
	defer func() {
		for _, rr := range h.runs {
			rr.close()
		}
	}()
	for i, f := range runs {
		rr, err := openRun(f, c.Mem)
		if err != nil {
			return err
		}
		h.runs = append(h.runs, rr)
		ok, err := rr.next(s, c)
		if err != nil {
			return err
		}
		if ok {
			h.at = append(h.at, i)
		}
	}
	heap.Init(h)
	recs := make([]arrow.Record, len(h.runs))
	var refs []rowRef
	flush := func() error {
		if len(refs) == 0 {
			return nil
		}
		for i, rr := range h.runs {
			recs[i] = rr.rec
		}
		chunk, err := takeRows(c, s.in, recs, refs)
		refs = refs[:0]
		if err != nil {
			return err
		}
		return out(chunk)
	}
	for h.Len() > 0 {
		if s.spill.first > 0 {
			if left == 0 {
				break
			}
			left--
		}
		i := h.at[0]
		rr := h.runs[i]
		refs = append(refs, rowRef{int32(i), int32(rr.row)})
		rr.row++
		if rr.row < int(rr.rec.NumRows()) {
			heap.Fix(h, 0)
			if len(refs) == sortChunkRows {
				if err := flush(); err != nil {
					return err
				}
			}
			continue
		}
		if err := flush(); err != nil {
			return err
		}
		ok, err := rr.next(s, c)
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
		}
	}
	return flush()
}

// fanIn is how many runs one merge reads at once: as many chunks as half
// the limit (or a third of the budget) holds, at least two.
func (sp *sortSpill) fanIn(acct *dataflow.Account) int {
	room := sp.limit / 2
	if _, limit := acct.Budget(); limit > 0 && (room <= 0 || limit/3 < room) {
		room = limit / 3
	}
	if sp.chunkBytes <= 0 || room <= 0 {
		return len(sp.runs)
	}
	return max(2, int(room/(2*sp.chunkBytes+spillBuffer))) // a chunk held and one built, and the file's buffer
}

// emitSpilled sorts what is held into a last run and merges the runs into
// the output: first the runs a merge cannot read at once into longer
// ones, then the rest.
func (s *Sort) emitSpilled(ctx *dataflow.Context, cap *dataflow.Capability) error {
	if len(s.pending[0]) > 0 {
		if err := s.spillRun(ctx); err != nil {
			return err
		}
	}
	c := s.c.get(ctx)
	sp := s.spill
	for fan := sp.fanIn(ctx.Memory()); len(sp.runs) > fan; {
		merged := sp.runs[:fan]
		f, err := sp.create(s.in, c.Mem) // appended to runs: moved first below
		if err != nil {
			return err
		}
		err = s.merge(c, merged, func(r arrow.Record) error {
			defer r.Release()
			return f.write(r)
		})
		if err == nil {
			err = f.finish()
		}
		for _, m := range merged {
			m.Close()
			os.Remove(m.Name())
		}
		// The merged run holds the earliest rows: it goes first, so that
		// equal keys keep their input's order.
		sp.runs = append([]*os.File{f.f}, sp.runs[fan:len(sp.runs)-1]...)
		if err != nil {
			return err
		}
	}
	return s.merge(c, sp.runs, func(r arrow.Record) error { return ctx.Emit(0, cap, r) })
}

// dropKeys lets the keys of the rows held go.
func (sp *sortSpill) dropKeys(acct *dataflow.Account) {
	if sp == nil {
		return
	}
	for _, k := range sp.keys {
		acct.Shrink(k.bytes())
	}
	sp.keys, sp.held = nil, 0
}

// closeSpill removes the runs.
func (sp *sortSpill) close() {
	if sp == nil {
		return
	}
	for _, f := range sp.runs {
		f.Close()
	}
	sp.runs = nil
	if sp.dir != "" {
		os.RemoveAll(sp.dir)
		sp.dir = ""
	}
}

// newTopSort is the sort a top n at the end hands its rows to when they
// pass its memory (TopN.spillTo): runs of at most n rows, merged to n.
func newTopSort(t *TopN) (*Sort, error) {
	s, err := NewSortAtEndWithin(t.keys, t.in, t.fns, t.within.limit, t.within.stats)
	if err != nil {
		return nil, err
	}
	s.spill.first = t.n
	return s, nil
}
