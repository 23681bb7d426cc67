package exec

import (
	"context"
	"fmt"
	"math/rand/v2"
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

// A GROUP BY whose groups take more than Options.MemoryLimit spills its
// partial states to disk and still gives the answer it gives in memory.
func TestGroupByLargerThanTheMemoryLimitSpills(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(3, 4))
	var b strings.Builder
	b.WriteString("k,name,i,f,d\n")
	for range 8000 {
		name := fmt.Sprint("n", r.IntN(300))
		if r.IntN(50) == 0 {
			name = ""
		}
		fmt.Fprintf(&b, "%d,%s,%d,%.2f,%d.%02d\n", r.IntN(3000), name, r.Int64N(1000)-500, r.Float64()*10, r.IntN(100), r.IntN(100))
	}
	if err := os.WriteFile(filepath.Join(dir, "t.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	const create = "CREATE TABLE t (k BIGINT, name VARCHAR, i BIGINT, f DOUBLE, d DECIMAL(15,2)) FROM FILE 't.csv' FORMAT CSV;\n"
	run := func(q string, limit int64) ([][]any, Stats) {
		return runStats(t, filepath.Join(dir, "q.sql"), create+q+";", Options{BatchSize: 512, MemoryLimit: limit})
	}
	for _, q := range []string{
		"SELECT k, name, count(*) AS n, sum(i) AS s, avg(f) AS a, min(name) AS lo, max(i) AS hi FROM t GROUP BY k, name",
		"SELECT name, count(*) AS n, avg(i) AS a FROM t GROUP BY name",
		"SELECT count(*) AS n, sum(f) AS s FROM t",
		// a DECIMAL's sum and avg: two partial sums of one column
		"SELECT k, sum(d) AS s, avg(d) AS a, sum(d * 2) AS s2 FROM t GROUP BY k",
	} {
		want, st := run(q, 0)
		if st.Spills != 0 || len(want) == 0 {
			t.Fatalf("%s without a limit: %d rows, %d spills", q, len(want), st.Spills)
		}
		got, st := run(q, 64<<10)
		if keyed := strings.Contains(q, "GROUP BY k"); keyed != (st.Spills > 0) {
			t.Fatalf("%s under 64 KiB: %d spills, %d partial rows", q, st.Spills, st.SpilledRows)
		}
		if err := rowsMatch(got, want); err != nil {
			t.Fatalf("%s spilling (want: in memory): %v", q, err)
		}
	}
}

// runStats runs script (at path) under o over a checked allocator (checked
// once the run is over), building and running its query itself so as to
// return its Stats with its rows, sorted.
func runStats(t *testing.T, path, script string, o Options) ([][]any, Stats) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	o.Allocator = mem
	out := &collect{}
	var st Stats
	err := RunScript(context.Background(), path, script, ScriptOptions{
		Options:   o,
		NewOutput: func() (sinks.Writer, error) { return &collect{}, nil },
		Plan: func(ctx context.Context, bound *logical.Plan, _ *catalog.Catalog, _ planner.Options, o *Options) error {
			opts := *o
			opts.Output = out
			q, err := Build(bound, opts)
			if err != nil {
				return err
			}
			st, err = q.Run(ctx)
			return err
		},
	})
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	sortRows(out.rows)
	return out.rows, st
}

// A join of two tables whose right side takes more than Options.MemoryLimit
// goes to disk partitioned by key and gives the rows it gives in memory.
func TestJoinLargerThanTheMemoryLimitSpills(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(5, 6))
	var a, b strings.Builder
	a.WriteString("k,x\n")
	for i := range 3000 {
		k := fmt.Sprint(r.IntN(1500))
		if i%50 == 0 {
			k = "" // a NULL key never matches
		}
		fmt.Fprintf(&a, "%s,%d\n", k, i)
	}
	b.WriteString("k,name\n")
	for i := range 4000 {
		k := fmt.Sprint(r.IntN(1200))
		if i%70 == 0 {
			k = ""
		}
		fmt.Fprintf(&b, "%s,n%d\n", k, i)
	}
	for name, s := range map[string]string{"a.csv": a.String(), "b.csv": b.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("TMPDIR", t.TempDir())
	const create = "CREATE TABLE a (k INT, x BIGINT) FROM FILE 'a.csv' FORMAT CSV;\nCREATE TABLE b (k BIGINT, name VARCHAR) FROM FILE 'b.csv' FORMAT CSV;\n"
	run := func(q string, limit int64) ([]string, Stats) {
		out, st := runStats(t, filepath.Join(dir, "q.sql"), create+q+";", Options{BatchSize: 256, MemoryLimit: limit})
		rows := make([]string, len(out))
		for i, r := range out {
			rows[i] = fmt.Sprint(r)
		}
		return rows, st
	}
	for _, q := range []string{
		"SELECT a.k, a.x, b.name FROM a JOIN b ON a.k = b.k",
		"SELECT a.k, a.x, b.name FROM a LEFT JOIN b ON a.k = b.k",
		"SELECT a.x, b.name FROM a JOIN b ON a.k = b.k AND a.x > 1000",
	} {
		want, st := run(q, 0)
		if st.JoinSpills != 0 || len(want) == 0 {
			t.Fatalf("%s without a limit: %d rows, %d spills", q, len(want), st.JoinSpills)
		}
		got, st := run(q, 16<<10)
		if st.JoinSpills != 1 || st.JoinSpilledRows != 7000 {
			t.Fatalf("%s under 16 KiB: %d spills, %d rows spilled", q, st.JoinSpills, st.JoinSpilledRows)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("%s: %d rows spilling, %d in memory", q, len(got), len(want))
		}
	}
	if left, err := os.ReadDir(os.Getenv("TMPDIR")); err != nil || len(left) != 0 {
		t.Fatalf("temporary files left: %v %v", left, err)
	}
}

// A shared worker's file sink (Options.Confine set) writes through the
// disk guard (rel.DiskGuarded); on a disk with room it writes every row,
// as a local run's does, and the write check ConfineWrite is what vets
// its path.
func TestConfinedFileSinkWritesThroughTheGuard(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "t.csv"), []byte("k\n1\n2\n3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var vetted []string
	o := Options{Confine: func(p string) (string, error) { return p, nil },
		ConfineWrite: func(p string) (string, error) { vetted = append(vetted, p); return p, nil }}
	runStats(t, filepath.Join(dir, "q.sql"), "CREATE TABLE t (k BIGINT) FROM FILE 't.csv' FORMAT CSV;\nCREATE SINK o TO FILE 'out.csv' FORMAT CSV;\nINSERT INTO o SELECT k * 2 AS d FROM t;", o)
	b, err := os.ReadFile(filepath.Join(dir, "out.csv"))
	if err != nil || string(b) != "d\n2\n4\n6\n" {
		t.Errorf("the confined sink wrote %q (%v)", b, err)
	}
	if len(vetted) == 0 {
		t.Error("ConfineWrite vetted nothing")
	}
	for _, p := range vetted {
		if filepath.Base(p) != "out.csv" {
			t.Errorf("ConfineWrite vetted %v, want the sink's file alone", vetted)
		}
	}
}
