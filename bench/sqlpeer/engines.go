package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"math"
	"math/big"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/sinks"
)

// A result is a query's rows with every value normalised so the two engines'
// answers compare: numbers as float64, timestamps as time.Time in UTC,
// strings as strings, NULL as nil.
type result [][]any

// engine runs a query over the data set in dir and returns its rows.
type engine interface {
	run(ctx context.Context, q query, dir string) (result, error)
	close() error
}

// tierflowEngine runs queries with tierflow's local executor in this
// process: the same code path as `tierflow run --local`, without the process
// start-up, so its time is comparable to an in-process DuckDB query.
type tierflowEngine struct {
	parallelism int
	profile     io.Writer // the first run's CPU profile, when set
}

func (tierflowEngine) close() error { return nil }

// script declares the data set's files for a query: tables, and events as a
// stream (its first TIMESTAMP column is the event time TUMBLE windows on).
func tierflowScript(q query, dir string) string {
	var b strings.Builder
	for _, t := range tables {
		kind := "TABLE"
		if t.name == "events" {
			kind = "STREAM"
		}
		cols := make([]string, len(t.cols))
		for i, c := range t.cols {
			cols[i] = c.name + " " + c.sqlType
		}
		fmt.Fprintf(&b, "CREATE %s %s (%s) FROM FILE '%s' FORMAT %s;\n", kind, t.name, strings.Join(cols, ", "),
			filepath.Join(dir, t.name+"."+q.format), strings.ToUpper(q.format))
	}
	b.WriteString(q.tierflow)
	b.WriteString(";\n")
	return b.String()
}

func (e tierflowEngine) run(ctx context.Context, q query, dir string) (result, error) {
	c := &collector{}
	err := exec.RunScript(ctx, "bench.sql", tierflowScript(q, dir), exec.ScriptOptions{
		Options:   exec.Options{BaseDir: dir, Parallelism: parallelism(e.parallelism)},
		NewOutput: func() (sinks.Writer, error) { return c, nil },
	})
	return c.rows, err
}

// parallelism is --parallelism as `tierflow run --local` reads it: 0, the
// default, uses every core where it pays.
func parallelism(p int) int {
	if p == 0 {
		return exec.AllCores
	}
	return p
}

// collector is the sink of a tierflow query: it normalises rows as they come.
type collector struct {
	mu   sync.Mutex
	rows result
}

func (c *collector) Close() error { return nil }

func (c *collector) Write(rec arrow.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for r := 0; r < int(rec.NumRows()); r++ {
		row := make([]any, rec.NumCols())
		for j, col := range rec.Columns() {
			v, err := arrowValue(col, r)
			if err != nil {
				return fmt.Errorf("column %s: %w", rec.ColumnName(j), err)
			}
			row[j] = v
		}
		c.rows = append(c.rows, row)
	}
	return nil
}

func arrowValue(a arrow.Array, r int) (any, error) {
	if a.IsNull(r) {
		return nil, nil
	}
	switch a := a.(type) {
	case *array.Null:
		return nil, nil
	case *array.Int8:
		return float64(a.Value(r)), nil
	case *array.Int16:
		return float64(a.Value(r)), nil
	case *array.Int32:
		return float64(a.Value(r)), nil
	case *array.Int64:
		return float64(a.Value(r)), nil
	case *array.Uint32:
		return float64(a.Value(r)), nil
	case *array.Uint64:
		return float64(a.Value(r)), nil
	case *array.Float32:
		return float64(a.Value(r)), nil
	case *array.Float64:
		return a.Value(r), nil
	case *array.String:
		return a.Value(r), nil
	case *array.LargeString:
		return a.Value(r), nil
	case *array.Boolean:
		return a.Value(r), nil
	case *array.Decimal128:
		// DuckDB's DECIMALs come back as float64 too (duckValue).
		return a.Value(r).ToFloat64(a.DataType().(*arrow.Decimal128Type).Scale), nil
	case *array.Date32:
		return a.Value(r).ToTime().UTC(), nil
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		return a.Value(r).ToTime(unit).UTC(), nil
	}
	return nil, fmt.Errorf("type %s not compared by the bench", a.DataType())
}

// duckEngine runs queries with DuckDB in this process on all cores, over
// views of the same files tierflow reads.
type duckEngine struct{ db *sql.DB }

func newDuckEngine() (*duckEngine, error) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return nil, err
	}
	// One connection: the views below are per-connection state.
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("SET TimeZone = 'UTC'"); err != nil {
		db.Close()
		return nil, err
	}
	return &duckEngine{db: db}, nil
}

func (d *duckEngine) close() error { return d.db.Close() }

// views makes each table name a view over the query's files. Timestamps are
// stored in UTC (TIMESTAMP WITH TIME ZONE to DuckDB); the views present them
// as the plain TIMESTAMPs tierflow declares.
func (d *duckEngine) views(ctx context.Context, q query, dir string) error {
	for _, t := range tables {
		path := filepath.Join(dir, t.name+"."+q.format)
		var from string
		if q.format == "csv" {
			types := make([]string, len(t.cols))
			for i, c := range t.cols {
				types[i] = fmt.Sprintf("'%s': '%s'", c.name, c.duckType)
			}
			from = fmt.Sprintf("read_csv('%s', header = true, columns = {%s})", path, strings.Join(types, ", "))
		} else {
			from = fmt.Sprintf("read_parquet('%s')", path)
		}
		sel := make([]string, len(t.cols))
		for i, c := range t.cols {
			sel[i] = c.name
			if c.sqlType == "TIMESTAMP" {
				sel[i] = fmt.Sprintf("CAST(%s AS TIMESTAMP) AS %s", c.name, c.name)
			}
		}
		stmt := fmt.Sprintf("CREATE OR REPLACE VIEW %s AS SELECT %s FROM %s", t.name, strings.Join(sel, ", "), from)
		if _, err := d.db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return nil
}

func (d *duckEngine) run(ctx context.Context, q query, dir string) (result, error) {
	rows, err := d.db.QueryContext(ctx, q.duckdb)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out result
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		for i, v := range vals {
			vals[i] = duckValue(v)
		}
		out = append(out, vals)
	}
	return out, rows.Err()
}

func duckValue(v any) any {
	switch v := v.(type) {
	case int8:
		return float64(v)
	case int16:
		return float64(v)
	case int32:
		return float64(v)
	case int64:
		return float64(v)
	case uint32:
		return float64(v)
	case uint64:
		return float64(v)
	case float32:
		return float64(v)
	case *big.Int:
		f, _ := new(big.Float).SetInt(v).Float64()
		return f
	case duckdb.Decimal:
		return v.Float64()
	case time.Time:
		return v.UTC()
	}
	return v
}

// compare says how two results differ, or "" when they agree: the same rows
// (in order when the query orders them), numbers equal to a relative 1e-9,
// which float sums in a different order stay well within.
func compare(q query, got, want result) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d rows, DuckDB %d", len(got), len(want))
	}
	if !q.ordered {
		got, want = sortedRows(got), sortedRows(want)
	}
	for i := range got {
		if len(got[i]) != len(want[i]) {
			return fmt.Sprintf("row %d: %d columns, DuckDB %d", i, len(got[i]), len(want[i]))
		}
		for j := range got[i] {
			if !sameValue(got[i][j], want[i][j]) {
				return fmt.Sprintf("row %d column %d: %v, DuckDB %v", i, j, got[i][j], want[i][j])
			}
		}
	}
	return ""
}

func sameValue(a, b any) bool {
	fa, oka := a.(float64)
	fb, okb := b.(float64)
	if oka && okb {
		if math.IsNaN(fa) || math.IsNaN(fb) { // 0/0 is NaN on both engines
			return math.IsNaN(fa) && math.IsNaN(fb)
		}
		return fa == fb || math.Abs(fa-fb) <= 1e-9*math.Max(math.Abs(fa), math.Abs(fb))
	}
	ta, oka := a.(time.Time)
	tb, okb := b.(time.Time)
	if oka && okb {
		return ta.Equal(tb)
	}
	return a == b
}

// sortedRows orders rows by their values with floats rounded, so two results
// whose sums differ in the last bits still line up.
func sortedRows(rs result) result {
	type keyed struct {
		key string
		row []any
	}
	ks := make([]keyed, len(rs))
	for i, r := range rs {
		var b strings.Builder
		for _, v := range r {
			switch v := v.(type) {
			case float64:
				if v == math.Trunc(v) && math.Abs(v) < 1e15 {
					fmt.Fprintf(&b, "%020.0f\x00", v+1e15) // integral: exact, in numeric order
				} else {
					fmt.Fprintf(&b, "%.6g\x00", v)
				}
			case time.Time:
				fmt.Fprintf(&b, "%020d\x00", v.UnixMicro())
			default:
				fmt.Fprintf(&b, "%v\x00", v)
			}
		}
		ks[i] = keyed{b.String(), r}
	}
	sort.SliceStable(ks, func(i, j int) bool { return ks[i].key < ks[j].key })
	out := make(result, len(ks))
	for i, k := range ks {
		out[i] = k.row
	}
	return out
}
