package exec

import (
	"strings"
	"testing"
)

// A GROUP BY on a stream with a time attribute among its keys closes each
// group when the watermark passes that key (docs/language.md, "Event
// time"): grouped by an order's time after a join that bounds the payments
// by it, each order's count goes out as the watermark passes its time plus
// the bound, so the aggregation keeps only the open orders. It answers what
// the tables answer, in any batching (operators/rel's
// TestClosingGroupByAnswersEachGroupOnce: when each group goes out).
func TestGroupByTimeAttributeClosesGroups(t *testing.T) {
	dir := t.TempDir()
	path := writeEvents(t, dir, 6000, 100) // a row a ms, k = id mod 100
	decl := func(kind string) string {
		return "CREATE " + kind + " a (id BIGINT, k BIGINT, ts TIMESTAMP) FROM FILE '" + path + "' FORMAT CSV;\n" +
			"CREATE " + kind + " b (id BIGINT, k BIGINT, ts TIMESTAMP) FROM FILE '" + path + "' FORMAT CSV;\n"
	}
	// Each a row meets the b rows of its k within the next 500 ms: itself
	// and the five after it (100 ms apart).
	const q = "SELECT a.id, a.ts, count(*) AS n FROM a, b WHERE a.k = b.k AND b.ts BETWEEN a.ts AND a.ts + INTERVAL '500' MILLISECOND GROUP BY a.id, a.ts;"
	want, _ := runRows(t, dir, decl("TABLE")+q, Options{})
	if len(want) != 6000 {
		t.Fatalf("the tables answer %d groups, want one per a row (6000)", len(want))
	}
	for _, o := range []Options{{BatchSize: 333}, {BatchSize: 4096, Parallelism: 3}} {
		got, _ := runRows(t, dir, decl("STREAM")+q, o)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("batch %d, parallelism %d: %d rows, want the tables' %d", o.BatchSize, o.Parallelism, len(got), len(want))
		}
	}
}
