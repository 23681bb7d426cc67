package tpch

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/sinks"
)

// Engine runs the TPC-H queries over a data set's files.
type Engine interface {
	// Name is the engine's column heading: tierflow, duckdb.
	Name() string
	// Load points the engine at the Parquet files in dir.
	Load(ctx context.Context, dir string, ty Types) error
	// Run runs every statement of q and returns the last result.
	Run(ctx context.Context, q Query) (Result, error)
	Close() error
}

// Tierflow runs the queries with tierflow's local executor in this process,
// the code path of `tierflow run --local`: the tables are declared with the
// specification's types over the Parquet files, then the query's text runs
// as a script.
type Tierflow struct {
	// Parallelism is tierflow's --parallelism (0: every core where it
	// pays, as `tierflow run --local`).
	Parallelism int
	// MemoryLimit, when above 0, is each query's memory in bytes: its
	// budget (dataflow.Memory: every Arrow buffer and operator state is
	// charged, and an allocation past it fails the query naming the
	// operator) and, at half of it, the state a GROUP BY or a join's
	// table holds before spilling to disk (exec.Options.MemoryLimit; half,
	// so that a spilling join or aggregation leaves the other half to the
	// batches in flight and the query's other operators).
	MemoryLimit int64
	dir         string
	ddl         string
	peak        int64
}

// Peak is the most the last query's budget held at once (0 without a
// MemoryLimit).
func (t *Tierflow) Peak() int64 { return t.peak }

// Limit is MemoryLimit: each query's budget in bytes, 0 for none.
func (t *Tierflow) Limit() int64 { return t.MemoryLimit }

// Name implements Engine.
func (*Tierflow) Name() string { return "tierflow" }

// Close implements Engine.
func (*Tierflow) Close() error { return nil }

// Load implements Engine.
func (t *Tierflow) Load(_ context.Context, dir string, ty Types) error {
	t.dir = dir
	t.ddl = DDL(dir, ty)
	return nil
}

// DDL declares the eight tables over their files in dir.
func DDL(dir string, ty Types) string {
	var b strings.Builder
	for _, tb := range Tables {
		types := tb.SQLTypes(ty)
		cols := make([]string, len(tb.cols))
		for i, c := range tb.cols {
			cols[i] = c.name + " " + types[i]
		}
		fmt.Fprintf(&b, "CREATE TABLE %s (%s) FROM FILE '%s' FORMAT PARQUET;\n", tb.Name, strings.Join(cols, ", "),
			filepath.Join(dir, tb.Name+".parquet"))
	}
	return b.String()
}

// Run implements Engine.
func (t *Tierflow) Run(ctx context.Context, q Query) (Result, error) {
	if t.dir == "" {
		return nil, fmt.Errorf("tierflow: no data loaded")
	}
	par := t.Parallelism
	if par == 0 {
		par = exec.AllCores
	}
	c := &collector{}
	opts := exec.Options{BaseDir: t.dir, Parallelism: par}
	t.peak = 0
	if t.MemoryLimit > 0 {
		m := dataflow.NewMemory("query "+q.Name, t.MemoryLimit, nil)
		opts.Memory, opts.Allocator, opts.MemoryLimit = m, m.Allocator(memory.DefaultAllocator), t.MemoryLimit/2
		defer func() { t.peak = m.Peak() }()
	}
	err := exec.RunScript(ctx, q.Name+".sql", t.ddl+q.Text, exec.ScriptOptions{
		Options: opts,
		NewOutput: func() (sinks.Writer, error) {
			c.reset()
			return c, nil
		},
	})
	if err != nil {
		return nil, err
	}
	return c.rows, c.err
}

// collector is a query's sink: it normalises rows as they come. A script's
// later SELECT replaces an earlier one's rows (reset).
type collector struct {
	mu   sync.Mutex
	rows Result
	err  error
}

func (c *collector) reset() {
	c.mu.Lock()
	c.rows, c.err = nil, nil
	c.mu.Unlock()
}

func (c *collector) Close() error { return nil }

func (c *collector) Write(rec arrow.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var err error
	c.rows, err = c.rows.AppendRecord(rec)
	if err != nil && c.err == nil {
		c.err = err
	}
	return err
}
