package dataflow

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/cespare/xxhash/v2"

	"github.com/tierflow/tierflow/internal/arrowx"
)

// PartitionFunc assigns each row of rec to one of parts receiver instances:
// it fills dst (len(dst) == rec.NumRows()) with indices in [0, parts). It
// works a column at a time into a buffer the engine reuses, so exchange costs
// no per-row allocation; the engine then gathers each partition's rows with
// one take kernel per column. The operators layer supplies key functions
// (HashColumns is the basic one).
type PartitionFunc func(rec arrow.Record, parts int, dst []uint32) error

// ErrPartition: a partition function failed or returned an index out of
// range.
var ErrPartition = errors.New("dataflow: partitioning failed")

// Split gathers rec's rows into parts records by the per-row partition index
// part. Partitions without rows are nil. When all rows go to one partition
// rec itself is retained instead of copied. rec is not released.
func Split(mem memory.Allocator, rec arrow.Record, part []uint32, parts int) ([]arrow.Record, error) {
	n := int(rec.NumRows())
	if len(part) != n {
		return nil, fmt.Errorf("%w: %d partition indices for %d rows", ErrPartition, len(part), n)
	}
	counts := make([]int, parts+1)
	for _, p := range part {
		if int(p) >= parts {
			return nil, fmt.Errorf("%w: partition index %d of %d", ErrPartition, p, parts)
		}
		counts[p+1]++
	}
	out := make([]arrow.Record, parts)
	for p := 0; p < parts; p++ {
		if counts[p+1] == n {
			rec.Retain()
			out[p] = rec
			return out, nil
		}
	}
	// Counting sort of row indices by partition: offsets in counts.
	for p := 1; p <= parts; p++ {
		counts[p] += counts[p-1]
	}
	idx := make([]int32, n)
	next := append([]int(nil), counts[:parts]...)
	for row, p := range part {
		idx[next[p]] = int32(row)
		next[p]++
	}
	cols := make([]arrow.Array, rec.NumCols())
	for p := 0; p < parts; p++ {
		lo, hi := counts[p], counts[p+1]
		if lo == hi {
			continue
		}
		var err error
		for c := range cols {
			// The shared gather kernel: flat columns and tensors by
			// direct copies, the rest through Arrow's take.
			cols[c], err = arrowx.Gather(context.Background(), mem, rec.Column(c), idx[lo:hi])
			if err != nil {
				for _, a := range cols[:c] {
					a.Release()
				}
				break
			}
		}
		if err != nil {
			for _, r := range out {
				if r != nil {
					r.Release()
				}
			}
			return nil, fmt.Errorf("%w: take: %v", ErrPartition, err)
		}
		out[p] = array.NewRecord(rec.Schema(), cols, int64(hi-lo))
		for c := range cols {
			cols[c].Release()
			cols[c] = nil
		}
	}
	return out, nil
}

// HashColumns partitions rows by a hash of the given key columns (by index).
// Equal keys always land in the same partition; nulls hash alike. Supported:
// every fixed-width type (integers, floats, dates, timestamps, decimals...),
// booleans, and (large) strings and binaries.
func HashColumns(cols ...int) PartitionFunc {
	return func(rec arrow.Record, parts int, dst []uint32) error {
		n := int(rec.NumRows())
		hashes := make([]uint64, n)
		for _, c := range cols {
			if c < 0 || c >= int(rec.NumCols()) {
				return fmt.Errorf("%w: key column %d of %d", ErrPartition, c, rec.NumCols())
			}
			if err := hashColumn(rec.Column(c), hashes); err != nil {
				return fmt.Errorf("%w: key column %d (%s): %v", ErrPartition, c, rec.Schema().Field(c).Name, err)
			}
		}
		for i, h := range hashes {
			// Lemire's multiply-shift maps the hash onto [0, parts) without a division.
			dst[i] = uint32((uint64(uint32(h>>32)) * uint64(parts)) >> 32)
		}
		return nil
	}
}

func mix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

func combine(acc, v uint64) uint64 { return mix64(acc*0x9e3779b97f4a7c15 + v) }

const nullHash = 0x5bd1e9955bd1e995

// hashColumn folds arr's per-row hash into acc, one tight loop per physical
// layout.
func hashColumn(arr arrow.Array, acc []uint64) error {
	nulls := arr.NullN() > 0
	switch a := arr.(type) {
	case *array.String:
		for i := range acc {
			if nulls && a.IsNull(i) {
				acc[i] = combine(acc[i], nullHash)
				continue
			}
			acc[i] = combine(acc[i], xxhash.Sum64String(a.Value(i)))
		}
		return nil
	case *array.LargeString:
		for i := range acc {
			if nulls && a.IsNull(i) {
				acc[i] = combine(acc[i], nullHash)
				continue
			}
			acc[i] = combine(acc[i], xxhash.Sum64String(a.Value(i)))
		}
		return nil
	case *array.Binary:
		for i := range acc {
			if nulls && a.IsNull(i) {
				acc[i] = combine(acc[i], nullHash)
				continue
			}
			acc[i] = combine(acc[i], xxhash.Sum64(a.Value(i)))
		}
		return nil
	case *array.Boolean:
		for i := range acc {
			v := uint64(1)
			if nulls && a.IsNull(i) {
				v = nullHash
			} else if a.Value(i) {
				v = 2
			}
			acc[i] = combine(acc[i], v)
		}
		return nil
	}
	fw, ok := arr.DataType().(arrow.FixedWidthDataType)
	if !ok || fw.BitWidth()%8 != 0 {
		return fmt.Errorf("cannot hash type %s", arr.DataType())
	}
	w := fw.BitWidth() / 8
	data := arr.Data()
	buf := data.Buffers()[1].Bytes()[data.Offset()*w:]
	switch norm := hashForm(arr.DataType()); {
	case norm == hashFloat:
		// A float hashes as the float64 of its value (-0 as 0), so a
		// FLOAT key meets a DOUBLE one of the same value.
		for i := range acc {
			if nulls && arr.IsNull(i) {
				acc[i] = combine(acc[i], nullHash)
				continue
			}
			var f float64
			if w == 4 {
				f = float64(math.Float32frombits(binary.LittleEndian.Uint32(buf[i*4:])))
			} else {
				f = math.Float64frombits(binary.LittleEndian.Uint64(buf[i*8:]))
			}
			if f == 0 {
				f = 0
			}
			acc[i] = combine(acc[i], math.Float64bits(f))
		}
		return nil
	case !nulls && w == 8:
		for i, v := range arrow.Uint64Traits.CastFromBytes(buf)[:len(acc)] {
			acc[i] = combine(acc[i], v)
		}
		return nil
	case !nulls && w == 4 && norm == hashSigned:
		for i, v := range arrow.Int32Traits.CastFromBytes(buf)[:len(acc)] {
			acc[i] = combine(acc[i], uint64(int64(v)))
		}
		return nil
	case !nulls && w == 4:
		for i, v := range arrow.Uint32Traits.CastFromBytes(buf)[:len(acc)] {
			acc[i] = combine(acc[i], uint64(v))
		}
		return nil
	}
	signed := hashForm(arr.DataType()) == hashSigned
	for i := range acc {
		if nulls && arr.IsNull(i) {
			acc[i] = combine(acc[i], nullHash)
			continue
		}
		v := buf[i*w : i*w+w]
		var x uint64
		if w <= 8 {
			for j := w - 1; j >= 0; j-- {
				x = x<<8 | uint64(v[j])
			}
			if signed && w < 8 && v[w-1]&0x80 != 0 {
				x |= ^uint64(0) << (8 * w) // sign-extended: -1 as INT hashes as -1 as BIGINT
			}
		} else {
			x = xxhash.Sum64(v)
		}
		acc[i] = combine(acc[i], x)
	}
	return nil
}

// How a fixed-width value is hashed: by its value, so that the same
// number in two integer widths (a join of an INT key with a BIGINT one,
// each side exchanged by its own column) hashes alike.
const (
	hashRaw = iota
	hashSigned
	hashFloat
)

func hashForm(t arrow.DataType) int {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
		return hashSigned
	case arrow.FLOAT32, arrow.FLOAT64:
		return hashFloat
	}
	return hashRaw
}

// HashAlike reports whether equal values of types a and b hash alike under
// HashColumns: the same type, integers of any width and sign (a value
// both can hold has one hash), floats of either width, or strings of
// either offset width. Rows of two inputs exchanged by such columns meet
// in one instance when their keys are equal.
func HashAlike(a, b arrow.DataType) bool {
	if arrow.TypeEqual(a, b) {
		return true
	}
	integer := func(t arrow.DataType) bool { return arrow.IsInteger(t.ID()) }
	str := func(t arrow.DataType) bool { return t.ID() == arrow.STRING || t.ID() == arrow.LARGE_STRING }
	switch {
	case integer(a) && integer(b), str(a) && str(b):
		return true
	case hashForm(a) == hashFloat && hashForm(b) == hashFloat:
		return true
	}
	return false
}

// balancer picks receivers for whole batches in proportion to shares,
// deterministically: the receiver furthest below its share gets the next
// batch.
type balancer struct {
	shares []float64
	sent   []float64
}

func newBalancer(shares []float64, n int) *balancer {
	b := &balancer{shares: make([]float64, n), sent: make([]float64, n)}
	for i := range b.shares {
		b.shares[i] = 1
		if shares != nil {
			b.shares[i] = shares[i]
		}
	}
	return b
}

func (b *balancer) pick(rows int64) int {
	best, bestLoad := -1, math.Inf(1)
	for i, s := range b.shares {
		if s <= 0 {
			continue
		}
		if load := (b.sent[i] + float64(rows)) / s; load < bestLoad {
			best, bestLoad = i, load
		}
	}
	b.sent[best] += float64(rows)
	return best
}
