package exec

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"

	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/planner/rewrite"
)

// writeModes writes rows of (mode VARCHAR, flag VARCHAR, q DOUBLE, v BIGINT)
// in row groups of group rows, each string stored as a dictionary per row
// group (whose values come in another order in each group); with nulls a
// tenth of the modes are NULL.
func writeModes(t testing.TB, rows, group int, nulls bool) string {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "mode", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "flag", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "q", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	modes := []string{"AIR", "FOB", "MAIL", "RAIL", "REG AIR", "SHIP", "TRUCK", "a mode longer than a word"}
	r := rand.New(rand.NewPCG(5, 6))
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for range rows {
		if nulls && r.IntN(10) == 0 {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.StringBuilder).Append(modes[r.IntN(len(modes))])
		}
		b.Field(1).(*array.StringBuilder).Append([]string{"A", "N", "R"}[r.IntN(3)])
		b.Field(2).(*array.Float64Builder).Append(float64(r.IntN(5000)) / 100)
		b.Field(3).(*array.Int64Builder).Append(int64(r.IntN(4)))
	}
	rec := b.NewRecord()
	defer rec.Release()
	return writeParquet(t, "modes.parquet", rec, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(int64(group))))
}

// writeDim writes rows of (id BIGINT, prio VARCHAR) in row groups of
// group: ids 0 to ids-1 over and over, the priorities in another order per
// group.
func writeDim(t testing.TB, rows, group, ids int) string {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "prio", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	prios := []string{"1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range rows {
		b.Field(0).(*array.Int64Builder).Append(int64(i % ids))
		b.Field(1).(*array.StringBuilder).Append(prios[(i*7+i/group)%5])
	}
	rec := b.NewRecord()
	defer rec.Release()
	return writeParquet(t, "dim.parquet", rec, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(int64(group))))
}

// A GROUP BY on a string column of a Parquet table that the query only
// groups by runs on the column's dictionary codes (the scan says
// "codes: ..."), over row groups with different dictionaries, and answers
// what the strings answer (Relayed: the scan builds strings): in two phases
// on every core, in one instance, with one core, under a memory limit that
// spills; with a filter on other columns, with two string keys, a string
// and an integer key; over a join of two tables, keys of either side (the
// join's table concatenated with its dictionaries unified; no codes where
// the join may spill). A column the filter, the join's condition or an
// aggregate reads stays a string. Nothing leaks.
func TestGroupByOnParquetCodesMatchesStrings(t *testing.T) {
	path := writeModes(t, 20000, 1500, true)
	create := fmt.Sprintf("CREATE TABLE t (mode VARCHAR, flag VARCHAR, q DOUBLE, v BIGINT) FROM FILE '%s' FORMAT PARQUET;\n", path)
	create += fmt.Sprintf("CREATE TABLE u (id BIGINT, prio VARCHAR) FROM FILE '%s' FORMAT PARQUET;\n", writeDim(t, 12, 4, 3))
	for _, tc := range []struct {
		q     string
		codes string // the scans' codes ("t: ...; u: ..."), "" none
		join  bool
	}{
		{"SELECT mode, count(*) AS n, sum(q) AS s, max(v) AS m, avg(q) AS a FROM t GROUP BY mode", "t: mode", false},
		{"SELECT mode, flag, count(*) AS n, avg(q) AS a FROM t WHERE q > 10 GROUP BY mode, flag", "t: mode, flag", false},
		{"SELECT flag, v, mode, count(*) AS n FROM t WHERE q < 45 GROUP BY flag, v, mode", "t: flag, mode", false},
		{"SELECT flag, count(*) AS n, sum(q) AS s FROM t WHERE mode = 'MAIL' GROUP BY flag", "t: flag", false},
		{"SELECT mode, count(*) AS n, min(mode) AS m FROM t GROUP BY mode", "", false},
		{"SELECT prio, count(*) AS n, sum(q) AS s FROM t JOIN u ON v = id GROUP BY prio", "u: prio", true},
		{"SELECT mode, prio, count(*) AS n, avg(q) AS a FROM t LEFT JOIN u ON v = id GROUP BY mode, prio", "t: mode; u: prio", true},
		{"SELECT prio, count(*) AS n FROM t JOIN u ON v = id AND prio <> mode WHERE flag = 'A' GROUP BY prio", "", true},
	} {
		type run struct {
			name  string
			procs int
			opts  Options
		}
		var want [][]any
		for _, r := range []run{
			{"strings", 4, Options{Relayed: true, Parallelism: AllCores}},
			{"two phases", 4, Options{Parallelism: AllCores}},
			{"one instance", 4, Options{Parallelism: 1}},
			{"one core", 1, Options{Parallelism: AllCores}},
			{"spilling", 4, Options{MemoryLimit: 1}},
		} {
			func() {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(r.procs))
				rows, scans, err := runScans(t, create+tc.q+";", r.opts)
				if err != nil {
					t.Fatalf("%s (%s): %v", tc.q, r.name, err)
				}
				wantCodes := tc.codes
				if r.opts.Relayed || tc.join && r.opts.MemoryLimit > 0 {
					wantCodes = ""
				}
				if got := scanCodes(scans); got != wantCodes {
					t.Fatalf("%s (%s): codes %q, want %q (scans %q)", tc.q, r.name, got, wantCodes, scans)
				}
				if want == nil {
					if len(rows) < 3 {
						t.Fatalf("%s: %d rows", tc.q, len(rows))
					}
					want = rows
					return
				}
				if err := rowsMatch(rows, want); err != nil {
					t.Fatalf("%s (%s): %v", tc.q, r.name, err)
				}
			}()
		}
	}
}

// runScans runs script under o over a checked allocator (checked once the
// run is over) and returns its rows, sorted, and the names of the scans
// its plan builds ("scan t (codes: mode, flag)").
func runScans(t *testing.T, script string, o Options) ([][]any, []string, error) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	o.Allocator = mem
	out := &collect{}
	var scans []string
	err := RunScript(context.Background(), "q.sql", script, ScriptOptions{
		Options:   o,
		NewOutput: func() (sinks.Writer, error) { return out, nil },
		Plan: func(_ context.Context, bound *logical.Plan, _ *catalog.Catalog, _ planner.Options, o *Options) error {
			built, err := Build(rewrite.Apply(bound), *o)
			if err != nil {
				return err
			}
			for _, op := range built.Graph().Operators {
				if strings.HasPrefix(op.Name, "scan ") {
					scans = append(scans, op.Name)
				}
			}
			built.closeFiles()
			return nil
		},
	})
	sortRows(out.rows)
	return out.rows, scans, err
}

// scanCodes is what the scans say they group on: "t: mode, flag; u: prio"
// (by table), "" when none runs on codes.
func scanCodes(scans []string) string {
	var codes []string
	for _, s := range scans {
		if name, c, ok := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(s, "scan "), ")"), " (codes: "); ok {
			codes = append(codes, name+": "+c)
		}
	}
	sort.Strings(codes)
	return strings.Join(codes, "; ")
}

// BenchmarkGroupByOnParquetCodes runs the benchmark's groupby-few shape
// (GROUP BY a mode of 8 values, avg and max of numbers), TPC-H Q1's two
// string keys under a filter, and a GROUP BY of the joined table's string
// over 1M Parquet rows in row groups of 122,880,
// grouping on the strings (Relayed: the old path, the scan unpacks each
// row's string) and on the dictionary codes. (No NULL modes: arrow/go
// decodes a dictionary column with NULLs through reflection, which would
// swamp both.)
func BenchmarkGroupByOnParquetCodes(b *testing.B) {
	path := writeModes(b, 1<<20, 122880, false)
	create := fmt.Sprintf("CREATE TABLE t (mode VARCHAR, flag VARCHAR, q DOUBLE, v BIGINT) FROM FILE '%s' FORMAT PARQUET;\n", path)
	create += fmt.Sprintf("CREATE TABLE u (id BIGINT, prio VARCHAR) FROM FILE '%s' FORMAT PARQUET;\n", writeDim(b, 4, 1, 4))
	for _, q := range []struct{ name, sql string }{
		{"groupby-few", "SELECT mode, avg(q) AS a, max(v) AS m FROM t GROUP BY mode"},
		{"two-keys-filtered", "SELECT mode, flag, count(*) AS n, sum(q) AS s FROM t WHERE q < 48 GROUP BY mode, flag"},
		{"join", "SELECT prio, count(*) AS n, sum(q) AS s FROM t JOIN u ON v = id GROUP BY prio"},
	} {
		for _, path := range []string{"strings", "codes"} {
			b.Run(q.name+"/"+path, func(b *testing.B) {
				for range b.N {
					out := &collect{}
					err := RunScript(context.Background(), "q.sql", create+q.sql+";", ScriptOptions{
						Options:   Options{Parallelism: AllCores, Relayed: path == "strings"},
						NewOutput: func() (sinks.Writer, error) { return out, nil },
					})
					if err != nil || len(out.rows) < 3 {
						b.Fatal(err, len(out.rows))
					}
				}
			})
		}
	}
}
