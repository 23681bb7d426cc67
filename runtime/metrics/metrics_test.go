package metrics_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/runtime/metrics"
)

// waker is an operator with an optional callback the engine finds by type
// assertion.
type waker struct{ dataflow.Base }

func (waker) OnWake(*dataflow.Context) error { return nil }

// TestInstrumentKeepsOptionalCallbacks: the latency wrapper must have
// exactly the optional methods of the operator it wraps.
func TestInstrumentKeepsOptionalCallbacks(t *testing.T) {
	reg := metrics.New()
	g := &dataflow.Graph{Query: "q"}
	src := g.AddOperator(dataflow.OperatorSpec{Name: "src", Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) {
		return builtin.NewSliceSource(nil), nil
	}})
	w := g.AddOperator(dataflow.OperatorSpec{Name: "w", Inputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) { return waker{}, nil }})
	b := g.AddOperator(dataflow.OperatorSpec{Name: "b", Inputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) { return dataflow.Base{}, nil }})
	g.Connect(src, 0, w, 0)
	g.Connect(src, 0, b, 0)
	reg.Instrument(g, "w1")
	s, _ := g.Operators[src].New(dataflow.Instance{})
	if _, ok := s.(dataflow.Source); !ok {
		t.Error("the source lost its Produce")
	}
	op, _ := g.Operators[w].New(dataflow.Instance{})
	if _, ok := op.(dataflow.Waker); !ok {
		t.Error("the wrapped waker lost OnWake")
	}
	op, _ = g.Operators[b].New(dataflow.Instance{})
	if _, ok := op.(dataflow.Waker); ok {
		t.Error("a plain operator gained OnWake")
	}
	if _, ok := op.(dataflow.FrontierObserver); ok {
		t.Error("a plain operator gained OnFrontier")
	}
}

// TestServeScrape runs an instrumented dataflow, tracks its counters and
// scrapes the endpoint.
func TestServeScrape(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	reg := metrics.New()
	srv, err := metrics.Serve("127.0.0.1:0", reg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	g := &dataflow.Graph{Query: "q7"}
	src := g.AddOperator(dataflow.OperatorSpec{Name: "gen", Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) {
		return builtin.NewGenerator(10, func(i int, mem memory.Allocator) (dataflow.Epoch, arrow.Record, error) {
			b := array.NewRecordBuilder(mem, schema)
			defer b.Release()
			b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
			return dataflow.Epoch(i), b.NewRecord(), nil
		}), nil
	}})
	sink := g.AddOperator(dataflow.OperatorSpec{Name: "count", Inputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) {
		return builtin.NewSink(func(b dataflow.Batch) error { b.Record.Release(); return nil }), nil
	}})
	g.Connect(src, 0, sink, 0)
	reg.Instrument(g, "w1")
	ws, err := dataflow.BuildLocal(g, dataflow.Config{Allocator: mem, Latency: true})
	if err != nil {
		t.Fatal(err)
	}
	freeze := reg.Track("q7", "w1", ws[0].Stats, func() []relay.LinkStats { return nil })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := dataflow.RunWorkers(ctx, ws); err != nil {
		t.Fatal(err)
	}
	freeze()
	resp, err := http.Get(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`tierflow_operator_rows_in_total{instance="0",operator="count",query="q7",worker="w1"} 30`,
		`tierflow_operator_batches_out_total{instance="0",operator="gen",query="q7",worker="w1"} 10`,
		`tierflow_operator_batch_seconds_count{operator="count",query="q7",worker="w1"} 10`,
		// The sink's end-to-end latency: every row, all within 30 s.
		`tierflow_sink_end_to_end_seconds_count{instance="0",operator="count",query="q7",worker="w1"} 30`,
		`tierflow_sink_end_to_end_seconds_bucket{instance="0",operator="count",query="q7",worker="w1",le="30"} 30`,
		`tierflow_sink_slo_miss_rows_total{instance="0",operator="count",query="q7",worker="w1"} 0`,
		`go_goroutines`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("scrape lacks %s", want)
		}
	}
}
