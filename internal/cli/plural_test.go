package cli

import "testing"

func TestCount(t *testing.T) {
	for _, c := range []struct {
		n    int
		noun string
		want string
	}{
		{1, "row", "1 row"}, {0, "row", "0 rows"}, {2, "worker", "2 workers"},
		{1, "query", "1 query"}, {3, "query", "3 queries"}, {2, "day", "2 days"},
		{2, "batch", "2 batches"}, {1, "time", "1 time"}, {4, "time", "4 times"},
	} {
		if got := Count(c.n, c.noun); got != c.want {
			t.Errorf("Count(%d, %q) = %q, want %q", c.n, c.noun, got, c.want)
		}
	}
}
