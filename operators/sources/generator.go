package sources

import (
	"context"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/internal/arrowx"
)

// GeneratorSchema is the generator's output: a row id, a key in [0, Keys), a
// value and an event time advancing Step per row.
var GeneratorSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "k", Type: arrow.PrimitiveTypes.Int64},
	{Name: "v", Type: arrow.PrimitiveTypes.Float64},
	{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_us},
}, nil)

// Generator is a Reader of synthetic rows at a bounded rate, for tests and
// benchmarks. Values are a deterministic function of the row id.
type Generator struct {
	Rows  int64         // total rows; < 0 is unbounded
	Batch int           // rows per record
	Rate  float64       // rows per second; 0 is as fast as possible
	Keys  int64         // distinct keys
	Start time.Time     // event time of row 0
	Step  time.Duration // event time between rows
	Ctx   context.Context

	next    int64
	started time.Time
}

// Schema is GeneratorSchema.
func (g *Generator) Schema() *arrow.Schema { return GeneratorSchema }

// Next makes the next batch, waiting as long as the rate requires.
func (g *Generator) Next(mem memory.Allocator) (arrow.Record, error) {
	if g.Rows >= 0 && g.next >= g.Rows {
		return nil, nil
	}
	n := int64(g.Batch)
	if g.Rows >= 0 && g.next+n > g.Rows {
		n = g.Rows - g.next
	}
	if g.Rate > 0 {
		if g.started.IsZero() {
			g.started = time.Now()
		}
		due := g.started.Add(time.Duration(float64(g.next) / g.Rate * float64(time.Second)))
		if wait := time.Until(due); wait > 0 {
			ctx := g.Ctx
			if ctx == nil {
				ctx = context.Background()
			}
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			}
		}
	}
	keys := max(g.Keys, 1)
	start := g.Start.UnixMicro()
	step := int64(g.Step / time.Microsecond)
	id := array.NewInt64Builder(mem)
	k := array.NewInt64Builder(mem)
	v := array.NewFloat64Builder(mem)
	ts := array.NewTimestampBuilder(mem, arrow.FixedWidthTypes.Timestamp_us.(*arrow.TimestampType))
	arrowx.Reserve(id, int(n))
	arrowx.Reserve(k, int(n))
	arrowx.Reserve(v, int(n))
	arrowx.Reserve(ts, int(n))
	for i := g.next; i < g.next+n; i++ {
		id.UnsafeAppend(i)
		h := uint64(i) * 0x9E3779B97F4A7C15
		k.UnsafeAppend(int64(h>>33) % keys)
		v.UnsafeAppend(float64(h>>40) / float64(1<<24) * 100)
		ts.UnsafeAppend(arrow.Timestamp(start + i*step))
	}
	g.next += n
	cols := []arrow.Array{id.NewArray(), k.NewArray(), v.NewArray(), ts.NewArray()}
	for _, b := range []array.Builder{id, k, v, ts} {
		b.Release()
	}
	rec := array.NewRecord(GeneratorSchema, cols, n)
	for _, c := range cols {
		c.Release()
	}
	return rec, nil
}

// Close does nothing.
func (g *Generator) Close() error { return nil }
