package planner_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/planner"
)

// BenchmarkPlanWidth plans a UNION ALL of n branches, up to the widest a
// script can write (lang.MaxTokens): the time per branch should not grow
// with n. It grew tenfold from 1,000 to 10,000 branches while lowering
// asked of every branch whether each node's whole subtree held it.
func BenchmarkPlanWidth(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		src := "CREATE STREAM s (id BIGINT) FROM NATS 's' FORMAT ARROW RATE 10 PER SECOND;\nSELECT count(*) AS n FROM (" +
			strings.Repeat("SELECT id FROM s UNION ALL ", n-1) + "SELECT id FROM s) t;"
		b.Run(fmt.Sprintf("branches=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := planScript(b, src, oneTypeInfra, planner.Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/branch")
		})
	}
}
