package ocr

import (
	"bytes"
	"context"
	"math"
	"os"
	"testing"
	"time"

	"github.com/tierflow/tierflow/internal/testenv"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/runtime/analyze"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// analyzeTolerance is how far EXPLAIN ANALYZE's measured throughput and
// costs may be from the plan's estimates on this workflow (issue 31).
const analyzeTolerance = 0.15

// explainAnalyze runs the first query of query.sql (ACCURACY >= acc) on the
// embedded cluster of infra.yaml as EXPLAIN ANALYZE does, the scenes
// replayed at the catalog's rate, rows of them (0: all).
func explainAnalyze(t *testing.T, acc string, rows int64) *analyze.Report {
	t.Helper()
	inf, err := infra.LoadFile("infra.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("query.sql")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := cluster.StartEmbedded(ctx, cluster.Options{Infra: inf, Catalog: "catalog.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if acc != "" {
		src = bytes.ReplaceAll(src, []byte("ACCURACY >= 70"), []byte("ACCURACY >= "+acc))
	}
	script := deploy.Script{Filename: "query.sql", Source: string(src), BaseDir: ".", Catalog: "catalog.yaml", Nth: 1}
	rep, err := c.ExplainAnalyze(ctx, script, cluster.AnalyzeOptions{MaxRows: rows})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// withinEstimate checks the plan's headline estimates against the run:
// the throughput it was planned for, its network cost (frames or crops
// across the edge's uplink, priced) and its compute cost (the workers its
// stages ran on).
func withinEstimate(t *testing.T, rep *analyze.Report) {
	t.Helper()
	checks := map[string]analyze.Check{}
	for _, c := range rep.Checks {
		checks[c.What] = c
	}
	for _, what := range []string{"throughput", "network cost", "compute cost"} {
		c, ok := checks[what]
		if !ok || c.Error == nil || c.Estimated <= 0 {
			t.Errorf("%s: no estimate to hold the run to: %+v", what, c)
			continue
		}
		t.Logf("%s: measured %.4g, estimated %.4g (%+.1f%%)", what, c.Measured, c.Estimated, 100**c.Error)
		if math.Abs(*c.Error) > analyzeTolerance {
			t.Errorf("%s: measured %.4g, estimated %.4g (%+.1f%%, want within %.0f%%)", what, c.Measured, c.Estimated, 100**c.Error, 100*analyzeTolerance)
		}
	}
	if t.Failed() {
		var b bytes.Buffer
		_ = rep.Write(&b)
		t.Logf("EXPLAIN ANALYZE:\n%s", b.String())
	}
}

// TestExplainAnalyzeWithinEstimate: EXPLAIN ANALYZE of the workflow on the
// embedded cluster measures its throughput, network cost and compute cost
// within 15% of the plan's estimates: eight scenes (four seconds at the
// catalog's two a second) here, the whole stream and the plan of ACCURACY
// >= 80 (det-480 with rec-320) in the long suite.
func TestExplainAnalyzeWithinEstimate(t *testing.T) {
	modelDir(t)
	withinEstimate(t, explainAnalyze(t, "", 8))
	if !testenv.IsLong() {
		return
	}
	for _, acc := range []string{"", "80"} {
		rep := explainAnalyze(t, acc, 0)
		withinEstimate(t, rep)
	}
}
