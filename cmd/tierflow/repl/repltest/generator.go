// Package repltest holds a test double of the REPL's Engine: a generator of
// rows shaped like the bound query's result, endless unless the query has a
// LIMIT, so REPL tests can stream and cancel without an executor. It stands
// beside the real executor path, never in place of it in the binary.
package repltest

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/cmd/tierflow/repl"
	"github.com/tierflow/tierflow/planner/logical"
)

// Generator is a repl.Engine whose queries emit Batch rows every Interval.
type Generator struct {
	Batch    int              // rows per batch; 0 means 2
	Interval time.Duration    // pause between batches; 0 means 20ms
	Alloc    memory.Allocator // nil means memory.DefaultAllocator
}

// Exec starts a generated stream for q.
func (g Generator) Exec(_ context.Context, q repl.Query) (repl.Stream, error) {
	if q.Bound == nil {
		return nil, fmt.Errorf("repltest: query is not bound")
	}
	s := &stream{g: g, schema: q.Bound.Root.Schema(), limit: -1}
	logical.Walk(q.Bound.Root, func(n logical.Node) bool {
		if l, ok := n.(*logical.Limit); ok {
			s.limit = l.N
		}
		return true
	})
	if s.g.Batch <= 0 {
		s.g.Batch = 2
	}
	if s.g.Interval <= 0 {
		s.g.Interval = 20 * time.Millisecond
	}
	if s.g.Alloc == nil {
		s.g.Alloc = memory.DefaultAllocator
	}
	return s, nil
}

type stream struct {
	g       Generator
	schema  *arrow.Schema
	limit   int64
	emitted int64
}

func (s *stream) Schema() *arrow.Schema { return s.schema }

func (s *stream) Close() error { return nil }

func (s *stream) Next(ctx context.Context) (arrow.Record, error) {
	if s.limit >= 0 && s.emitted >= s.limit {
		return nil, io.EOF
	}
	if s.emitted > 0 {
		t := time.NewTimer(s.g.Interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
	n := int64(s.g.Batch)
	if s.limit >= 0 {
		n = min(n, s.limit-s.emitted)
	}
	b := array.NewRecordBuilder(s.g.Alloc, s.schema)
	defer b.Release()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for k := s.emitted; k < s.emitted+n; k++ {
		for i, fb := range b.Fields() {
			switch fb := fb.(type) {
			case *array.Int64Builder:
				fb.Append(k)
			case *array.Int32Builder:
				fb.Append(int32(k))
			case *array.Float64Builder:
				fb.Append(float64(k) + 0.5)
			case *array.Float32Builder:
				fb.Append(float32(k) + 0.5)
			case *array.StringBuilder:
				fb.Append(fmt.Sprintf("row-%d", k))
			case *array.BooleanBuilder:
				fb.Append(k%2 == 0)
			case *array.TimestampBuilder:
				unit := s.schema.Field(i).Type.(*arrow.TimestampType).Unit
				fb.Append(arrow.Timestamp(base.Add(time.Duration(k)*time.Second).UnixNano() / int64(unit.Multiplier())))
			default:
				fb.AppendNull()
			}
		}
	}
	s.emitted += n
	return b.NewRecord(), nil
}
