package exec

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/logical"
)

// TestExternalStreamAndSinkUseTheHooks runs a stream FROM NATS into a sink TO
// NATS through injected hooks: the source gets the declared schema and the
// event time of its first TIMESTAMP column, the sink gets every row.
func TestExternalStreamAndSinkUseTheHooks(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	st := &catalog.Stream{Name: "r", Source: "nats", Subject: "in", Format: "json",
		Columns: []catalog.Column{{Name: "v", Type: "BIGINT"}, {Name: "ts", Type: "TIMESTAMP"}}}
	scan, err := logical.NewScan(st, nil, "r", nil, logical.Pos{})
	if err != nil {
		t.Fatal(err)
	}
	plan := &logical.Plan{Root: &logical.Sink{Input: scan, Sink: &catalog.Sink{Name: "o", Kind: "nats", Target: "out"}}}
	if _, err := Build(plan, Options{Allocator: mem}); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("without hooks: %v", err)
	}
	var gotEt sources.EventTime
	stream := func(s *catalog.Stream, schema *arrow.Schema, _ []int, et sources.EventTime, _ *sources.Report) (func() (dataflow.Operator, error), error) {
		gotEt = et
		return func() (dataflow.Operator, error) {
			b := array.NewRecordBuilder(mem, schema)
			defer b.Release()
			b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
			b.Field(1).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{1, 2, 3}, nil)
			return builtin.NewSliceSource([]dataflow.Batch{{Record: b.NewRecord()}}), nil
		}, nil
	}
	out := &collect{}
	var sinkName string
	sink := func(s *catalog.Sink, _ *arrow.Schema) (sinks.Writer, error) { sinkName = s.Target; return out, nil }
	q, err := Build(plan, Options{Allocator: mem, Stream: stream, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	stats, err := q.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if gotEt.Column != 1 || sinkName != "out" || len(out.rows) != 3 || stats.RowsWritten != 3 {
		t.Fatalf("event time %+v, sink %q, rows %v, written %d", gotEt, sinkName, out.rows, stats.RowsWritten)
	}
	noCols := &catalog.Stream{Name: "x", Source: "nats", Subject: "in"}
	scan2, _ := logical.NewScan(noCols, nil, "x", nil, logical.Pos{})
	if _, err := Build(&logical.Plan{Root: &logical.Sink{Input: scan2}}, Options{Allocator: mem, Stream: stream}); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("stream without columns: %v", err)
	}
}

// A stream's source is asked for the declared columns its query reads and
// its event time, in declared order, with their positions (a CSV message's
// fields are found by position), not for every declared column.
func TestExternalStreamIsAskedForTheColumnsItsQueryReads(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	st := &catalog.Stream{Name: "b", Source: "nats", Subject: "in", Format: "csv",
		Columns: []catalog.Column{{Name: "auction", Type: "BIGINT"}, {Name: "bidder", Type: "BIGINT"}, {Name: "price", Type: "BIGINT"},
			{Name: "url", Type: "VARCHAR"}, {Name: "ts", Type: "TIMESTAMP"}, {Name: "extra", Type: "VARCHAR"}}}
	// SELECT price, auction: the scan reads columns 2 and 0.
	scan, err := logical.NewScan(st, nil, "b", []int{2, 0}, logical.Pos{})
	if err != nil {
		t.Fatal(err)
	}
	var got *arrow.Schema
	var gotCols []int
	var gotEt sources.EventTime
	stream := func(_ *catalog.Stream, schema *arrow.Schema, cols []int, et sources.EventTime, _ *sources.Report) (func() (dataflow.Operator, error), error) {
		got, gotCols, gotEt = schema, cols, et
		return func() (dataflow.Operator, error) {
			b := array.NewRecordBuilder(mem, schema)
			defer b.Release()
			b.Field(0).(*array.Int64Builder).AppendValues([]int64{7, 8}, nil)
			b.Field(1).(*array.Int64Builder).AppendValues([]int64{100, 200}, nil)
			b.Field(2).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{1, 2}, nil)
			return builtin.NewSliceSource([]dataflow.Batch{{Record: b.NewRecord()}}), nil
		}, nil
	}
	out := &collect{}
	q, err := Build(&logical.Plan{Root: &logical.Sink{Input: scan}}, Options{Allocator: mem, Stream: stream, Output: out})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range got.Fields() {
		names = append(names, f.Name)
	}
	if fmt.Sprint(names) != "[auction price ts]" || fmt.Sprint(gotCols) != "[0 2 4]" || gotEt.Column != 2 {
		t.Fatalf("source asked for %v at %v, event time column %d; want [auction price ts] at [0 2 4], 2", names, gotCols, gotEt.Column)
	}
	if fmt.Sprint(out.rows) != "[[100 7] [200 8]]" {
		t.Fatalf("rows %v, want price, auction: [[100 7] [200 8]]", out.rows)
	}
}

// A LIMIT on the query's result ends an endless stream once it has its rows;
// the run drains and returns by itself.
func TestFinalLimitEndsAnEndlessStream(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	st := &catalog.Stream{Name: "g", Source: "nats", Subject: "in", Format: "json",
		Columns: []catalog.Column{{Name: "id", Type: "BIGINT"}, {Name: "k", Type: "BIGINT"}, {Name: "v", Type: "DOUBLE"}, {Name: "ts", Type: "TIMESTAMP"}}}
	scan, err := logical.NewScan(st, nil, "g", nil, logical.Pos{})
	if err != nil {
		t.Fatal(err)
	}
	plan := &logical.Plan{Root: &logical.Sink{Input: &logical.Limit{Input: scan, N: 5}}}
	stream := func(_ *catalog.Stream, _ *arrow.Schema, _ []int, et sources.EventTime, report *sources.Report) (func() (dataflow.Operator, error), error) {
		return func() (dataflow.Operator, error) {
			// Rows: -1 never ends; a batch of 2 every millisecond.
			return sources.NewSource(&sources.Generator{Rows: -1, Batch: 2, Rate: 2000, Keys: 3}, et, report), nil
		}, nil
	}
	out := &collect{}
	q, err := Build(plan, Options{Allocator: mem, Stream: stream, Output: out})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := q.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil || len(out.rows) != 5 {
		t.Fatalf("%d rows, context %v: the limit should have ended the stream with 5", len(out.rows), ctx.Err())
	}
}
