package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestAnswersMatchDuckDB runs every benchmark query on both engines over a
// small generated data set (and sizes that leave partial batches and row
// groups) and requires the same answers: the check behind every speed-up.
func TestAnswersMatchDuckDB(t *testing.T) {
	duck, err := newDuckEngine()
	if err != nil {
		t.Fatal(err)
	}
	defer duck.close()
	for _, n := range []int{1, 30_001} {
		dir := t.TempDir()
		if err := generate(dir, n); err != nil {
			t.Fatal(err)
		}
		for _, par := range []int{0, 1, 3} {
			tf := tierflowEngine{parallelism: par}
			for _, q := range queries {
				if err := duck.views(context.Background(), q, dir); err != nil {
					t.Fatal(err)
				}
				want, err := duck.run(context.Background(), q, dir)
				if err != nil {
					t.Fatalf("%s: DuckDB: %v", q.name, err)
				}
				got, err := tf.run(context.Background(), q, dir)
				if err != nil {
					t.Fatalf("%s: tierflow: %v", q.name, err)
				}
				if d := compare(q, got, want); d != "" {
					t.Errorf("%s at %d rows, parallelism %d: %s", q.name, n, par, d)
				}
				if n > 1 && len(want) == 0 {
					t.Errorf("%s at %d rows: DuckDB returns nothing; the query tests nothing", q.name, n)
				}
			}
		}
	}
}

func TestCompareFindsDifferences(t *testing.T) {
	q := query{name: "x"}
	a := result{{"a", 1.0}, {"b", 2.0}}
	if d := compare(q, result{{"b", 2.0}, {"a", 1.0}}, a); d != "" {
		t.Fatalf("unordered rows differ: %s", d)
	}
	if d := compare(q, result{{"a", 1.0}, {"b", 2.0000001}}, a); d == "" {
		t.Fatal("a different number compared equal")
	}
	if d := compare(query{ordered: true}, result{{"b", 2.0}, {"a", 1.0}}, a); d == "" {
		t.Fatal("rows out of order compared equal in an ordered query")
	}
	if d := compare(q, result{{"a", 1.0}}, a); !strings.Contains(d, "1 rows") {
		t.Fatalf("missing row: %q", d)
	}
}

func TestBenchPrintsJSONRowsAndMedians(t *testing.T) {
	var out, errs bytes.Buffer
	err := run(context.Background(), []string{"--rows", "2k", "--reps", "1", "--data", t.TempDir(), "--queries", "filter-agg,topn", "--format", "json"}, &out, &errs)
	if err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	var rows []row
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(rows) != 3 || rows[2].Query != "median" {
		t.Fatalf("%+v", rows)
	}
	for _, r := range rows[:2] {
		if r.Same != "yes" || r.TierflowMS <= 0 || r.DuckDBMS <= 0 || r.Rows != 2000 {
			t.Errorf("%+v", r)
		}
	}
}

func TestBadFlagsAreBadInput(t *testing.T) {
	for _, args := range [][]string{{"--rows", "lots"}, {"--peer", "sqlite"}, {"--queries", "nope"}, {"--format", "xml"}} {
		var out, errs bytes.Buffer
		if err := run(context.Background(), args, &out, &errs); err == nil || !strings.Contains(err.Error(), "bad input") {
			t.Errorf("%v: %v", args, err)
		}
	}
}
