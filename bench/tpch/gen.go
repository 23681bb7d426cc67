package tpch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/compress"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
)

// GenOptions say what data to generate.
type GenOptions struct {
	SF    float64 // scale factor: 1 is 6 million lineitems
	Seed  uint64
	Types Types
	// RowGroupRows is the Parquet row group length (DuckDB's default,
	// 122,880, when 0).
	RowGroupRows int
	// Workers generate chunks in parallel (every core when 0); the files
	// do not depend on it.
	Workers int
	// Progress, when set, gets a line per table and, for long tables, one
	// every few seconds.
	Progress io.Writer
}

// ErrBadScale is a scale factor that is not a positive number.
var ErrBadScale = errors.New("bad scale factor")

const defaultRowGroup = 122880

// Dir is the folder a scale factor's files are cached in under root.
func Dir(root string, o GenOptions) string {
	return filepath.Join(root, fmt.Sprintf("sf%s-%s-seed%d", formatSF(o.SF), o.Types, o.Seed))
}

func formatSF(sf float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.4f", sf), "0"), ".")
}

// Cardinalities of the base tables at a scale factor (specification 4.2.5).
type scale struct {
	parts, suppliers, customers, orders int64
	clerks                              int64
}

func scaleOf(sf float64) scale {
	n := func(base float64) int64 { return max(1, int64(math.Floor(sf*base))) }
	return scale{parts: n(200000), suppliers: n(10000), customers: n(150000), orders: n(1500000), clerks: n(1000)}
}

// marker is the content of COMPLETE: what was generated, so a folder written
// by an older generator or other options is not reused.
func marker(o GenOptions) string {
	return fmt.Sprintf("tpch generator v1 sf=%s seed=%d types=%s rowgroup=%d\n", formatSF(o.SF), o.Seed, o.Types, o.RowGroupRows)
}

// Generate writes the eight tables as Parquet files (<table>.parquet) in
// dir, unless dir already holds this very data set.
func Generate(ctx context.Context, dir string, o GenOptions) error {
	if !(o.SF > 0) || o.SF > 10000 {
		return fmt.Errorf("%w: %v (want a positive number such as 0.01, 1 or 10)", ErrBadScale, o.SF)
	}
	if o.Types == "" {
		o.Types = SpecTypes
	}
	if o.RowGroupRows <= 0 {
		o.RowGroupRows = defaultRowGroup
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	done := filepath.Join(dir, "COMPLETE")
	if b, err := os.ReadFile(done); err == nil && string(b) == marker(o) {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	os.Remove(done)
	g := &generator{o: o, sc: scaleOf(o.SF), start: time.Now()}
	g.text = textPool(o.Seed)
	if err := g.run(ctx, dir); err != nil {
		return err
	}
	return os.WriteFile(done, []byte(marker(o)), 0o644)
}

type generator struct {
	o     GenOptions
	sc    scale
	text  string
	start time.Time
}

// chunk is a run of rows of one table: per column either int64s (integers,
// money in cents, dates in days since 1970) or strings.
type chunk struct {
	ints [][]int64
	strs [][]string
	n    int
}

func newChunk(t Table, rows int) *chunk {
	c := &chunk{ints: make([][]int64, len(t.cols)), strs: make([][]string, len(t.cols))}
	for i, col := range t.cols {
		if col.kind == kString {
			c.strs[i] = make([]string, 0, rows)
		} else {
			c.ints[i] = make([]int64, 0, rows)
		}
	}
	return c
}

// fill is one table's row function: it appends row (0-based) to c.
type fill func(g *generator, row int64, c *chunk)

// job is a table and how it is generated: rows rows in chunks of step, each
// chunk made by rows of fill. orders' fill also makes lineitem's chunk.
type job struct {
	table Table
	rows  int64
	step  int64
	fill  fill
}

func (g *generator) run(ctx context.Context, dir string) error {
	sc := g.sc
	jobs := []job{
		{table: mustTable("region"), rows: int64(len(regions)), step: 8, fill: fillRegion},
		{table: mustTable("nation"), rows: int64(len(nations)), step: 32, fill: fillNation},
		{table: mustTable("supplier"), rows: sc.suppliers, step: 16384, fill: fillSupplier},
		{table: mustTable("customer"), rows: sc.customers, step: 16384, fill: fillCustomer},
		{table: mustTable("part"), rows: sc.parts, step: 16384, fill: fillPart},
		{table: mustTable("partsupp"), rows: 4 * sc.parts, step: 32768, fill: fillPartsupp},
		{table: mustTable("orders"), rows: sc.orders, step: 8192, fill: nil},
	}
	for _, j := range jobs {
		if err := g.write(ctx, dir, j); err != nil {
			return fmt.Errorf("generate %s: %w", j.table.Name, err)
		}
	}
	return nil
}

func mustTable(name string) Table {
	t, ok := TableNamed(name)
	if !ok {
		panic("tpch: no table " + name)
	}
	return t
}

// output is one Parquet file being written.
type output struct {
	t    Table
	path string
	f    *os.File
	w    *pqarrow.FileWriter
	rows int64
}

func (g *generator) open(dir string, t Table) (*output, error) {
	path := filepath.Join(dir, t.Name+".parquet")
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return nil, err
	}
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithMaxRowGroupLength(int64(g.o.RowGroupRows)),
		parquet.WithStats(true),
		parquet.WithStoreDecimalAsInteger(true))
	w, err := pqarrow.NewFileWriter(t.Schema(g.o.Types), f, props, pqarrow.NewArrowWriterProperties())
	if err != nil {
		f.Close()
		return nil, err
	}
	return &output{t: t, path: path, f: f, w: w}, nil
}

func (o *output) write(g *generator, c *chunk) error {
	rec := g.record(o.t, c)
	defer rec.Release()
	o.rows += int64(c.n)
	return o.w.WriteBuffered(rec)
}

func (o *output) close() error {
	// The Parquet writer closes the file.
	if err := o.w.Close(); err != nil {
		return err
	}
	return os.Rename(o.path+".tmp", o.path)
}

// write generates one job's chunks on every worker and writes them in order.
func (g *generator) write(ctx context.Context, dir string, j job) error {
	start := time.Now()
	out, err := g.open(dir, j.table)
	if err != nil {
		return err
	}
	var lines *output
	if j.table.Name == "orders" {
		if lines, err = g.open(dir, mustTable("lineitem")); err != nil {
			return err
		}
	}
	chunks := int((j.rows + j.step - 1) / j.step)
	type result struct{ main, lines *chunk }
	slots := make([]chan result, chunks)
	for i := range slots {
		slots[i] = make(chan result, 1)
	}
	// window bounds how far generation runs ahead of the writer.
	window := make(chan struct{}, 2*g.o.Workers)
	var next int
	var mu sync.Mutex
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for w := 0; w < g.o.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case window <- struct{}{}:
				case <-ctx.Done():
					return
				}
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= chunks {
					return
				}
				lo := int64(i) * j.step
				hi := min(lo+j.step, j.rows)
				var r result
				if j.fill == nil {
					r.main, r.lines = g.ordersChunk(lo, hi)
				} else {
					r.main = newChunk(j.table, int(hi-lo))
					for row := lo; row < hi; row++ {
						j.fill(g, row, r.main)
					}
				}
				slots[i] <- r
			}
		}()
	}
	defer wg.Wait()
	last := time.Now()
	for i := 0; i < chunks; i++ {
		var r result
		select {
		case r = <-slots[i]:
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := out.write(g, r.main); err != nil {
			return err
		}
		if lines != nil {
			if err := lines.write(g, r.lines); err != nil {
				return err
			}
		}
		<-window
		if g.o.Progress != nil && time.Since(last) > 2*time.Second {
			last = time.Now()
			fmt.Fprintf(g.o.Progress, "-- tpch sf %s: %s %d of %d rows (%.0f%%)\n", formatSF(g.o.SF), j.table.Name,
				out.rows, j.rows, 100*float64(out.rows)/float64(j.rows))
		}
	}
	if err := out.close(); err != nil {
		return err
	}
	g.report(out, start)
	if lines != nil {
		if err := lines.close(); err != nil {
			return err
		}
		g.report(lines, start)
	}
	return nil
}

func (g *generator) report(o *output, start time.Time) {
	if g.o.Progress != nil {
		fmt.Fprintf(g.o.Progress, "-- tpch sf %s: %s, %d rows (%.1fs)\n", formatSF(g.o.SF), o.t.Name, o.rows, time.Since(start).Seconds())
	}
}

// record turns a chunk into Arrow arrays of the table's types.
func (g *generator) record(t Table, c *chunk) arrow.Record {
	schema := t.Schema(g.o.Types)
	cols := make([]arrow.Array, len(t.cols))
	mem := memory.DefaultAllocator
	for i, col := range t.cols {
		switch dt := schema.Field(i).Type.(type) {
		case *arrow.StringType:
			b := array.NewStringBuilder(mem)
			size := 0
			for _, s := range c.strs[i] {
				size += len(s)
			}
			b.ReserveData(size)
			b.AppendValues(c.strs[i], nil)
			cols[i] = b.NewArray()
			b.Release()
		case *arrow.Int32Type:
			b := array.NewInt32Builder(mem)
			b.Reserve(c.n)
			for _, v := range c.ints[i] {
				b.UnsafeAppend(int32(v))
			}
			cols[i] = b.NewArray()
			b.Release()
		case *arrow.Int64Type:
			b := array.NewInt64Builder(mem)
			b.AppendValues(c.ints[i], nil)
			cols[i] = b.NewArray()
			b.Release()
		case *arrow.Decimal128Type:
			b := array.NewDecimal128Builder(mem, dt)
			b.Reserve(c.n)
			for _, v := range c.ints[i] {
				b.UnsafeAppend(decimal128.FromI64(v))
			}
			cols[i] = b.NewArray()
			b.Release()
		case *arrow.Float64Type:
			b := array.NewFloat64Builder(mem)
			b.Reserve(c.n)
			for _, v := range c.ints[i] {
				b.UnsafeAppend(float64(v) / 100)
			}
			cols[i] = b.NewArray()
			b.Release()
		case *arrow.Date32Type:
			b := array.NewDate32Builder(mem)
			b.Reserve(c.n)
			for _, v := range c.ints[i] {
				b.UnsafeAppend(arrow.Date32(v))
			}
			cols[i] = b.NewArray()
			b.Release()
		case *arrow.TimestampType:
			b := array.NewTimestampBuilder(mem, dt)
			b.Reserve(c.n)
			for _, v := range c.ints[i] {
				b.UnsafeAppend(arrow.Timestamp(v * 86400 * 1_000_000))
			}
			cols[i] = b.NewArray()
			b.Release()
		default:
			panic(fmt.Sprintf("tpch: column %s: no builder for %s", col.name, dt))
		}
	}
	rec := array.NewRecord(schema, cols, int64(c.n))
	for _, a := range cols {
		a.Release()
	}
	return rec
}
