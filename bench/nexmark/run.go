package nexmark

import (
	"context"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"strconv"
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
	// Check sums the rows' hashes into Result.Sum.
	Check bool
	// BatchSize and MaxDelay are `tierflow run`'s (defaults 4096 and 1 s).
	BatchSize int
	MaxDelay  time.Duration
	// Parallelism is `tierflow run --local --parallelism` (0: every core
	// where it pays).
	Parallelism int
	// Partitioned reads the streams over the parts Partition wrote into
	// the folder Run is given (PartitionedDDL), a partition per file.
	Partitioned bool
	// Clock is the processing clock PROCTIME() reads (default time.Now).
	Clock func() time.Time
}

// Result is a run's output and time.
type Result struct {
	Rows    [][]any // with Keep
	Written int64
	// Sum is the sum of the rows' hashes: equal for the same rows in any
	// order, so runs compare without keeping their rows.
	Sum     uint64
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
	out := &rows{keep: o.Keep, check: o.Check}
	start := time.Now()
	ddl := DDL(dir)
	if o.Partitioned {
		ddl = PartitionedDDL(dir)
	}
	err := exec.RunScript(ctx, filepath.Join(dir, q.Name+".sql"), ddl+q.Text, exec.ScriptOptions{
		Options: exec.Options{Allocator: o.Allocator, BaseDir: dir, BatchSize: o.BatchSize, MaxDelay: o.MaxDelay, Parallelism: o.Parallelism, Clock: o.Clock},
		NewOutput: func() (sinks.Writer, error) {
			return out, nil
		},
	})
	res := Result{Rows: out.rows, Written: out.n.Load(), Sum: out.sum.Load(), Elapsed: time.Since(start)}
	if err != nil {
		return res, fmt.Errorf("%s: %w", q.Name, err)
	}
	return res, nil
}

// rows is a query's output: counted, and kept when asked.
type rows struct {
	keep  bool
	check bool // sum the rows' hashes
	mu    sync.Mutex
	rows  [][]any
	n     atomic.Int64
	sum   atomic.Uint64
}

func (r *rows) Write(rec arrow.Record) error {
	r.n.Add(rec.NumRows())
	if !r.keep && !r.check {
		return nil
	}
	var sum uint64
	var buf []byte
	h := fnv.New64a()
	row := make([]any, rec.NumCols())
	for i := 0; i < int(rec.NumRows()); i++ {
		h.Reset()
		for j := range row {
			row[j] = functions.ValueAt(rec.Column(j), i)
			if d, ok := rec.Column(j).DataType().(*arrow.Decimal128Type); ok && row[j] != nil {
				// A decimal kept as its number (ValueAt gives the unscaled integer).
				row[j] = row[j].(decimal128.Num).ToFloat64(d.Scale)
			}
			buf = appendValue(buf[:0], row[j])
			h.Write(append(buf, 0))
		}
		sum += h.Sum64()
		if r.keep {
			r.mu.Lock()
			r.rows = append(r.rows, append([]any(nil), row...))
			r.mu.Unlock()
		}
	}
	r.sum.Add(sum)
	return nil
}

func (r *rows) Close() error { return nil }

// appendValue appends v's text, the common types without fmt's
// reflection (a checked run hashes every row).
func appendValue(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "NULL"...)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case float64:
		return strconv.AppendFloat(b, x, 'g', -1, 64)
	case string:
		return append(b, x...)
	case bool:
		return strconv.AppendBool(b, x)
	case time.Time:
		return strconv.AppendInt(b, x.UnixMicro(), 10)
	}
	return fmt.Append(b, v)
}
