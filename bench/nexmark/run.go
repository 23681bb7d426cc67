package nexmark

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/operators/sinks"
)

// Options run a query.
type Options struct {
	// Allocator for the run (default memory.DefaultAllocator).
	Allocator memory.Allocator
	// Keep collects the result's rows (a benchmark discards them, as
	// Flink's blackhole sink).
	Keep bool
	// BatchSize and MaxDelay are `tierflow run`'s (defaults 4096 and 1 s).
	BatchSize int
	MaxDelay  time.Duration
	// Parallelism is `tierflow run --local --parallelism` (0: every core
	// where it pays).
	Parallelism int
}

// Result is a run's output and time.
type Result struct {
	Rows    [][]any // with Keep
	Written int64
	Elapsed time.Duration
}

// Run runs q over the generated files in dir on the local executor, the
// code path of `tierflow run --local`.
func Run(ctx context.Context, dir string, q Query, o Options) (Result, error) {
	if o.MaxDelay == 0 {
		o.MaxDelay = time.Second
	}
	if o.Parallelism == 0 {
		o.Parallelism = exec.AllCores
	}
	out := &rows{keep: o.Keep}
	start := time.Now()
	err := exec.RunScript(ctx, filepath.Join(dir, q.Name+".sql"), DDL(dir)+q.Text, exec.ScriptOptions{
		Options: exec.Options{Allocator: o.Allocator, BaseDir: dir, BatchSize: o.BatchSize, MaxDelay: o.MaxDelay, Parallelism: o.Parallelism},
		NewOutput: func() (sinks.Writer, error) {
			return out, nil
		},
	})
	res := Result{Rows: out.rows, Written: out.n.Load(), Elapsed: time.Since(start)}
	if err != nil {
		return res, fmt.Errorf("%s: %w", q.Name, err)
	}
	return res, nil
}

// rows is a query's output: counted, and kept when asked.
type rows struct {
	keep bool
	mu   sync.Mutex
	rows [][]any
	n    atomic.Int64
}

func (r *rows) Write(rec arrow.Record) error {
	r.n.Add(rec.NumRows())
	if !r.keep {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := 0; i < int(rec.NumRows()); i++ {
		row := make([]any, rec.NumCols())
		for j := range row {
			row[j] = functions.ValueAt(rec.Column(j), i)
			if d, ok := rec.Column(j).DataType().(*arrow.Decimal128Type); ok && row[j] != nil {
				// A decimal kept as its number (ValueAt gives the unscaled integer).
				row[j] = row[j].(decimal128.Num).ToFloat64(d.Scale)
			}
		}
		r.rows = append(r.rows, row)
	}
	return nil
}

func (r *rows) Close() error { return nil }
