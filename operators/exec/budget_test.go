package exec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/sinks"
)

// writeEvents writes n rows (id, k, ts) with ts one millisecond apart and k
// cycling over keys, as a CSV file.
func writeEvents(t *testing.T, dir string, n, keys int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("id,k,ts\n")
	for i := range n {
		fmt.Fprintf(&b, "%d,%d,2026-01-01 00:%02d:%02d.%03d\n", i, i%keys, i/60000%60, i/1000%60, i%1000)
	}
	path := filepath.Join(dir, "events.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runBudget runs script under a budget of limit bytes and returns its error
// and the most the budget held.
func runBudget(t *testing.T, dir, script string, limit int64) (error, int64) {
	t.Helper()
	_, peak, err := runBudgetRows(t, dir, script, limit)
	return err, peak
}

// runBudgetRows is runBudget with the rows the script wrote. A run that
// ends well leaves no buffer behind and its budget empty.
func runBudgetRows(t *testing.T, dir, script string, limit int64) ([][]any, int64, error) {
	t.Helper()
	checked := memory.NewCheckedAllocator(memory.NewGoAllocator())
	budget := dataflow.NewMemory("query q on this machine", limit, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &collect{}
	err := RunScript(ctx, filepath.Join(dir, "q.sql"), script, ScriptOptions{
		Options:   Options{Allocator: budget.Allocator(checked), Memory: budget, BatchSize: 1024},
		NewOutput: func() (sinks.Writer, error) { return out, nil },
	})
	cancel()
	if err == nil {
		checked.AssertSize(t, 0)
		if u := budget.Used(); u != 0 {
			t.Errorf("the budget holds %d bytes after the run", u)
		}
	}
	return out.rows, budget.Peak(), err
}

// Every stateful operator counts what it keeps against the query's budget
// and fails the query, naming itself, rather than grow past it (#25): a
// table's windows (all open until it ends), a long HOP (every row in
// thousands of windows), sessions of many keys, an OVER's partitions. The
// same queries run under a roomy budget. A sort of the whole table is not
// among them: it sorts in runs on disk (TestASortSpillsUnderItsBudget).
func TestStatefulOperatorsStayInTheirBudget(t *testing.T) {
	dir := t.TempDir()
	path := writeEvents(t, dir, 200000, 100000)
	table := "CREATE TABLE e (id BIGINT, k BIGINT, ts TIMESTAMP) FROM FILE '" + path + "' FORMAT CSV;\n"
	stream := "CREATE STREAM s (id BIGINT, k BIGINT, ts TIMESTAMP) FROM FILE '" + path + "' FORMAT CSV;\n"
	// Past what the parallel CSV reader reads ahead (a few MiB), so that the
	// operator that fails is the one whose state grows.
	const limit = 8 << 20
	for _, c := range []struct {
		name, sql, op string
	}{
		{"a table's many windows", table + "SELECT k, count(*) FROM e GROUP BY k, TUMBLE(ts, INTERVAL '1' MILLISECOND)", "aggregate"},
		{"a long HOP", stream + "SELECT k, count(*) FROM s GROUP BY k, HOP(ts, INTERVAL '1' HOUR, INTERVAL '1' MILLISECOND)", "aggregate"},
		{"sessions of many keys", table + "SELECT k, count(*) FROM e GROUP BY k, SESSION(ts, INTERVAL '1' HOUR)", ""},
		{"many groups", table + "SELECT id, k, count(*) FROM e GROUP BY id, k", ""},
	} {
		err, peak := runBudget(t, dir, c.sql+";", limit)
		if !errors.Is(err, dataflow.ErrMemory) {
			t.Errorf("%s under %s: %v, want refused for its memory", c.name, dataflow.Bytes(limit), err)
			continue
		}
		if c.op != "" && !strings.Contains(err.Error(), c.op) {
			t.Errorf("%s: %v does not name %s", c.name, err, c.op)
		}
		if peak > limit {
			t.Errorf("%s: the budget held %s, past its limit of %s", c.name, dataflow.Bytes(peak), dataflow.Bytes(limit))
		}
		if strings.Contains(c.name, "HOP") || strings.Contains(c.name, "windows") {
			continue // the abusive shapes: no budget here holds them
		}
		if err, _ := runBudget(t, dir, c.sql+" LIMIT 3;", 512<<20); err != nil {
			t.Errorf("%s under a roomy budget: %v", c.name, err)
		}
	}
}

// A cross join's product is made a slice of probe rows at a time
// (HashJoin.ProbeEach): the budget holds a few batches, not the product.
func TestCrossJoinOutputIsBounded(t *testing.T) {
	dir := t.TempDir()
	path := writeEvents(t, dir, 3000, 10)
	table := "CREATE TABLE e (id BIGINT, k BIGINT, ts TIMESTAMP) FROM FILE '" + path + "' FORMAT CSV;\n"
	const limit = 32 << 20
	err, peak := runBudget(t, dir, table+"SELECT count(*) FROM e a CROSS JOIN e b;", limit)
	// The product is 9 million rows of 48 bytes (432 MB); one batch of
	// 1024 probe rows against 3000 made 3 million at once (147 MB).
	if err != nil {
		t.Fatalf("a cross join of 3000 x 3000 rows under %s: %v", dataflow.Bytes(limit), err)
	}
	t.Logf("the cross join held at most %s", dataflow.Bytes(peak))
}

// An ORDER BY of a whole table past its query's budget sorts runs to disk
// once the budget is a third full and merges them: under the 8 MiB the
// other operators fail in, it answers every row in order, and the budget
// holds nothing after (its run files read back through it).
func TestASortSpillsUnderItsBudget(t *testing.T) {
	dir := t.TempDir()
	path := writeEvents(t, dir, 200000, 100000)
	script := "CREATE TABLE e (id BIGINT, k BIGINT, ts TIMESTAMP) FROM FILE '" + path + "' FORMAT CSV;\nSELECT id, k FROM e ORDER BY k DESC, id;"
	rows, peak, err := runBudgetRows(t, dir, script, 8<<20)
	if err != nil {
		t.Fatalf("a sort of 200,000 rows under 8 MiB: %v", err)
	}
	if peak > 8<<20 {
		t.Errorf("the budget held %s", dataflow.Bytes(peak))
	}
	if len(rows) != 200000 {
		t.Fatalf("%d rows, want 200,000", len(rows))
	}
	for i := 1; i < len(rows); i++ {
		a, b := rows[i-1], rows[i]
		if a[1].(int64) < b[1].(int64) || a[1] == b[1] && a[0].(int64) > b[0].(int64) {
			t.Fatalf("row %d (%v) after %v: want k descending, then id", i, b, a)
		}
	}
}

// A deep page (LIMIT 5 OFFSET 150,000 of 200,000 rows) keeps 150,005 rows
// in its top n: past its query's budget they go to a sort in runs on disk
// that keeps each run's first 150,005, and the page is the right 5 rows.
func TestADeepPageSpillsUnderItsBudget(t *testing.T) {
	dir := t.TempDir()
	path := writeEvents(t, dir, 200000, 100000)
	script := "CREATE TABLE e (id BIGINT, k BIGINT, ts TIMESTAMP) FROM FILE '" + path + "' FORMAT CSV;\nSELECT id, k FROM e ORDER BY k DESC, id LIMIT 5 OFFSET 150000;"
	rows, _, err := runBudgetRows(t, dir, script, 8<<20)
	if err != nil {
		t.Fatalf("a page at 150,000 of 200,000 rows under 8 MiB: %v", err)
	}
	// k descending, two ids each (k, k+100000): row 150,000 has k 24999.
	want := fmt.Sprint([][]any{{int64(24999), int64(24999)}, {int64(124999), int64(24999)}, {int64(24998), int64(24998)}, {int64(124998), int64(24998)}, {int64(24997), int64(24997)}})
	if got := fmt.Sprint(rows); got != want {
		t.Fatalf("page: %s, want %s", got, want)
	}
}
