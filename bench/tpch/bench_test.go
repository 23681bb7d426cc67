package tpch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestQueriesAreTheTwentyTwo(t *testing.T) {
	qs := Queries()
	if len(qs) != 22 {
		t.Fatalf("%d queries", len(qs))
	}
	for i, q := range qs {
		if want := "q" + twoDigits(i+1); q.Name != want || !strings.HasPrefix(q.Title, "TPC-H Q") {
			t.Errorf("query %d: %q %q", i+1, q.Name, q.Title)
		}
	}
	if st := qs[14].Statements(); len(st) != 3 || !strings.HasPrefix(st[0], "create view revenue0") || !strings.HasPrefix(st[2], "drop view") {
		t.Errorf("q15's statements: %q", st)
	}
}

func twoDigits(n int) string { return string(rune('0'+n/10)) + string(rune('0'+n%10)) }

func TestSelectQueries(t *testing.T) {
	qs, err := Select([]string{"q1", "Q06", " 22"})
	if err != nil || len(qs) != 3 || qs[0].Name != "q01" || qs[1].Name != "q06" || qs[2].Name != "q22" {
		t.Fatalf("%v %v", qs, err)
	}
	for _, bad := range []string{"q0", "q23", "x", ""} {
		if _, err := Select([]string{bad}); !errors.Is(err, ErrBadInput) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestFlagsRoundTripAndCheck(t *testing.T) {
	f := Defaults()
	f.SF, f.Queries, f.Peer = "0.01,1", "q1,q3", "none"
	o, err := f.Options()
	if err != nil || len(o.SFs) != 2 || o.SFs[0] != 0.01 || len(o.Queries) != 2 || o.Types != SpecTypes {
		t.Fatalf("%+v %v", o, err)
	}
	if a := strings.Join(f.Args(), " "); !strings.Contains(a, "--sf 0.01,1") || !strings.Contains(a, "--queries q1,q3") || !strings.Contains(a, "--timeout 10m0s") {
		t.Fatalf("args %s", a)
	}
	f.MemoryLimit = "512MiB"
	if tf, err := f.Tierflow(); err != nil || tf.MemoryLimit != 512<<20 || !strings.Contains(strings.Join(f.Args(), " "), "--memory-limit 512MiB") {
		t.Fatalf("--memory-limit 512MiB: %+v %v %q", tf, err, f.Args())
	}
	for _, mut := range []func(*Flags){
		func(f *Flags) { f.SF = "0" },
		func(f *Flags) { f.SF = "one" },
		func(f *Flags) { f.Types = "float" },
		func(f *Flags) { f.Peer = "sqlite" },
		func(f *Flags) { f.Reps = 0 },
		func(f *Flags) { f.Format = "xml" },
		func(f *Flags) { f.Queries = "q99" },
		func(f *Flags) { f.MemoryLimit = "lots" },
		func(f *Flags) { f.MemoryLimit = "-1MiB" },
	} {
		g := Defaults()
		mut(&g)
		if _, err := g.Options(); !errors.Is(err, ErrBadInput) {
			t.Errorf("%+v: %v", g, err)
		}
	}
}

func TestCompareFindsDifferences(t *testing.T) {
	day := time.Date(1995, 3, 15, 0, 0, 0, 0, time.UTC)
	a := Result{{"a", 1.0, day}, {"b", 2.0, nil}}
	if d := Compare(Result{{"a", 1.0 + 1e-12, day}, {"b ", 2.0, nil}}, a); d != "" {
		t.Fatalf("equal within tolerance: %s", d)
	}
	for _, got := range []Result{
		{{"b", 2.0, nil}, {"a", 1.0, day}},
		{{"a", 1.0001, day}, {"b", 2.0, nil}},
		{{"a", 1.0, day.AddDate(0, 0, 1)}, {"b", 2.0, nil}},
		{{"a", 1.0, day}, {"b", 2.0, 0.0}},
		{{"a", 1.0, day}},
	} {
		if d := Compare(got, a); d == "" {
			t.Errorf("%v compared equal to %v", got, a)
		}
	}
}

// fakeEngine answers every query with fixed rows after a fixed time.
type fakeEngine struct {
	name string
	res  Result
	err  error
	runs int
}

func (f *fakeEngine) Name() string                               { return f.name }
func (f *fakeEngine) Load(context.Context, string, Types) error  { return nil }
func (f *fakeEngine) Close() error                               { return nil }
func (f *fakeEngine) Run(context.Context, Query) (Result, error) { f.runs++; return f.res, f.err }

func TestBenchTableJSONAndFailures(t *testing.T) {
	qs, _ := Select([]string{"q1", "q2"})
	o := BenchOptions{SFs: []float64{0.002}, Types: SpecTypes, Seed: 1, Data: t.TempDir(), Reps: 3, Queries: qs, Format: "json"}
	tf := &fakeEngine{name: "tierflow", res: Result{{1.0}}}
	peer := &fakeEngine{name: "duckdb", res: Result{{1.0}}}
	var out, errs bytes.Buffer
	if err := Bench(context.Background(), o, tf, peer, &out, &errs); err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	var rows []Row
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[0].Same != "yes" || rows[2].Query != "median" || tf.runs != 6 || peer.runs != 6 {
		t.Fatalf("%+v (runs %d, %d)", rows, tf.runs, peer.runs)
	}
	if !strings.Contains(errs.String(), "-- [2/2] q02 at sf 0.002") {
		t.Errorf("no progress per query:\n%s", errs.String())
	}

	// A different answer and a failing query show in the table and fail
	// the run, after the table.
	o.Format = "table"
	tf.res = Result{{2.0}}
	out.Reset()
	err := Bench(context.Background(), o, tf, peer, &out, &errs)
	if err == nil || !strings.Contains(err.Error(), "differ from duckdb") || !strings.Contains(out.String(), "NO: row 1 column 1: 2, want 1") {
		t.Fatalf("%v\n%s", err, out.String())
	}
	tf.err = errors.New("boom")
	out.Reset()
	err = Bench(context.Background(), o, tf, peer, &out, &errs)
	if err == nil || !strings.Contains(out.String(), "tierflow: boom") {
		t.Fatalf("%v\n%s", err, out.String())
	}
}
