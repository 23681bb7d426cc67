// Package operators is `tierflow bench operators`: it measures the relational
// operators against the bare arrow compute kernel or plain Go loop doing the
// same work, in the same process, so the ratio is the engine's overhead. The
// command prints its rows; the Go benchmarks in this package run the same
// cases.
//
// It imports the operators packages and dataflow; never relay or runtime.
package operators

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/compute"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/arrow/scalar"

	"github.com/tierflow/tierflow/bench"
	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
	"github.com/tierflow/tierflow/operators/eval"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/operators/rel"
	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/planner/expr"
)

// Config sizes a run.
type Config struct {
	Rows    int64 // rows per measurement
	Batch   int   // rows per record batch
	Keys    int64 // distinct group / join keys
	Repeats int   // best of this many measurements
}

// DefaultConfig is what `tierflow bench operators` runs.
func DefaultConfig() Config { return Config{Rows: 2 << 20, Batch: 64 << 10, Keys: 1000, Repeats: 3} }

// Row is one benchmark's result.
type Row struct {
	Benchmark    string  `json:"benchmark"`
	Rows         int64   `json:"rows"`
	EngineRowsS  float64 `json:"engine_rows_per_s"`
	Baseline     string  `json:"baseline"`
	BaselineRows float64 `json:"baseline_rows_per_s"`
	// Overhead is baseline speed / engine speed: 1.0 is no overhead.
	Overhead float64 `json:"overhead"`
}

// Case is one benchmark: the engine's way and the baseline's way of doing the
// same work on a batch.
type Case struct {
	Name     string
	Baseline string
	// Setup prepares both functions; done releases their state.
	Setup func(mem memory.Allocator, cfg Config) (engine, baseline func(rec arrow.Record) error, done func(), err error)
	// Whole, when set, runs the engine over all batches at once (a dataflow).
	Whole func(mem memory.Allocator, cfg Config, batches []arrow.Record) error
}

// Batches generates the benchmark's input: id, k (Keys distinct), v, ts (10 µs
// apart: 100,000 rows per one-second window).
func Batches(mem memory.Allocator, cfg Config) ([]arrow.Record, error) {
	g := &sources.Generator{Rows: cfg.Rows, Batch: cfg.Batch, Keys: cfg.Keys, Start: time.Unix(1_700_000_000, 0), Step: 10 * time.Microsecond}
	var out []arrow.Record
	for {
		rec, err := g.Next(mem)
		if err != nil {
			return nil, err
		}
		if rec == nil {
			return out, nil
		}
		out = append(out, rec)
	}
}

var (
	colID = &expr.Column{Index: 0, Name: "id", DataType: expr.Int64}
	colK  = &expr.Column{Index: 1, Name: "k", DataType: expr.Int64}
	colV  = &expr.Column{Index: 2, Name: "v", DataType: expr.Float64}
	colTS = &expr.Column{Index: 3, Name: "ts", DataType: expr.Timestamp}
)

func lit(v any) expr.Expr { l, _ := expr.NewLiteral(v); return l }

func call(name string, args ...expr.Expr) expr.Expr {
	c, err := expr.Builtins().NewCall(name, args...)
	if err != nil {
		panic(err)
	}
	return c
}

// Cases are the benchmarks, in table order.
func Cases() []Case {
	return []Case{filterCase(), projectCase(), aggregateCase(), joinCase(), tumbleCase()}
}

func filterCase() Case {
	return Case{Name: "filter v > 50", Baseline: "Go loop: compare + copy 4 columns",
		Setup: func(mem memory.Allocator, cfg Config) (func(arrow.Record) error, func(arrow.Record) error, func(), error) {
			c := functions.NewCtx(mem)
			pred, err := eval.NewPredicate(call("greater", colV, lit(50.0)), sources.GeneratorSchema, functions.Builtins())
			if err != nil {
				return nil, nil, nil, err
			}
			engine := func(rec arrow.Record) error {
				out, err := pred.Filter(c, rec)
				if out != nil {
					out.Release()
				}
				return err
			}
			base := func(rec arrow.Record) error {
				id, k := functions.Int64Values(rec.Column(0)), functions.Int64Values(rec.Column(1))
				v, ts := rec.Column(2).(*array.Float64).Float64Values(), functions.Int64Values(rec.Column(3))
				n := 0
				oid, ok, ov, ots := make([]int64, len(v)), make([]int64, len(v)), make([]float64, len(v)), make([]int64, len(v))
				for i, x := range v {
					if x > 50 {
						oid[n], ok[n], ov[n], ots[n] = id[i], k[i], x, ts[i]
						n++
					}
				}
				out := goRecord(rec.Schema(), n, oid[:n], ok[:n], ov[:n], ots[:n])
				out.Release()
				return nil
			}
			return engine, base, func() {}, nil
		}}
}

// goRecord wraps Go slices as a record without copying (the baseline's
// output; the engine builds real Arrow buffers).
func goRecord(schema *arrow.Schema, n int, cols ...any) arrow.Record {
	arrs := make([]arrow.Array, len(cols))
	for i, c := range cols {
		var buf *memory.Buffer
		switch c := c.(type) {
		case []int64:
			buf = memory.NewBufferBytes(arrow.Int64Traits.CastToBytes(c))
		case []float64:
			buf = memory.NewBufferBytes(arrow.Float64Traits.CastToBytes(c))
		}
		d := array.NewData(schema.Field(i).Type, n, []*memory.Buffer{nil, buf}, nil, 0, 0)
		arrs[i] = array.MakeFromData(d)
		d.Release()
	}
	rec := array.NewRecord(schema, arrs, int64(n))
	for _, a := range arrs {
		a.Release()
	}
	return rec
}

func projectCase() Case {
	return Case{Name: "project k, v * 2 + 1", Baseline: "compute multiply + add",
		Setup: func(mem memory.Allocator, cfg Config) (func(arrow.Record) error, func(arrow.Record) error, func(), error) {
			c := functions.NewCtx(mem)
			e := call("add", call("multiply", colV, lit(2.0)), lit(1.0))
			proj, err := eval.NewProjection([]expr.Expr{colK, e}, []string{"k", "w"}, sources.GeneratorSchema, functions.Builtins())
			if err != nil {
				return nil, nil, nil, err
			}
			engine := func(rec arrow.Record) error {
				out, err := proj.Apply(c, rec)
				if out != nil {
					out.Release()
				}
				return err
			}
			ctx := compute.WithAllocator(context.Background(), mem)
			two, one := compute.NewDatum(scalar.NewFloat64Scalar(2)), compute.NewDatum(scalar.NewFloat64Scalar(1))
			schema := proj.Schema()
			base := func(rec arrow.Record) error {
				v := compute.NewDatum(rec.Column(2))
				defer v.Release()
				m, err := compute.CallFunction(ctx, "multiply_unchecked", nil, v, two)
				if err != nil {
					return err
				}
				defer m.Release()
				a, err := compute.CallFunction(ctx, "add_unchecked", nil, m, one)
				if err != nil {
					return err
				}
				defer a.Release()
				w := a.(*compute.ArrayDatum).MakeArray()
				defer w.Release()
				out := array.NewRecord(schema, []arrow.Array{rec.Column(1), w}, rec.NumRows())
				out.Release()
				return nil
			}
			return engine, base, func() {}, nil
		}}
}

func aggSpec(w *rel.WindowSpec) rel.AggregateSpec {
	reg := expr.Builtins()
	n, _ := reg.NewAggregate("count", false)
	s, _ := reg.NewAggregate("sum", false, colV)
	mx, _ := reg.NewAggregate("max", false, colV)
	return rel.AggregateSpec{Group: []expr.Expr{colK}, GroupNames: []string{"k"}, Window: w,
		Aggs: []*expr.Aggregate{n, s, mx}, AggNames: []string{"n", "s", "mx"}}
}

// goAgg is the plain-Go baseline: count, sum and max of v per key.
type goAgg struct {
	idx       map[int64]int
	n         []int64
	sum, maxv []float64
}

func newGoAgg() *goAgg { return &goAgg{idx: map[int64]int{}} }

func (g *goAgg) add(ks []int64, vs []float64) {
	for i, k := range ks {
		j, ok := g.idx[k]
		if !ok {
			j = len(g.n)
			g.idx[k] = j
			g.n = append(g.n, 0)
			g.sum = append(g.sum, 0)
			g.maxv = append(g.maxv, math.Inf(-1))
		}
		g.n[j]++
		g.sum[j] += vs[i]
		if vs[i] > g.maxv[j] {
			g.maxv[j] = vs[i]
		}
	}
}

func aggregateCase() Case {
	return Case{Name: "hash aggregate by k: count, sum, max", Baseline: "Go map + slices loop",
		Setup: func(mem memory.Allocator, cfg Config) (func(arrow.Record) error, func(arrow.Record) error, func(), error) {
			h, err := rel.NewHashAggregate(mem, aggSpec(nil), sources.GeneratorSchema, functions.Builtins())
			if err != nil {
				return nil, nil, nil, err
			}
			g := newGoAgg()
			engine := func(rec arrow.Record) error { return h.Add(rec) }
			base := func(rec arrow.Record) error {
				g.add(functions.Int64Values(rec.Column(1)), rec.Column(2).(*array.Float64).Float64Values())
				return nil
			}
			done := func() {
				recs, _ := h.Advance(math.MaxInt64)
				for _, r := range recs {
					r.Release()
				}
				h.Release()
			}
			return engine, base, done, nil
		}}
}

func joinCase() Case {
	return Case{Name: "hash join stream k = table id", Baseline: "Go loop: map probe + copy columns",
		Setup: func(mem memory.Allocator, cfg Config) (func(arrow.Record) error, func(arrow.Record) error, func(), error) {
			tschema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "name", Type: arrow.BinaryTypes.String}}, nil)
			ib := array.NewInt64Builder(mem)
			nb := array.NewStringBuilder(mem)
			for i := int64(0); i < cfg.Keys; i++ {
				ib.Append(i)
				nb.Append(fmt.Sprintf("key-%d", i))
			}
			ids, names := ib.NewArray(), nb.NewArray()
			ib.Release()
			nb.Release()
			table := array.NewRecord(tschema, []arrow.Array{ids, names}, cfg.Keys)
			ids.Release()
			names.Release()
			tid := &expr.Column{Index: 0, Name: "id", DataType: expr.Int64}
			j, err := rel.NewHashJoin(mem, rel.JoinSpec{LeftKeys: []expr.Expr{colK}, RightKeys: []expr.Expr{tid}}, sources.GeneratorSchema, tschema, functions.Builtins())
			if err != nil {
				table.Release()
				return nil, nil, nil, err
			}
			if err := j.Build([]arrow.Record{table}, tschema); err != nil {
				table.Release()
				return nil, nil, nil, err
			}
			engine := func(rec arrow.Record) error {
				out, err := j.Probe(rec)
				if out != nil {
					out.Release()
				}
				return err
			}
			idx := map[int64]int32{}
			for i, v := range functions.Int64Values(table.Column(0)) {
				idx[v] = int32(i)
			}
			outSchema := j.Schema()
			tids, tnames := functions.Int64Values(table.Column(0)), table.Column(1).(*array.String)
			base := func(rec arrow.Record) error {
				id, k := functions.Int64Values(rec.Column(0)), functions.Int64Values(rec.Column(1))
				v, ts := rec.Column(2).(*array.Float64).Float64Values(), functions.Int64Values(rec.Column(3))
				oid, ok, ov, ots, otid := make([]int64, 0, len(k)), make([]int64, 0, len(k)), make([]float64, 0, len(k)), make([]int64, 0, len(k)), make([]int64, 0, len(k))
				names := array.NewStringBuilder(mem)
				defer names.Release()
				for i, key := range k {
					if m, found := idx[key]; found {
						oid, ok, ov, ots, otid = append(oid, id[i]), append(ok, key), append(ov, v[i]), append(ots, ts[i]), append(otid, tids[m])
						names.Append(tnames.Value(int(m)))
					}
				}
				nm := names.NewArray()
				defer nm.Release()
				out := goRecord(arrow.NewSchema(outSchema.Fields()[:5], nil), len(oid), oid, ok, ov, ots, otid)
				out.Release()
				return nil
			}
			return engine, base, func() { j.Release(); table.Release() }, nil
		}}
}

// tumbleCase is the whole pipeline: source -> TUMBLE(ts, 1 s) aggregation by k
// -> sink, as a dataflow on one core, against a Go loop keeping one map per
// window.
func tumbleCase() Case {
	return Case{Name: "pipeline: TUMBLE 1s aggregation by k (1 core)", Baseline: "Go loop, map per window",
		Setup: func(mem memory.Allocator, cfg Config) (func(arrow.Record) error, func(arrow.Record) error, func(), error) {
			windows := map[int64]*goAgg{}
			base := func(rec arrow.Record) error {
				ks := functions.Int64Values(rec.Column(1))
				vs := rec.Column(2).(*array.Float64).Float64Values()
				ts := functions.Int64Values(rec.Column(3))
				for i := 0; i < len(ks); {
					w := ts[i] / 1_000_000
					j := i + 1
					for j < len(ks) && ts[j]/1_000_000 == w {
						j++
					}
					g := windows[w]
					if g == nil {
						g = newGoAgg()
						windows[w] = g
					}
					g.add(ks[i:j], vs[i:j])
					i = j
				}
				return nil
			}
			return nil, base, func() {}, nil
		},
		Whole: func(mem memory.Allocator, cfg Config, batches []arrow.Record) error {
			prev := runtime.GOMAXPROCS(1)
			defer runtime.GOMAXPROCS(prev)
			spec := aggSpec(&rel.WindowSpec{Type: expr.Tumble, Time: colTS, Size: time.Second})
			in := make([]dataflow.Batch, len(batches))
			for i, b := range batches {
				b.Retain()
				// Sent at the watermark of the batches before it, as a source does.
				var e dataflow.Epoch
				if i > 0 {
					ts := functions.Int64Values(batches[i-1].Column(3))
					e = rel.EpochOf(ts[len(ts)-1])
				}
				in[i] = dataflow.Batch{Epoch: e, Record: b}
			}
			g := &dataflow.Graph{Query: "bench"}
			src := g.AddOperator(dataflow.OperatorSpec{Name: "src", Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) { return builtin.NewSliceSource(in), nil }})
			agg := g.AddOperator(dataflow.OperatorSpec{Name: "agg", Inputs: 1, Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) {
				return rel.NewAggregate(spec, sources.GeneratorSchema, functions.Builtins(), nil), nil
			}})
			var rows int64
			sink := g.AddOperator(dataflow.OperatorSpec{Name: "sink", Inputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) {
				return builtin.NewSink(func(b dataflow.Batch) error { rows += b.Record.NumRows(); return nil }), nil
			}})
			g.Connect(src, 0, agg, 0)
			g.Connect(agg, 0, sink, 0)
			if err := dataflow.Run(context.Background(), g, dataflow.Config{Allocator: mem}); err != nil {
				return err
			}
			if rows == 0 {
				return fmt.Errorf("pipeline produced no rows")
			}
			return nil
		}}
}

// Measure runs one case: best of cfg.Repeats for the engine and the baseline.
func Measure(c Case, mem memory.Allocator, cfg Config, batches []arrow.Record) (Row, error) {
	var rows int64
	for _, b := range batches {
		rows += b.NumRows()
	}
	// Rates are rows per CPU-second of this process (user + system, GC
	// included): per core, and steady on a shared, loaded machine where wall
	// time is not.
	best := func(run func() error) (float64, error) {
		var bestD time.Duration
		for r := 0; r < max(cfg.Repeats, 1); r++ {
			runtime.GC()
			start := bench.ProcessCPU()
			if err := run(); err != nil {
				return 0, err
			}
			if d := bench.ProcessCPU() - start; bestD == 0 || d < bestD {
				bestD = max(d, time.Microsecond)
			}
		}
		return float64(rows) / bestD.Seconds(), nil
	}
	var engineRate, baseRate float64
	var err error
	engineRate, err = best(func() error {
		if c.Whole != nil {
			return c.Whole(mem, cfg, batches)
		}
		eng, _, done, err := c.Setup(mem, cfg)
		if err != nil {
			return err
		}
		defer done()
		for _, b := range batches {
			if err := eng(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Row{}, fmt.Errorf("%s (engine): %w", c.Name, err)
	}
	baseRate, err = best(func() error {
		_, base, done, err := c.Setup(mem, cfg)
		if err != nil {
			return err
		}
		defer done()
		for _, b := range batches {
			if err := base(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Row{}, fmt.Errorf("%s (baseline): %w", c.Name, err)
	}
	return Row{Benchmark: c.Name, Rows: rows, EngineRowsS: engineRate, Baseline: c.Baseline, BaselineRows: baseRate, Overhead: baseRate / engineRate}, nil
}

// Run measures every case on freshly generated data.
func Run(cfg Config) ([]Row, error) {
	mem := memory.NewGoAllocator()
	batches, err := Batches(mem, cfg)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, b := range batches {
			b.Release()
		}
	}()
	var out []Row
	for _, c := range Cases() {
		r, err := Measure(c, mem, cfg, batches)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
