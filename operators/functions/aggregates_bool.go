package functions

import (
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// boolAcc is count_if, bool_and and bool_or over a BOOLEAN argument:
// NULLs are skipped, as every aggregate skips them.
type boolAcc struct {
	op    boolOp
	trues []int64
	seen  []int64 // non-NULL values: count_if of none is NULL, as DuckDB's
}

type boolOp uint8

const (
	countIf boolOp = iota
	boolAnd
	boolOr
)

func newBoolAgg(op boolOp) AggFunc {
	return func(arg, ret arrow.DataType) (Accumulator, error) {
		if arg != nil && arg.ID() != arrow.BOOL && arg.ID() != arrow.NULL {
			return nil, fmt.Errorf("%w: want a BOOLEAN argument, got %s", ErrBadArgument, arg)
		}
		return &boolAcc{op: op}, nil
	}
}

func (a *boolAcc) Grow(n int) { a.trues, a.seen = grow(a.trues, n), grow(a.seen, n) }

func (a *boolAcc) Update(gids []uint32, arg arrow.Array, from int) {
	b, ok := arg.(*array.Boolean)
	if !ok {
		return // all NULL
	}
	for k, g := range gids {
		i := from + k
		if b.IsNull(i) {
			continue
		}
		a.seen[g]++
		if b.Value(i) {
			a.trues[g]++
		}
	}
}

func (a *boolAcc) Merge(dst, src uint32) {
	a.trues[dst] += a.trues[src]
	a.seen[dst] += a.seen[src]
}

func (a *boolAcc) Reset(g uint32) { a.trues[g], a.seen[g] = 0, 0 }

func (a *boolAcc) Finish(mem memory.Allocator, gids []uint32) arrow.Array {
	if a.op == countIf {
		b := array.NewInt64Builder(mem)
		defer b.Release()
		for _, g := range gids {
			if a.seen[g] == 0 {
				b.AppendNull()
				continue
			}
			b.Append(a.trues[g])
		}
		return b.NewArray()
	}
	b := array.NewBooleanBuilder(mem)
	defer b.Release()
	for _, g := range gids {
		switch {
		case a.seen[g] == 0:
			b.AppendNull()
		case a.op == boolAnd:
			b.Append(a.trues[g] == a.seen[g])
		default:
			b.Append(a.trues[g] > 0)
		}
	}
	return b.NewArray()
}
