package planner

import (
	"strings"
	"testing"

	"github.com/tierflow/tierflow/lang"
)

func TestExplainOptions(t *testing.T) {
	for _, tc := range []struct {
		src, err string
		frontier bool
		format   string
	}{
		{src: "EXPLAIN (FRONTIER, FORMAT JSON) SELECT a FROM t", frontier: true, format: "json"},
		{src: "EXPLAIN (frontier) SELECT a FROM t", frontier: true, format: "text"},
		{src: "EXPLAIN (FORMAT) SELECT a FROM t", err: "q.sql:1:10: EXPLAIN option FORMAT wants a value"},
		{src: "EXPLAIN (FRONTIER yes) SELECT a FROM t", err: "q.sql:1:10: EXPLAIN option FRONTIER takes no value, got yes"},
		{src: "EXPLAIN (PLOT) SELECT a FROM t", err: "unknown EXPLAIN option PLOT (want FORMAT, STRATEGY, PROFILE or FRONTIER)"},
	} {
		s, err := lang.Parse("q.sql", tc.src)
		if err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		var o Options
		format := "text"
		err = ExplainOptions(s.Statements[0].(*lang.Explain), &o, &format, nil)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.src, err, tc.err)
			}
		case err != nil || o.Frontier != tc.frontier || format != tc.format:
			t.Errorf("%s: frontier %v format %q err %v", tc.src, o.Frontier, format, err)
		}
	}
}
