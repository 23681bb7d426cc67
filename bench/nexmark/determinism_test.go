package nexmark

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/internal/testenv"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/rel"
)

// answer is a run's result as sorted text: its rows, or the table its
// changelog leaves.
func answer(t *testing.T, dir string, q Query, o Options) []string {
	t.Helper()
	o.Keep = true
	res, err := Run(context.Background(), dir, q, o)
	if err != nil {
		t.Fatal(err)
	}
	return settle(t, res.Rows)
}

// settle is a run's rows as sorted text, a changelog applied first.
func settle(t *testing.T, rows [][]any) []string {
	t.Helper()
	var err error
	if len(rows) > 0 {
		if s, ok := rows[0][0].(string); ok && (s == rel.OpInsert || s == rel.OpDelete || s == rel.OpUpdateBefore || s == rel.OpUpdateAfter) {
			if rows, err = rel.ApplyChangelog(rows); err != nil {
				t.Fatal(err)
			}
		}
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = fmt.Sprint(r...)
	}
	sort.Strings(out)
	return out
}

// Every Nexmark query, windowed or joined, answers the same whatever the
// batch sizes (which move the watermark in other steps), the parallelism
// and the scheduling: which rows are late, which windows close when and
// which rows a join keeps follow from event time and the watermark alone.
// 6,000 events over 12 s of event time: windows of 10 s close mid-stream,
// a HOP's overlap. make test-long runs 40,000 events, each query 5 times.
func TestQueriesAnswerTheSameEveryRun(t *testing.T) {
	dir := t.TempDir()
	events, reps := 6_000, 1
	if testenv.IsLong() {
		events, reps = 40_000, 5
	}
	if _, err := Generate(dir, Config{Events: events, Seed: 11, Gap: 2 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	runs := []Options{{BatchSize: 97, Parallelism: 1}, {BatchSize: 500, Parallelism: 3}, {Parallelism: exec.AllCores}}
	// And over the same events in 3 partitions, a source instance each:
	// a windowed aggregation without a key then runs in two phases (a
	// partial one per partition, a merge by window), joins and keyed
	// aggregations take each partition's rows as they come.
	parts, err := Partition(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range Queries {
		if q.ProcTime {
			continue // by processing time: TestQ12
		}
		t.Run(q.Name, func(t *testing.T) {
			want := answer(t, dir, q, Options{BatchSize: 500})
			if len(want) == 0 {
				t.Fatalf("%s answers nothing on the generated events", q.Name)
			}
			for rep := 0; rep < reps; rep++ {
				for _, o := range runs {
					got := answer(t, dir, q, o)
					if strings.Join(got, "\n") != strings.Join(want, "\n") {
						t.Fatalf("%s in batches of %d at parallelism %d (run %d): %d rows, want %d as in batches of 500\n%s", q.Name, o.BatchSize, o.Parallelism, rep+1, len(got), len(want), FirstDifference(got, want))
					}
				}
				if got := answer(t, parts, q, Options{BatchSize: 211, Partitioned: true}); strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Fatalf("%s over 3 partitions (run %d): %d rows, want %d as in one file\n%s", q.Name, rep+1, len(got), len(want), FirstDifference(got, want))
				}
			}
		})
	}
}
