package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/bench/tpch"
	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/internal/testenv"
)

// tpchNotYet are the standard texts tierflow does not run yet, each with
// what it lacks. The test requires each of them to fail (not to answer
// wrongly), so an entry must go when its query starts to work.
// All 22 run now (q19 by the join order's OR factoring, q21 by unnesting);
// the map stays for a query that regresses knowingly.
var tpchNotYet = map[string]string{}

// loadTPCH generates the TPC-H tables at sf with seed and loads them into
// DuckDB and tierflow, DuckDB closed when t ends.
func loadTPCH(t *testing.T, sf float64, seed uint64, ty tpch.Types) (*duckTPCH, *tpch.Tierflow) {
	t.Helper()
	dir := t.TempDir()
	if err := tpch.Generate(context.Background(), dir, tpch.GenOptions{SF: sf, Seed: seed, Types: ty, RowGroupRows: 16384}); err != nil {
		t.Fatal(err)
	}
	duck, err := newDuckTPCH()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { duck.Close() })
	tf := &tpch.Tierflow{}
	if err := duck.Load(context.Background(), dir, ty); err != nil {
		t.Fatal(err)
	}
	if err := tf.Load(context.Background(), dir, ty); err != nil {
		t.Fatal(err)
	}
	return duck, tf
}

// checkTPCH runs the 22 queries on tierflow and DuckDB over one generated
// data set and requires the same answers.
func checkTPCH(t *testing.T, sf float64, ty tpch.Types, notYet map[string]string) {
	duck, tf := loadTPCH(t, sf, 1, ty)
	ctx := context.Background()
	for _, q := range tpch.Queries() {
		want, err := duck.Run(ctx, q)
		if err != nil {
			t.Fatalf("%s: DuckDB: %v", q.Name, err)
		}
		// A query that does not work yet may run long (q19's cross
		// product): it gets seconds to fail, the others a minute.
		limit := time.Minute
		why, later := notYet[q.Name]
		if later {
			limit = 5 * time.Second
		}
		qctx, cancel := context.WithTimeout(ctx, limit)
		got, err := tf.Run(qctx, q)
		cancel()
		if later {
			if err == nil {
				t.Errorf("%s runs now (it lacked %s): take it off tpchNotYet (answer: %s)", q.Name, why, orSame(tpch.Compare(got, want)))
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: tierflow: %v", q.Name, err)
			continue
		}
		if d := tpch.Compare(got, want); d != "" {
			t.Errorf("%s at sf %v (%s types): %s", q.Name, sf, ty, d)
		}
	}
}

func orSame(d string) string {
	if d == "" {
		return "the same as DuckDB's"
	}
	return d
}

// TestTPCHMatchesDuckDB: the 22 standard texts at scale factor 0.01, on the
// specification's types, give DuckDB's answers.
func TestTPCHMatchesDuckDB(t *testing.T) {
	checkTPCH(t, 0.01, tpch.SpecTypes, tpchNotYet)
}

// TestTPCHMatchesDuckDBLarger: the same at 0.1 and on DOUBLE/TIMESTAMP
// files.
func TestTPCHMatchesDuckDBLarger(t *testing.T) {
	testenv.Long(t, "TPC-H at scale factor 0.1: 600,000 lineitems")
	checkTPCH(t, 0.1, tpch.SpecTypes, tpchNotYet)
	checkTPCH(t, 0.1, tpch.DoubleTypes, nil)
}

// The tpch subcommand generates the data, runs both engines and prints the
// table with the median row.
func TestTPCHCommand(t *testing.T) {
	var out, errs bytes.Buffer
	err := runTPCH(context.Background(), []string{"--sf", "0.002", "--reps", "2", "--data", t.TempDir(), "--queries", "q1", "--types", "double"}, &out, &errs)
	if err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	for _, want := range []string{"QUERY", "DUCKDB MS", "q01", "yes", "median", "1 of 1 same"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in\n%s", want, out.String())
		}
	}
	if !strings.Contains(errs.String(), "-- tpch sf 0.002: lineitem,") {
		t.Errorf("no generation progress:\n%s", errs.String())
	}
	if err := runTPCH(context.Background(), []string{"--sf", "zero"}, &out, &errs); err == nil || !strings.Contains(err.Error(), "bad input") {
		t.Errorf("--sf zero: %v", err)
	}
}

// TestTPCHWithinMemoryLimit: the 22 standard texts at scale factor 0.01,
// each given 6 MiB (its joins and aggregations spill past 3 MiB), either
// give DuckDB's answer with the query's budget never past its limit, or
// fail naming the budget (dataflow.LimitError): none takes more than it
// was given, none answers wrongly under the limit. Most must answer: a
// limit every query fails tests nothing. (Q1 peaks at 5.6-5.9 MiB, most of
// it the scan's decoded row groups in flight, so it fails on its limit in
// some runs; its aggregation no longer asks for a whole batch of new groups
// at once: rel's TestLargeBatchOfFewGroupsFitsASmallBudget.)
func TestTPCHWithinMemoryLimit(t *testing.T) {
	const limit = 6 << 20
	duck, tf := loadTPCH(t, 0.01, 1, tpch.SpecTypes)
	tf.MemoryLimit = limit
	ctx := context.Background()
	answered := 0
	for _, q := range tpch.Queries() {
		want, err := duck.Run(ctx, q)
		if err != nil {
			t.Fatalf("%s: DuckDB: %v", q.Name, err)
		}
		qctx, cancel := context.WithTimeout(ctx, time.Minute)
		got, err := tf.Run(qctx, q)
		cancel()
		if peak := tf.Peak(); peak > limit {
			t.Errorf("%s: the budget held %d bytes at its peak, past its limit of %d", q.Name, peak, limit)
		}
		var le *dataflow.LimitError
		switch {
		case errors.As(err, &le):
			t.Logf("%s: failed on its limit: %v", q.Name, err)
		case err != nil:
			t.Errorf("%s: tierflow: %v", q.Name, err)
		default:
			answered++
			if d := tpch.Compare(got, want); d != "" {
				t.Errorf("%s under a %d-byte limit: %s", q.Name, limit, d)
			}
			t.Logf("%s: peak %.2f MiB", q.Name, float64(tf.Peak())/(1<<20))
		}
	}
	if answered < 20 {
		t.Errorf("%d of 22 answered within %d bytes: want at least 20", answered, limit)
	}
}
