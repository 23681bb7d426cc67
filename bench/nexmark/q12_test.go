package nexmark

import (
	"fmt"
	"sort"
	"testing"
	"time"
)

// q12 counts each bidder's bids in 10 s windows of processing time
// (PROCTIME()). With a clock that steps 1 s each time it is read, and
// batches of 1,000 bids read in file order by one instance, the j-th batch
// passes at second j, so each window holds ten batches' bids, and every
// run answers alike; a window closes when a batch brings a time past its
// end (or at the input's end).
func TestQ12(t *testing.T) {
	const batch = 1000
	base := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	want := map[string]int{}
	for i, b := range bids(t) {
		start := base.Add(time.Duration(i/batch/10*10) * time.Second)
		want[fmt.Sprint(b.bidder, start.UnixMicro(), start.Add(10*time.Second).UnixMicro())]++
	}
	var wantRows []string
	for k, n := range want {
		wantRows = append(wantRows, fmt.Sprint(k, " ", n))
	}
	sort.Strings(wantRows)
	if len(want) < 100 {
		t.Fatalf("%d (bidder, window) groups: the data do not exercise q12", len(want))
	}
	q, _ := Lookup("q12")
	for run := 0; run < 2; run++ {
		var reads int
		clock := func() time.Time {
			reads++
			return base.Add(time.Duration(reads-1) * time.Second)
		}
		res, err := Run(t.Context(), data(t), q, Options{Keep: true, BatchSize: batch, Parallelism: 1, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range res.Rows {
			got = append(got, fmt.Sprint(r[0], " ", r[2].(time.Time).UnixMicro(), " ", r[3].(time.Time).UnixMicro(), " ", r[1]))
		}
		sort.Strings(got)
		same(t, fmt.Sprintf("q12 (run %d)", run+1), got, wantRows)
	}
}
