package sources

import (
	"math"
	"testing"
)

// TestPositionsThinAndFindResumePoint: a log keeps one position per
// watermark (the latest), stays bounded by thinning its older half, and
// Before finds the last position with nothing at or after a time before it.
func TestPositionsThinAndFindResumePoint(t *testing.T) {
	var ps Positions
	ps = ps.Add(Position{Seq: 1, MaxTS: math.MinInt64})
	ps = ps.Add(Position{Seq: 2, MaxTS: 10})
	ps = ps.Add(Position{Seq: 3, MaxTS: 10}) // same watermark: replaces
	ps = ps.Add(Position{Seq: 2, MaxTS: 20}) // backwards (a redelivery): ignored
	ps = ps.Add(Position{Seq: 5, MaxTS: 30})
	want := Positions{{1, math.MinInt64}, {3, 10}, {5, 30}}
	if len(ps) != len(want) {
		t.Fatalf("log %+v, want %+v", ps, want)
	}
	for i := range want {
		if ps[i] != want[i] {
			t.Fatalf("log %+v, want %+v", ps, want)
		}
	}
	for _, c := range []struct {
		ts   int64
		want uint64
		ok   bool
	}{{math.MinInt64, 0, false}, {10, 1, true}, {11, 3, true}, {30, 3, true}, {31, 5, true}} {
		p, ok := ps.Before(c.ts)
		if ok != c.ok || p.Seq != c.want {
			t.Errorf("Before(%d) = %+v, %v; want seq %d, %v", c.ts, p, ok, c.want, c.ok)
		}
	}
	ps = nil
	for i := 1; i <= 10*MaxPositions; i++ {
		ps = ps.Add(Position{Seq: uint64(i), MaxTS: int64(i)})
	}
	if len(ps) > MaxPositions || ps[len(ps)-1].Seq != 10*MaxPositions || ps[0].Seq != 1 {
		t.Fatalf("bounded log: %d positions, first %+v, last %+v", len(ps), ps[0], ps[len(ps)-1])
	}
	// Recent positions stay dense: the last 100 are all there.
	for i := 0; i < 100; i++ {
		if got := ps[len(ps)-1-i].Seq; got != uint64(10*MaxPositions-i) {
			t.Fatalf("recent position %d is seq %d", i, got)
		}
	}
	// Any time still finds a position before it (farther back the older
	// the time).
	for _, ts := range []int64{2000, 4000, 5000} {
		if p, ok := ps.Before(ts); !ok || p.MaxTS >= ts {
			t.Fatalf("Before(%d) = %+v, %v", ts, p, ok)
		}
	}
}
