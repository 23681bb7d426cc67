package exec

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/rel"

	"github.com/tierflow/tierflow/operators/sinks"
)

// runChangelog runs sql and returns the rows it wrote, in order, op first.
func runChangelog(t *testing.T, dir, sql string, o Options) [][]any {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	o.Allocator = mem
	out := &collect{}
	err := RunScript(context.Background(), filepath.Join(dir, "q.sql"), sql, ScriptOptions{
		Options:   o,
		NewOutput: func() (sinks.Writer, error) { return out, nil },
		Log:       &strings.Builder{},
	})
	if err != nil {
		var pe *dataflow.PanicError
		if errors.As(err, &pe) {
			t.Fatalf("%v\n%s", err, pe.Stack)
		}
		t.Fatal(err)
	}
	return out.rows
}

// finalTable applies a changelog (op first; rel.ApplyChangelog) and
// returns what is left, each row as text, sorted.
func finalTable(t *testing.T, log [][]any) []string {
	t.Helper()
	rows, err := rel.ApplyChangelog(log)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		out = append(out, fmt.Sprint(r...))
	}
	sort.Strings(out)
	return out
}

// The top 3 bids per auction on a stream are an updating result: whatever
// the batch sizes and parallelism, the changelog leaves each auction's three
// highest prices at ranks 1 to 3 (the file's own answer, computed here), and
// a GROUP BY over it, or a row_number without a bound, is refused at its
// token.
func TestStreamTopNPerKeyIsAChangelog(t *testing.T) {
	dir := t.TempDir()
	determinismData(t, dir, 2000)
	const create = "CREATE STREAM bids (auction BIGINT, price BIGINT, ts TIMESTAMP) FROM FILE 'bids.csv' FORMAT CSV;\n"
	const q = `SELECT auction, price, rn FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rn FROM bids
) WHERE rn <= 3;`
	// The answer from the file: each auction's three highest prices.
	f, err := os.Open(filepath.Join(dir, "bids.csv"))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	prices := map[int64][]int64{}
	for _, r := range recs[1:] {
		a, _ := strconv.ParseInt(r[0], 10, 64)
		p, _ := strconv.ParseInt(r[1], 10, 64)
		prices[a] = append(prices[a], p)
	}
	var want []string
	for a, ps := range prices {
		sort.Slice(ps, func(i, j int) bool { return ps[i] > ps[j] })
		for i := 0; i < 3 && i < len(ps); i++ {
			want = append(want, fmt.Sprint(a, ps[i], int64(i+1)))
		}
	}
	sort.Strings(want)
	for _, o := range []Options{
		{BatchSize: 1000, MaxDelay: time.Second},
		{BatchSize: 7, MaxDelay: time.Second},
		{BatchSize: 64, MaxDelay: time.Second, Parallelism: 3},
	} {
		log := runChangelog(t, dir, create+q, o)
		if got := finalTable(t, log); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("batch %d, parallelism %d: the changelog leaves %d rows, want %d\nfirst difference: %s", o.BatchSize, o.Parallelism, len(got), len(want), firstDiff(got, want))
		}
		if o.BatchSize == 7 && len(log) <= len(want) {
			t.Fatalf("batches of 7: %d changes for %d final rows: the top rows should change as bids come", len(log), len(want))
		}
	}

	for _, c := range []struct{ sql, want string }{
		{`SELECT auction, count(*) AS n FROM (
  SELECT auction, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rn FROM bids
) WHERE rn <= 3 GROUP BY auction;`, "q.sql:2:1: GROUP BY over an updating result"},
		{`SELECT auction, price, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rn FROM bids;`, "q.sql:2:24: row_number on a stream needs a bound right above it"},
	} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		err := RunScript(context.Background(), filepath.Join(dir, "q.sql"), create+c.sql, ScriptOptions{
			Options:   Options{Allocator: mem},
			NewOutput: func() (sinks.Writer, error) { return &collect{}, nil },
			Log:       &strings.Builder{},
		})
		mem.AssertSize(t, 0)
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s\n-> %v\nwant ErrUnsupported with %q", c.sql, err, c.want)
		}
	}
}
