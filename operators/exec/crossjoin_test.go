package exec

import (
	"context"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/sinks"
)

// A CROSS JOIN (or FROM a, b without an equality) pairs every left row with
// every row of the right table. A stream written on the right is joined as
// the probe side (the join order puts it there); two streams join as
// Flink's regular join.
func TestCrossJoinPairsEveryRow(t *testing.T) {
	path := writeWideParquet(t, 30, 1)
	decl := "CREATE TABLE a (id INT, ts TIMESTAMP, pad VARCHAR) FROM FILE '" + path + "' FORMAT PARQUET;\n" +
		"CREATE STREAM s (id INT, ts TIMESTAMP, pad VARCHAR) FROM FILE '" + path + "' FORMAT PARQUET;\n"
	for _, c := range []struct {
		name, sql string
		want      int64
	}{
		{"cross join", "SELECT count(*) FROM a CROSS JOIN a b", 900},
		{"comma, filtered", "SELECT count(*) FROM a, a b WHERE a.id < b.id", 435},
		{"one-row aggregate", "SELECT count(*) FROM a, (SELECT avg(id) AS m FROM a) x WHERE a.id > x.m", 15},
		{"stream on the left", "SELECT count(*) FROM s, (SELECT max(id) AS m FROM a) x WHERE s.id * 2 > x.m", 15},
		{"stream written on the right", "SELECT count(*) FROM a CROSS JOIN s", 900},
	} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		out := &collect{}
		err := RunScript(context.Background(), "q.sql", decl+c.sql+";", ScriptOptions{
			Options:   Options{Allocator: mem},
			NewOutput: func() (sinks.Writer, error) { return out, nil },
		})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(out.rows) != 1 || out.rows[0][0] != c.want {
			t.Errorf("%s: rows %v, want [[%d]]", c.name, out.rows, c.want)
		}
		mem.AssertSize(t, 0)
	}
	// Two streams: Flink's regular join, every row of each side kept.
	out := &collect{}
	err := RunScript(context.Background(), "q.sql", decl+"SELECT count(*) FROM s CROSS JOIN s s2;", ScriptOptions{
		NewOutput: func() (sinks.Writer, error) { return out, nil },
	})
	if err != nil || len(out.rows) != 1 || out.rows[0][0] != int64(900) {
		t.Fatalf("two streams: %v, rows %v, want [[900]]", err, out.rows)
	}
}
