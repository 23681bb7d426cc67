package nexmark

import (
	"fmt"
	"sort"
	"testing"
	"time"
)

// q6 is each seller's average winning price over its last closed auctions:
// one row per auction with a bid while open, when it closes, averaging the
// winning prices of the seller's auctions that closed up to it (itself and
// at most 10 before, by expires). Rows compare as (seller, average) pairs.
func TestQ6(t *testing.T) {
	type closed struct {
		seller  int64
		expires time.Time
		final   int64
	}
	byID, final := winningBids(t)
	perSeller := map[int64][]closed{}
	for id, w := range final {
		a := byID[id]
		perSeller[a.seller] = append(perSeller[a.seller], closed{a.seller, a.expires, w.price})
	}
	var want []string
	for _, cs := range perSeller {
		sort.Slice(cs, func(i, j int) bool { return cs[i].expires.Before(cs[j].expires) })
		for i, c := range cs {
			var sum int64
			from := max(0, i-10)
			for _, d := range cs[from : i+1] {
				sum += d.final
			}
			want = append(want, fmt.Sprintf("%d %.6f", c.seller, float64(sum)/float64(i+1-from)))
		}
	}
	sort.Strings(want)
	if len(want) < 100 {
		t.Fatalf("only %d closed auctions with bids: the data do not exercise q6", len(want))
	}
	for _, batch := range []int{0, 97} {
		var got []string
		for _, r := range run(t, "q6", batch) {
			got = append(got, fmt.Sprintf("%d %.6f", r[0], r[1]))
		}
		sort.Strings(got)
		same(t, fmt.Sprintf("q6 (batch %d)", batch), got, want)
	}
}
