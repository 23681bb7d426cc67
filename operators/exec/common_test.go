package exec

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/logical"
)

// An aggregation the plan holds twice (logical.SubtreeKey: the same scan,
// filters and groups) is built once, its rows going to both consumers,
// and the query answers what it answered with two: the keys with the
// most rows, found by joining the counts with their own maximum (q5's
// shape). Counting a column (no NULLs: the same counts) is another
// aggregation, built apart.
func TestEqualAggregationsAreBuiltOnce(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("k,v\n")
	counts := map[int]int{}
	for i := range 2000 {
		k := (i * 7919) % 37 % 11
		counts[k]++
		fmt.Fprintf(&b, "%d,%d\n", k, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "t.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	most := 0
	for _, n := range counts {
		most = max(most, n)
	}
	var want [][]any
	for k, n := range counts {
		if n == most {
			want = append(want, []any{int64(k), int64(n)})
		}
	}
	sortRows(want)
	const create = "CREATE TABLE t (k BIGINT, v BIGINT) FROM FILE 't.csv' FORMAT CSV;\n"
	for _, c := range []struct {
		inner string // the second count
		scans int
	}{
		{"count(*)", 1},
		{"count(v)", 2},
	} {
		q := fmt.Sprintf(`SELECT a.k, a.n FROM (SELECT k, count(*) AS n FROM t GROUP BY k) a
JOIN (SELECT max(n) AS m FROM (SELECT k, %s AS n FROM t GROUP BY k) c) b ON a.n = b.m;`, c.inner)
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		var out *collect
		scans := 0
		for _, run := range []bool{false, true} {
			out = &collect{}
			o := ScriptOptions{Options: Options{Allocator: mem, BatchSize: 100}, NewOutput: func() (sinks.Writer, error) { return out, nil }}
			if !run {
				o.Plan = func(_ context.Context, bound *logical.Plan, _ *catalog.Catalog, _ planner.Options, o *Options) error {
					built, err := Build(bound, *o)
					if err != nil {
						return err
					}
					for _, op := range built.Graph().Operators {
						if strings.HasPrefix(op.Name, "scan ") {
							scans++
						}
					}
					built.closeFiles()
					return nil
				}
			}
			if err := RunScript(context.Background(), filepath.Join(dir, "q.sql"), create+q, o); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		mem.AssertSize(t, 0)
		if scans != c.scans {
			t.Errorf("with %s: %d scans of t, want %d", c.inner, scans, c.scans)
		}
		sortRows(out.rows)
		if err := rowsMatch(out.rows, want); err != nil {
			t.Errorf("with %s: %v", c.inner, err)
		}
	}
}
