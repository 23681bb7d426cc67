package tpch

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// The plan benchmarks run a TPC-H query as the binder plans it now against
// the same question written the way the binder planned it before (the
// baseline), over the same generated files in the same process: go test
// -bench 'Plan' runs them alternately and reports the ratio of their times
// (the plan's gain: a load that comes and goes shifts both). TIERFLOW_TPCH_SF
// picks the scale factor (default 0.05, 300,000 lineitems).

var benchData struct {
	once sync.Once
	dir  string
	err  error
}

// benchDir generates the benchmarks' files once per process.
func benchDir(b *testing.B) string {
	b.Helper()
	benchData.once.Do(func() {
		sf := 0.05
		if s := os.Getenv("TIERFLOW_TPCH_SF"); s != "" {
			sfs, err := ParseSFs(s)
			if err != nil {
				benchData.err = err
				return
			}
			sf = sfs[0]
		}
		root, err := os.MkdirTemp("", "tpch-bench")
		if err != nil {
			benchData.err = err
			return
		}
		o := GenOptions{SF: sf, Seed: 1, Types: SpecTypes}
		benchData.dir = Dir(root, o)
		benchData.err = Generate(context.Background(), benchData.dir, o)
	})
	if benchData.err != nil {
		b.Fatal(benchData.err)
	}
	return benchData.dir
}

// benchPlans runs each named text as a sub-benchmark over the files, after
// checking that they give the same rows.
func benchPlans(b *testing.B, texts [][2]string) {
	dir := benchDir(b)
	tf := &Tierflow{}
	if err := tf.Load(context.Background(), dir, SpecTypes); err != nil {
		b.Fatal(err)
	}
	var first Result
	for i, t := range texts {
		res, err := tf.Run(context.Background(), Query{Name: t[0], Text: t[1]})
		if err != nil {
			b.Fatalf("%s: %v", t[0], err)
		}
		if i == 0 {
			first = res
		} else if d := Compare(res, first); d != "" {
			b.Fatalf("%s and %s differ: %s", texts[0][0], t[0], d)
		}
	}
	// Alternating within each iteration: a load that comes and goes
	// shifts both plans alike. ratio is the last plan's time over the
	// first's (the baseline's); each plan's ms/op is reported too.
	spent := make([]time.Duration, len(texts))
	b.ResetTimer()
	for range b.N {
		for i, t := range texts {
			start := time.Now()
			if _, err := tf.Run(context.Background(), Query{Name: t[0], Text: t[1]}); err != nil {
				b.Fatal(err)
			}
			spent[i] += time.Since(start)
		}
	}
	for i, t := range texts {
		b.ReportMetric(float64(spent[i].Milliseconds())/float64(b.N), t[0]+"-ms/op")
	}
	b.ReportMetric(float64(spent[len(texts)-1])/float64(spent[0]), "ratio")
}

func queryText(b *testing.B, name string) string {
	qs, err := Select([]string{name})
	if err != nil {
		b.Fatal(err)
	}
	return qs[0].Text
}

// BenchmarkPlanExistsSemiJoin: Q4's correlated EXISTS as a semi join (now)
// against the IN list of every qualifying order key it was answered with
// before (o_orderkey IN (SELECT l_orderkey ...), which the binder still
// answers that way).
func BenchmarkPlanExistsSemiJoin(b *testing.B) {
	q4 := queryText(b, "q4")
	in := strings.Replace(q4, "and exists (", "and o_orderkey in (", 1)
	in = strings.Replace(in, "select\n\t\t\t*\n\t\tfrom\n\t\t\tlineitem", "select\n\t\t\tl_orderkey\n\t\tfrom\n\t\t\tlineitem", 1)
	in = strings.Replace(in, "l_orderkey = o_orderkey\n\t\t\tand ", "", 1)
	if in == q4 || !strings.Contains(in, "select\n\t\t\tl_orderkey") {
		b.Fatal("Q4's text changed: the IN form was not made")
	}
	benchPlans(b, [][2]string{{"in-list", in}, {"semi-join", q4}})
}

// BenchmarkPlanAvgDecimal: Q1 with avg over its DECIMAL columns split in
// two phases as an exact DECIMAL sum and a count (now) against the same
// query with the columns cast to DOUBLE first, which is what the split
// did before (every row converted, then a float sum).
func BenchmarkPlanAvgDecimal(b *testing.B) {
	q1 := queryText(b, "q1")
	cast := q1
	for _, c := range []string{"l_quantity", "l_extendedprice", "l_discount"} {
		cast = strings.Replace(cast, "avg("+c+")", "avg(cast("+c+" as double))", 1)
	}
	if strings.Count(cast, "as double") != 3 {
		b.Fatal("Q1's text changed: the cast form was not made")
	}
	benchPlans(b, [][2]string{{"avg-of-double", cast}, {"avg-of-decimal", q1}})
}
