package exec

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/logical"
)

// A GROUP BY of few groups runs in two phases on every core by default
// (partial aggregations fed whole batches, one final) and answers what one
// instance answers: counts, sums, min/max of numbers and strings, avg of
// integers and doubles, with NULLs, with and without keys, over no rows;
// a filter below it runs on every core too, fused into the partial
// aggregations (kept rows folded in place, or gathered when an argument
// fails on a dropped row).
func TestTwoPhaseAggregationMatchesOnePhase(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	b.WriteString("k,g,i,f,s\n")
	opt := func(v string) string {
		if r.IntN(9) == 0 {
			return ""
		}
		return v
	}
	for range 5000 {
		fmt.Fprintf(&b, "%s,%s,%s,%s,%s\n", opt(fmt.Sprint("k", r.IntN(5))), opt(fmt.Sprint(r.IntN(2) == 0)),
			opt(fmt.Sprint(r.Int64N(1e6)-5e5)), opt(fmt.Sprintf("%.3f", r.Float64()*100)), opt(fmt.Sprint("s", r.IntN(1000))))
	}
	if err := os.WriteFile(filepath.Join(dir, "t.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	const create = "CREATE TABLE t (k VARCHAR, g BOOLEAN, i BIGINT, f DOUBLE, s VARCHAR) FROM FILE 't.csv' FORMAT CSV;\n"
	for _, q := range []string{
		"SELECT k, count(*) AS n, count(i) AS ni, sum(i) AS si, sum(f) AS sf, min(s) AS mins, max(s) AS maxs, min(i) AS mi, max(f) AS mf, avg(i) AS ai, avg(f) AS af FROM t GROUP BY k",
		"SELECT count(*) AS n, sum(i) AS si, avg(f) AS af, min(k) AS mk FROM t",
		"SELECT count(*) AS n, sum(i) AS si, avg(f) AS af, max(s) AS ms FROM t WHERE i > 1000000000",
		"SELECT k, g, sum(i) AS si, avg(i) + 1 AS a1 FROM t GROUP BY k, g HAVING count(*) > 10",
		// Most rows pass: folded in place under a selection vector.
		"SELECT k, count(*) AS n, sum(f) AS sf, min(s) AS ms, max(f) AS mf, avg(f) AS af FROM t WHERE f > 5 GROUP BY k",
		// A dropped row the argument cannot take: the rows kept are gathered first.
		"SELECT k, count(*) AS n, sum(CAST(CASE WHEN k = 'k1' THEN 'bad' ELSE '1.5' END AS DOUBLE)) AS sb FROM t WHERE k <> 'k1' GROUP BY k",
	} {
		var want [][]any
		for _, par := range []int{1, AllCores} {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			out := &collect{}
			split, morsels := false, false
			err := RunScript(context.Background(), filepath.Join(dir, "q.sql"), create+q+";", ScriptOptions{
				Options:   Options{Allocator: mem, BatchSize: 100, Parallelism: par},
				NewOutput: func() (sinks.Writer, error) { return out, nil },
				Plan: func(_ context.Context, bound *logical.Plan, _ *catalog.Catalog, _ planner.Options, o *Options) error {
					built, err := Build(bound, *o)
					if err != nil {
						return err
					}
					for _, op := range built.Graph().Operators {
						// A filter right under the aggregation is fused into its
						// partial aggregations.
						split = split || strings.HasSuffix(op.Name, "partial aggregate") && op.Parallelism() == 4
						morsels = morsels || (op.Name == "filter" || op.Name == "filter + partial aggregate") && op.Parallelism() == 4
					}
					built.closeFiles()
					return nil
				},
			})
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			mem.AssertSize(t, 0)
			if split != (par == AllCores) || morsels != (par == AllCores && strings.Contains(q, "WHERE")) {
				t.Fatalf("%s at parallelism %d: two phases %v, filter on every core %v", q, par, split, morsels)
			}
			rows := out.rows
			sortRows(rows)
			if par == 1 {
				want = rows
				continue
			}
			if len(rows) == 0 {
				t.Fatalf("%s: no rows", q)
			}
			if err := rowsMatch(rows, want); err != nil {
				t.Fatalf("%s in two phases (want: in one): %v", q, err)
			}
		}
	}
}
