package exec

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/operators/sinks"
)

// noteReads is a sink that notes how often the clock had been read when
// its first rows came.
type noteReads struct {
	collect
	reads *atomic.Int64
	first atomic.Int64
}

func (n *noteReads) Write(rec arrow.Record) error {
	if rec.NumRows() > 0 {
		n.first.CompareAndSwap(0, n.reads.Load())
	}
	return n.collect.Write(rec)
}

// A TUMBLE over PROCTIME() is a processing-time window (docs/language.md,
// "Processing time"): it closes when a row brings a processing time past
// its end, not when the event-time watermark does, so its rows go out
// while the stream is still being read. The clock steps 1 s per read, one
// read per batch of 50 rows: window [0 s, 10 s) holds the first ten
// batches and closes with the eleventh, so it reaches the sink while the
// stream is still being read: the clock holds the source at its 100th read
// until the first window has reached the sink (a file this small is
// otherwise read whole before the operators after the source run, when CI's
// other packages hold the processors). The event times (2026) are years
// behind the clock, so a window closed by the watermark would wait for the
// input's end, and the source would wait out its hold.
func TestProcessingTimeWindowsCloseByTheClock(t *testing.T) {
	dir := t.TempDir()
	path := writeEvents(t, dir, 10000, 7)
	base := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var reads atomic.Int64
	out := &noteReads{reads: &reads}
	script := fmt.Sprintf("CREATE STREAM s (id BIGINT, k BIGINT, ts TIMESTAMP) FROM FILE '%s' FORMAT CSV;\n", path) +
		"SELECT k, count(*) AS n, window_start FROM (SELECT k, PROCTIME() AS p FROM s) GROUP BY k, TUMBLE(p, INTERVAL '10' SECOND);"
	err := RunScript(context.Background(), filepath.Join(dir, "q.sql"), script, ScriptOptions{
		Options: Options{BatchSize: 50, Parallelism: 1, Clock: func() time.Time {
			n := reads.Add(1)
			if n == 100 {
				for hold := time.Now().Add(5 * time.Second); out.first.Load() == 0 && time.Now().Before(hold); {
					time.Sleep(time.Millisecond)
				}
			}
			return base.Add(time.Duration(n-1) * time.Second)
		}},
		NewOutput: func() (sinks.Writer, error) { return out, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := reads.Load(); r != 200 {
		t.Fatalf("the clock was read %d times, want once per batch (200)", r)
	}
	if first := out.first.Load(); first < 11 || first > 100 {
		t.Fatalf("the first window reached the sink after %d clock reads, want after the 11th and while the source was held at its 100th", first)
	}
	total := int64(0)
	for _, r := range out.rows {
		total += r[1].(int64)
		if s := r[2].(time.Time); s.Before(base) || s.Sub(base)%(10*time.Second) != 0 {
			t.Fatalf("window_start %v is not a 10 s window of the clock", s)
		}
	}
	if total != 10000 || len(out.rows) != 20*7 {
		t.Fatalf("%d rows counting %d events, want 20 windows x 7 keys counting 10000", len(out.rows), total)
	}
}
