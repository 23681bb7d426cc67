package sources

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"os"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/file"
	"github.com/apache/arrow/go/v17/parquet/metadata"
	"github.com/apache/arrow/go/v17/parquet/schema"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/planner/catalog"
)

// Statistics of a Parquet file for the planner (catalog.TableStats). The
// footer gives the row count and, per column, NULLs and min and max (merged
// over the row groups) for nothing. Distinct counts take a sample: runs of
// consecutive values (blocks) spread over the file, up to statsSampleRows
// values in all, read with skips between them (only the pages they are in
// are decoded), and an estimate from the sample:
//
//   - when the blocks share no value although values repeat within them,
//     the column is clustered (sorted, or written in runs, like an order key
//     in its lineitems): each value lives in one stretch of the file, so the
//     blocks' distinct values per row hold for the whole column;
//   - otherwise the Duj1 estimator of Haas and Stokes (1998), as PostgreSQL
//     uses it: d / (1 - (1 - n/N) f1/n), with d the sample's distinct
//     values, f1 those seen once, n the sample's size and N the column's;
//     a sample of all-distinct values gives N, one with none seen once d;
//   - never more than the non-NULL rows, nor, for integers, than max-min+1.
//
// The pages a sample decodes are whatever their writer made them, and the
// planner asks for statistics before any query's budget exists: a page is
// decoded within statsSampleMemory, and a column with a page larger than
// that gets no estimate (the planner's default), never a page the size a
// crafted header states.
const (
	statsSampleRows   = 65536
	statsSampleBlocks = 32
	// statsSampleMemory bounds the pages a sample holds at once: 64 times
	// the 1 MiB page that Parquet writers (parquet-mr, arrow, DuckDB) make
	// by default.
	statsSampleMemory = 64 << 20
)

// ParquetStats reads the statistics of the Parquet file at path, with
// distinct counts for the columns named in distinct.
func ParquetStats(path string, distinct []string) (st *catalog.TableStats, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadFile, err)
	}
	defer f.Close()
	defer guard(path, &err)
	budget := dataflow.NewMemory("the statistics of "+path, statsSampleMemory, nil)
	defer budget.Close()
	pf, err := newParquetReader(f, budget.Allocator(memory.DefaultAllocator))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: not a Parquet file: %v", ErrBadFile, path, err)
	}
	defer pf.Close()
	md := pf.MetaData()
	st = &catalog.TableStats{Rows: float64(md.NumRows), Columns: map[string]*catalog.ColumnStats{}}
	sch := md.Schema
	want := map[string]bool{}
	for _, c := range distinct {
		want[c] = true
	}
	for ci := 0; ci < sch.NumColumns(); ci++ {
		col := sch.Column(ci)
		if col.MaxRepetitionLevel() > 0 || col.ColumnPath().String() != col.Name() {
			continue // nested: no statistics of a top-level column
		}
		cs := footerStats(md, ci, col)
		st.Columns[col.Name()] = cs
		if want[col.Name()] {
			if d, ok := sampleDistinct(pf, md, ci); ok {
				cs.Distinct = d.estimate(st.Rows - cs.Nulls)
				if lo, ok := cs.Min.(int64); ok && cs.HasRange {
					if hi, ok := cs.Max.(int64); ok && hi >= lo {
						cs.Distinct = min(cs.Distinct, float64(hi-lo)+1)
					}
				}
			}
		}
	}
	return st, nil
}

// footerStats merges the row groups' statistics of column ci.
func footerStats(md *metadata.FileMetaData, ci int, col *schema.Column) *catalog.ColumnStats {
	cs := &catalog.ColumnStats{}
	ranged := true
	for rg := 0; rg < len(md.RowGroups); rg++ {
		lo, hi, nulls, ok := chunkRange(md.RowGroup(rg), ci, col)
		cs.Nulls += float64(nulls)
		if !ok {
			if md.RowGroup(rg).NumRows() > nulls {
				ranged = false
			}
			continue
		}
		if !cs.HasRange {
			cs.Min, cs.Max, cs.HasRange = lo, hi, true
			continue
		}
		if less(lo, cs.Min) {
			cs.Min = lo
		}
		if less(cs.Max, hi) {
			cs.Max = hi
		}
	}
	if !ranged {
		cs.Min, cs.Max, cs.HasRange = nil, nil, false
	}
	return cs
}

// chunkRange is a column chunk's min and max as the planner's values
// (int64, float64, string, time.Time), and its NULLs.
func chunkRange(rg *metadata.RowGroupMetaData, ci int, col *schema.Column) (lo, hi any, nulls int64, ok bool) {
	cc, err := rg.ColumnChunk(ci)
	if err != nil {
		return nil, nil, 0, false
	}
	if set, err := cc.StatsSet(); err != nil || !set {
		return nil, nil, 0, false
	}
	s, err := cc.Statistics()
	if err != nil || s == nil {
		return nil, nil, 0, false
	}
	nulls = s.NullCount()
	if !s.HasMinMax() {
		return nil, nil, nulls, false
	}
	lt := col.LogicalType()
	switch x := s.(type) {
	case *metadata.Int32Statistics:
		lo, hi, ok = logicalInt(int64(x.Min()), lt), logicalInt(int64(x.Max()), lt), true
	case *metadata.Int64Statistics:
		lo, hi, ok = logicalInt(x.Min(), lt), logicalInt(x.Max(), lt), true
	case *metadata.Float32Statistics:
		lo, hi, ok = float64(x.Min()), float64(x.Max()), true
	case *metadata.Float64Statistics:
		lo, hi, ok = x.Min(), x.Max(), true
	case *metadata.ByteArrayStatistics:
		if _, isString := lt.(schema.StringLogicalType); !isString && col.ConvertedType() != schema.ConvertedTypes.UTF8 {
			return nil, nil, nulls, false
		}
		lo, hi, ok = string(x.Min()), string(x.Max()), true
	default:
		return nil, nil, nulls, false
	}
	if f, isF := lo.(float64); isF && math.IsNaN(f) {
		return nil, nil, nulls, false
	}
	if f, isF := hi.(float64); isF && math.IsNaN(f) {
		return nil, nil, nulls, false
	}
	return lo, hi, nulls, ok
}

// logicalInt reads a stored integer by its logical type: a timestamp or a
// date as a time, a decimal as its number, others as they are.
func logicalInt(v int64, lt schema.LogicalType) any {
	switch t := lt.(type) {
	case *schema.TimestampLogicalType:
		switch t.TimeUnit() {
		case schema.TimeUnitMillis:
			return time.UnixMilli(v).UTC()
		case schema.TimeUnitMicros:
			return time.UnixMicro(v).UTC()
		case schema.TimeUnitNanos:
			return time.Unix(0, v).UTC()
		}
	case schema.DateLogicalType:
		return time.Unix(v*86400, 0).UTC()
	case *schema.DecimalLogicalType:
		return float64(v) / math.Pow10(int(t.Scale()))
	}
	return v
}

func less(a, b any) bool {
	switch x := a.(type) {
	case int64:
		y, ok := b.(int64)
		return ok && x < y
	case float64:
		y, ok := b.(float64)
		return ok && x < y
	case string:
		y, ok := b.(string)
		return ok && x < y
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Before(y)
	}
	return false
}

// sample counts the values of a column's sample.
type sample struct {
	counts map[uint64]int32 // per value, how often
	n      float64          // values sampled (non-NULL)
	// blockDistinct sums each block's own distinct values.
	blockDistinct float64
	blocks        int
}

func (s *sample) estimate(nonNull float64) float64 {
	d := float64(len(s.counts))
	if s.n <= 0 || nonNull <= 0 {
		return 0
	}
	if s.n >= nonNull {
		return d // the whole column
	}
	var est float64
	if s.blocks > 1 && d >= 0.95*s.blockDistinct && s.blockDistinct < 0.95*s.n {
		// Clustered: blocks share (almost) no value, yet repeat values.
		est = s.blockDistinct / s.n * nonNull
	} else {
		f1 := 0.0
		for _, c := range s.counts {
			if c == 1 {
				f1++
			}
		}
		q := s.n / nonNull
		est = d / (1 - (1-q)*f1/s.n)
	}
	return min(max(est, d), nonNull)
}

var statsSeed = maphash.MakeSeed()

// sampleDistinct reads the sample of column ci.
func sampleDistinct(pf *file.Reader, md *metadata.FileMetaData, ci int) (_ *sample, ok bool) {
	defer func() {
		if p := recover(); p != nil {
			if e, isErr := p.(error); !isErr || !errors.Is(e, dataflow.ErrMemory) {
				panic(p)
			}
			ok = false // a page past statsSampleMemory: no estimate
		}
	}()
	total := md.NumRows
	if total <= 0 || len(md.RowGroups) == 0 {
		return nil, false
	}
	// The blocks: per row group, the offsets and lengths to read, in order.
	type block struct{ off, n int64 }
	byGroup := make([][]block, len(md.RowGroups))
	if total <= statsSampleRows {
		for g := range md.RowGroups { // the whole column, a row group a block
			byGroup[g] = []block{{0, md.RowGroup(g).NumRows()}}
		}
	} else {
		size := int64(statsSampleRows / statsSampleBlocks)
		first, g := int64(0), 0
		for k := int64(0); k < statsSampleBlocks; k++ {
			start := k * total / statsSampleBlocks
			for g < len(md.RowGroups) && start >= first+md.RowGroup(g).NumRows() {
				first += md.RowGroup(g).NumRows()
				g++
			}
			if g == len(md.RowGroups) {
				break
			}
			off := start - first
			n := min(size, md.RowGroup(g).NumRows()-off)
			if bs := byGroup[g]; len(bs) > 0 && bs[len(bs)-1].off+bs[len(bs)-1].n > off {
				continue // overlaps the previous block of a small row group
			}
			byGroup[g] = append(byGroup[g], block{off, n})
		}
	}
	s := &sample{counts: map[uint64]int32{}}
	var h maphash.Hash
	h.SetSeed(statsSeed)
	for g, bs := range byGroup {
		if len(bs) == 0 {
			continue
		}
		cr, err := pf.RowGroup(g).Column(ci)
		if err != nil {
			return nil, false
		}
		at := int64(0)
		for _, b := range bs {
			if b.off > at {
				if _, err := skip(cr, b.off-at); err != nil {
					return nil, false
				}
			}
			seen, read, err := readBlock(cr, b.n, s, &h)
			if err != nil {
				return nil, false
			}
			at = b.off + b.n
			s.n += float64(read)
			s.blockDistinct += float64(seen)
			s.blocks++
		}
	}
	return s, true
}

func skip(cr file.ColumnChunkReader, n int64) (int64, error) {
	type skipper interface {
		Skip(int64) (int64, error)
	}
	if sk, ok := cr.(skipper); ok {
		return sk.Skip(n)
	}
	return 0, fmt.Errorf("column reader %T cannot skip", cr)
}

// readBlock reads n rows of cr into s: the block's distinct values and the
// values read (non-NULL).
func readBlock(cr file.ColumnChunkReader, n int64, s *sample, h *maphash.Hash) (int, int, error) {
	seen := map[uint64]bool{}
	add := func(x uint64) {
		s.counts[x]++
		seen[x] = true
	}
	addBytes := func(b []byte) {
		h.Reset()
		h.Write(b)
		add(h.Sum64())
	}
	defs := make([]int16, n)
	var read int
	var err error
	switch r := cr.(type) {
	case *file.Int32ColumnChunkReader:
		vals := make([]int32, n)
		_, read, err = r.ReadBatch(n, vals, defs, nil)
		for _, v := range vals[:read] {
			add(uint64(int64(v)))
		}
	case *file.Int64ColumnChunkReader:
		vals := make([]int64, n)
		_, read, err = r.ReadBatch(n, vals, defs, nil)
		for _, v := range vals[:read] {
			add(uint64(v))
		}
	case *file.Float32ColumnChunkReader:
		vals := make([]float32, n)
		_, read, err = r.ReadBatch(n, vals, defs, nil)
		for _, v := range vals[:read] {
			add(uint64(math.Float32bits(v)))
		}
	case *file.Float64ColumnChunkReader:
		vals := make([]float64, n)
		_, read, err = r.ReadBatch(n, vals, defs, nil)
		for _, v := range vals[:read] {
			add(math.Float64bits(v))
		}
	case *file.ByteArrayColumnChunkReader:
		vals := make([]parquet.ByteArray, n)
		_, read, err = r.ReadBatch(n, vals, defs, nil)
		for _, v := range vals[:read] {
			addBytes(v)
		}
	case *file.FixedLenByteArrayColumnChunkReader:
		vals := make([]parquet.FixedLenByteArray, n)
		_, read, err = r.ReadBatch(n, vals, defs, nil)
		for _, v := range vals[:read] {
			addBytes(v)
		}
	case *file.BooleanColumnChunkReader:
		vals := make([]bool, n)
		_, read, err = r.ReadBatch(n, vals, defs, nil)
		var buf [8]byte
		for _, v := range vals[:read] {
			buf[0] = 0
			if v {
				buf[0] = 1
			}
			add(binary.LittleEndian.Uint64(buf[:]))
		}
	default:
		return 0, 0, fmt.Errorf("column reader %T", cr)
	}
	return len(seen), read, err
}
