package dataflow_test

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
)

// batcher buffers rows and emits them when it has at least size, or when
// delay has passed since the first buffered row (a dynamic batcher with a
// maximum queue delay). It keeps a capability for what it buffers.
type batcher struct {
	dataflow.Base
	size    int64
	delay   time.Duration
	pending []arrow.Record
	rows    int64
	cap     *dataflow.Capability
}

func (b *batcher) OnBatch(ctx *dataflow.Context, _ int, in dataflow.Batch, cap *dataflow.Capability) error {
	if b.cap == nil {
		var err error
		if b.cap, err = cap.Retain(); err != nil {
			in.Record.Release()
			return err
		}
		if err := ctx.WakeAfter(b.delay); err != nil {
			in.Record.Release()
			return err
		}
	}
	b.pending = append(b.pending, in.Record)
	b.rows += in.Record.NumRows()
	if b.rows >= b.size {
		return b.flush(ctx)
	}
	return nil
}

func (b *batcher) OnWake(ctx *dataflow.Context) error { return b.flush(ctx) }

func (b *batcher) OnFrontier(ctx *dataflow.Context, _ int, f dataflow.Epoch) error {
	if f == dataflow.Closed {
		return b.flush(ctx)
	}
	return nil
}

func (b *batcher) flush(ctx *dataflow.Context) error {
	if b.cap == nil {
		return nil
	}
	rec, err := concat(ctx, b.pending)
	b.release()
	if err != nil {
		return err
	}
	err = ctx.Emit(0, b.cap, rec)
	b.cap.Drop()
	b.cap = nil
	return err
}

func (b *batcher) release() {
	for _, r := range b.pending {
		r.Release()
	}
	b.pending, b.rows = nil, 0
}

func (b *batcher) Close(*dataflow.Context) error {
	b.release()
	return nil
}

func concat(ctx *dataflow.Context, recs []arrow.Record) (arrow.Record, error) {
	cols := make([]arrow.Array, recs[0].NumCols())
	var rows int64
	for _, r := range recs {
		rows += r.NumRows()
	}
	for c := range cols {
		parts := make([]arrow.Array, len(recs))
		for i, r := range recs {
			parts[i] = r.Column(c)
		}
		var err error
		if cols[c], err = array.Concatenate(parts, ctx.Allocator()); err != nil {
			return nil, err
		}
		defer cols[c].Release()
	}
	return array.NewRecord(recs[0].Schema(), cols, rows), nil
}

func TestWakeFlushesWithoutInput(t *testing.T) {
	t.Run("stepped with a fake clock", func(t *testing.T) {
		mem := checkedAlloc(t)
		var got builtin.Captured
		defer got.Release()
		now := time.Unix(1000, 0)
		allowed := 3
		g := &dataflow.Graph{Query: "w"}
		src := g.AddOperator(op("src", 0, 1, nil, func(dataflow.Instance) dataflow.Operator {
			var bs []dataflow.Batch
			for i := 0; i < 4; i++ {
				bs = append(bs, dataflow.Batch{Record: kvRecord(mem, 3*i, 3)})
			}
			return &gatedSource{SliceSource: builtin.NewSliceSource(bs), allowed: &allowed}
		}))
		bat := g.AddOperator(op("batch", 1, 1, nil, func(dataflow.Instance) dataflow.Operator {
			return &batcher{size: 100, delay: 5 * time.Millisecond}
		}))
		sink := g.AddOperator(capture("sink", 1, nil, &got))
		g.Connect(src, 0, bat, 0)
		g.Connect(bat, 0, sink, 0)
		ws, err := dataflow.BuildLocal(g, dataflow.Config{Allocator: mem, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		defer ws[0].Close()
		for i := 0; i < 5; i++ {
			_, _ = ws[0].Step()
		}
		if at, ok := ws[0].NextWake(); !ok || !at.Equal(now.Add(5*time.Millisecond)) {
			t.Fatalf("next wake %v %v", at, ok)
		}
		if n := got.Rows(); n != 0 {
			t.Fatalf("%d rows flushed before the delay", n)
		}
		now = now.Add(5 * time.Millisecond)
		_, _ = ws[0].Step()
		if n := got.Rows(); n != 9 {
			t.Fatalf("%d rows after the delay, want the 9 buffered", n)
		}
		allowed = 10
		if err := dataflow.StepUntilDone(ws, 100); err != nil {
			t.Fatal(err)
		}
		if n := got.Rows(); n != 12 {
			t.Fatalf("%d rows in the end, want 12", n)
		}
	})
	t.Run("concurrent", func(t *testing.T) {
		checkNoGoroutineLeak(t)
		mem := checkedAlloc(t)
		var got builtin.Captured
		defer got.Release()
		g := &dataflow.Graph{Query: "w"}
		src := g.AddOperator(op("src", 0, 1, nil, func(dataflow.Instance) dataflow.Operator {
			return &blockingSource{rec: kvRecord(mem, 0, 4)}
		}))
		bat := g.AddOperator(op("batch", 1, 1, nil, func(dataflow.Instance) dataflow.Operator {
			return &batcher{size: 100, delay: time.Millisecond}
		}))
		sink := g.AddOperator(capture("sink", 1, nil, &got))
		g.Connect(src, 0, bat, 0)
		g.Connect(bat, 0, sink, 0)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- dataflow.Run(ctx, g, dataflow.Config{Allocator: mem}) }()
		// The source sends once and then blocks: only the wake-up can
		// deliver the 4 rows.
		eventually(t, 5*time.Second, "the delayed flush", func() bool { return got.Rows() == 4 })
		cancel()
		if err := <-done; err != context.Canceled {
			t.Fatalf("Run = %v", err)
		}
	})
}

// blockingSource emits one record and then blocks until cancelled, like a
// source waiting on an idle stream.
type blockingSource struct {
	dataflow.Base
	rec arrow.Record
	cap *dataflow.Capability
}

func (s *blockingSource) Open(_ *dataflow.Context, cap *dataflow.Capability) (err error) {
	s.cap, err = cap.Retain()
	return err
}

func (s *blockingSource) Produce(ctx *dataflow.Context) (bool, error) {
	if s.rec != nil {
		rec := s.rec
		s.rec = nil
		return false, ctx.Emit(0, s.cap, rec)
	}
	<-ctx.Context().Done()
	return false, ctx.Context().Err()
}

func (s *blockingSource) Close(*dataflow.Context) error {
	if s.rec != nil {
		s.rec.Release()
	}
	return nil
}

// pacedSource emits n one-row batches, sleeping interval between them by
// asking to be woken rather than blocking in Produce.
type pacedSource struct {
	dataflow.Base
	n, i     int
	interval time.Duration
	cap      *dataflow.Capability
	polls    *int
}

func (s *pacedSource) Open(_ *dataflow.Context, cap *dataflow.Capability) (err error) {
	s.cap, err = cap.Retain()
	return err
}

func (s *pacedSource) Produce(ctx *dataflow.Context) (bool, error) {
	*s.polls++
	if s.i == s.n {
		s.cap.Drop()
		return true, nil
	}
	s.i++
	if err := ctx.Emit(0, s.cap, kvRecord(ctx.Allocator(), s.i, 1)); err != nil {
		return false, err
	}
	return false, ctx.WakeAfter(s.interval)
}

func TestSourceSleepsUntilWoken(t *testing.T) {
	mem := checkedAlloc(t)
	var got builtin.Captured
	defer got.Release()
	now := time.Unix(0, 0)
	polls := 0
	g := &dataflow.Graph{Query: "p"}
	src := g.AddOperator(op("src", 0, 1, nil, func(dataflow.Instance) dataflow.Operator {
		return &pacedSource{n: 3, interval: time.Second, polls: &polls}
	}))
	sink := g.AddOperator(capture("sink", 1, nil, &got))
	g.Connect(src, 0, sink, 0)
	ws, err := dataflow.BuildLocal(g, dataflow.Config{Allocator: mem, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer ws[0].Close()
	for i := 0; i < 10; i++ {
		_, _ = ws[0].Step()
	}
	if got.Rows() != 1 || polls != 1 {
		t.Fatalf("before the interval: %d rows, %d polls; want 1 and 1", got.Rows(), polls)
	}
	now = now.Add(time.Second)
	for i := 0; i < 10; i++ {
		_, _ = ws[0].Step()
	}
	if got.Rows() != 2 || polls != 2 {
		t.Fatalf("after one interval: %d rows, %d polls; want 2 and 2", got.Rows(), polls)
	}
	now = now.Add(time.Hour)
	_, _ = ws[0].Step()
	now = now.Add(time.Hour)
	_, _ = ws[0].Step()
	if !ws[0].Done() || got.Rows() != 3 {
		t.Fatalf("done %v with %d rows", ws[0].Done(), got.Rows())
	}
}

func TestSourceSleepsUntilWokenConcurrently(t *testing.T) {
	checkNoGoroutineLeak(t)
	mem := checkedAlloc(t)
	var got builtin.Captured
	defer got.Release()
	polls := 0
	g := &dataflow.Graph{Query: "p"}
	src := g.AddOperator(op("src", 0, 1, nil, func(dataflow.Instance) dataflow.Operator {
		return &pacedSource{n: 5, interval: 2 * time.Millisecond, polls: &polls}
	}))
	sink := g.AddOperator(capture("sink", 1, nil, &got))
	g.Connect(src, 0, sink, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := dataflow.Run(ctx, g, dataflow.Config{Allocator: mem}); err != nil {
		t.Fatal(err)
	}
	if got.Rows() != 5 || polls != 6 {
		t.Fatalf("%d rows, %d polls; want 5 and 6 (no busy polling)", got.Rows(), polls)
	}
	if el := time.Since(start); el < 10*time.Millisecond {
		t.Fatalf("finished in %v, before 5 intervals of 2ms", el)
	}
}
