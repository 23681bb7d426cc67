package planner_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/explain"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/planner/lower"
)

// oneTypeInfra is run's built-in infrastructure in shape: a free worker of
// type "local" on each of three tiers.
const oneTypeInfra = `tiers: [{name: edge}, {name: hub}, {name: cloud}]
default_link: {cost_per_gb: 0}
worker_types: [{name: local, price: 0}]
workers:
  - {name: edge-1, type: local, tier: edge}
  - {name: hub-1, type: local, tier: hub}
  - {name: cloud-1, type: local, tier: cloud}
`

// planScript applies a script's CREATEs and plans its last statement.
func planScript(t testing.TB, src, infraYAML string, o planner.Options) (*planner.Result, error) {
	t.Helper()
	inf, err := infra.Parse("i.yaml", []byte(infraYAML))
	if err != nil {
		t.Fatal(err)
	}
	script, err := lang.Parse("q.sql", src)
	if err != nil {
		t.Fatal(err)
	}
	cat := &catalog.Catalog{}
	var last lang.Statement
	for _, st := range script.Statements {
		if ok, err := bind.Apply(cat, st); ok {
			if err != nil {
				t.Fatal(err)
			}
			continue
		}
		last = st
	}
	return planner.PlanStatement(context.Background(), last, cat, inf, o)
}

const unprofiledModel = `CREATE MODEL classify TASK 'image-classification'
  INPUTS (image TENSOR(FLOAT, 1, 28, 28))
  OUTPUTS (label VARCHAR, score FLOAT)
  VARIANTS (small FROM 'small.onnx' WITH (accuracy = 84), large FROM 'large.onnx' WITH (accuracy = 90), mid FROM 'mid.onnx' WITH (accuracy = 87));
CREATE STREAM frames (id BIGINT, image TENSOR(FLOAT, 1, 28, 28)) FROM NATS 'f' FORMAT ARROW RATE 40 PER SECOND;
`

// TestUnprofiledModelIsEstimated: a model declared in SQL without latency
// profiles plans (it used to fail: "no worker can run model classify"),
// its latency estimated on every worker type, the plan saying so and
// naming `tierflow profile`; estimated alike, the most accurate variant
// wins, as the runtime's default placement runs it.
func TestUnprofiledModelIsEstimated(t *testing.T) {
	res, err := planScript(t, unprofiledModel+"SELECT id, c.label FROM frames CROSS JOIN LATERAL classify(image) AS c(label, score);", oneTypeInfra, planner.Options{})
	if err != nil {
		t.Fatalf("an unprofiled model does not plan: %v", err)
	}
	op := res.Physical.Operator("classify")
	if op == nil {
		t.Fatalf("no classify operator: %+v", res.Physical.Operators)
	}
	if op.Variant != "large" {
		t.Errorf("variant %s, want the most accurate (large)", op.Variant)
	}
	if strings.Join(op.Estimated, ",") != "local" {
		t.Errorf("estimated on %v, want [local]", op.Estimated)
	}
	if cap := op.Workers[0].Capacity; cap != 1000/lower.EstimatedLatencyMs {
		t.Errorf("capacity %g items/s, want %g (the estimated latency's)", cap, 1000/lower.EstimatedLatencyMs)
	}
	txt := explain.Text(res.Physical)
	if !strings.Contains(txt, "latency estimated on local") || !strings.Contains(txt, "tierflow profile") {
		t.Errorf("EXPLAIN does not say the latency is estimated and how to measure it:\n%s", txt)
	}
	var js strings.Builder
	if err := explain.JSON(&js, res.Physical); err != nil || !strings.Contains(js.String(), `"estimated_latency_on"`) {
		t.Errorf("EXPLAIN (FORMAT JSON) does not carry the estimate: %v\n%s", err, js.String())
	}
}

// TestObjectiveOverAnEstimateIsInfeasible: the objective rule holds for an
// unprofiled model too: ACCURACY no variant reaches is infeasible at its
// position (the runtime used to run the most accurate variant anyway).
func TestObjectiveOverAnEstimateIsInfeasible(t *testing.T) {
	res, err := planScript(t, unprofiledModel+"SELECT id, c.label FROM frames CROSS JOIN LATERAL classify(image) AS c(label, score)\nWITH (ACCURACY >= 99);", oneTypeInfra, planner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = res.Runnable()
	if !errors.Is(err, planner.ErrInfeasible) || !strings.HasPrefix(err.Error(), "q.sql:7:7: ") || !strings.Contains(err.Error(), "90") {
		t.Errorf("Runnable() = %v, want ErrInfeasible at q.sql:7:7 naming the best reachable accuracy (90)", err)
	}
}

// TestProfilesForAnotherSetupAreEstimated: a catalog profiled for other
// worker types plans on this infrastructure at its slowest profiled
// latency; profiles that name one of the infrastructure's types keep the
// others out (they cannot run the model).
func TestProfilesForAnotherSetupAreEstimated(t *testing.T) {
	src := `CREATE MODEL classify TASK 'c' INPUTS (image TENSOR(FLOAT, 1, 28, 28)) OUTPUTS (label VARCHAR, score FLOAT)
  VARIANTS (small FROM 's.onnx' WITH (accuracy = 84, latency_ms.x2 = 2), large FROM 'l.onnx' WITH (accuracy = 90, latency_ms.x2 = 5));
CREATE STREAM frames (id BIGINT, image TENSOR(FLOAT, 1, 28, 28)) FROM NATS 'f' FORMAT ARROW;
SELECT id, c.label FROM frames CROSS JOIN LATERAL classify(image) AS c(label, score);`
	res, err := planScript(t, src, oneTypeInfra, planner.Options{})
	if err != nil {
		t.Fatalf("a model profiled for another setup does not plan: %v", err)
	}
	op := res.Physical.Operator("classify")
	if op.Variant != "large" || len(op.Estimated) == 0 || op.Workers[0].Capacity != 1000/5.0 {
		t.Errorf("got %s estimated on %v at %g items/s, want large estimated at its slowest profile (200 items/s)", op.Variant, op.Estimated, op.Workers[0].Capacity)
	}
	// The same catalog on a setup with x2 workers: its profiles hold.
	mixed := `tiers: [{name: edge}, {name: cloud}]
default_link: {cost_per_gb: 0}
worker_types: [{name: camera, price: 0}, {name: x2, price: 1}]
workers:
  - {name: e, type: camera, tier: edge}
  - {name: c, type: x2, tier: cloud}
`
	res, err = planScript(t, src, mixed, planner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	op = res.Physical.Operator("classify")
	if len(op.Estimated) != 0 || len(op.Workers) != 1 || op.Workers[0].Name != "c" {
		t.Errorf("on %+v estimated %v, want the profiled x2 worker c only", op.Workers, op.Estimated)
	}
}

// TestQueriesWithoutAStreamPlan: a query over tables only, or without FROM,
// plans as one relational stage where the runtime runs it (it failed with
// "nothing to place" and no position).
func TestQueriesWithoutAStreamPlan(t *testing.T) {
	for _, src := range []string{
		"CREATE TABLE sites (sensor BIGINT, site VARCHAR) FROM FILE 'sites.csv' FORMAT CSV;\nSELECT site, count(*) AS n FROM sites GROUP BY site;",
		"SELECT 1 + 1 AS two;",
	} {
		res, err := planScript(t, src, oneTypeInfra, planner.Options{})
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if !res.Physical.Feasible || len(res.Physical.Sources) != 1 || !res.Physical.Sources[0].Bounded {
			t.Errorf("%s: plan %+v, want a feasible plan from one bounded source", src, res.Physical)
		}
		txt := explain.Text(res.Physical)
		if !strings.Contains(txt, "Table sites (tier edge, read once)") && !strings.Contains(txt, "Values (one row, tier edge)") {
			t.Errorf("%s: EXPLAIN does not show the table or values it reads:\n%s", src, txt)
		}
	}
}

// TestExplainPlansExplainAnalyze: EXPLAIN ANALYZE's run bounds (DURATION,
// ROWS) are nothing to plan by: planning it accepts them; on a plain
// EXPLAIN they are an error at the option.
func TestExplainPlansExplainAnalyze(t *testing.T) {
	for src, want := range map[string]string{
		"EXPLAIN ANALYZE (DURATION 5, ROWS 500, FORMAT TEXT) SELECT 1 AS a;": "",
		"EXPLAIN (DURATION 5) SELECT 1 AS a;":                                "q.sql:1:10: EXPLAIN option DURATION bounds EXPLAIN ANALYZE's run",
	} {
		script, err := lang.Parse("q.sql", src)
		if err != nil {
			t.Fatal(err)
		}
		format := "text"
		err = planner.ExplainOptions(script.Statements[0].(*lang.Explain), &planner.Options{}, &format, nil)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", src, err)
		case want != "" && (err == nil || !strings.HasPrefix(err.Error(), want)):
			t.Errorf("%s: %v, want %q", src, err, want)
		}
	}
}

// TestNestedUnionsCountEachRowOnce: a union of unions plans the rate of the
// rows it carries, as the same branches in one union do. Each union stated
// its total on every branch and the one above summed those totals again,
// doubling the estimate per level: a WITH that unions itself with itself 40
// times asked for 2^79 items/s and was infeasible at any size.
func TestNestedUnionsCountEachRowOnce(t *testing.T) {
	const stream = "CREATE STREAM s (id BIGINT) FROM NATS 's' FORMAT ARROW RATE 40 PER SECOND;\nCREATE STREAM r (id BIGINT) FROM NATS 'r' FORMAT ARROW RATE 10 PER SECOND;\n"
	for name, tc := range map[string]struct {
		query string
		want  float64
	}{
		"flat":     {"SELECT id FROM s UNION ALL SELECT id FROM s UNION ALL SELECT id FROM s UNION ALL SELECT id FROM s;", 160},
		"nested":   {"SELECT id FROM (SELECT id FROM s UNION ALL SELECT id FROM s) a UNION ALL SELECT id FROM (SELECT id FROM s UNION ALL SELECT id FROM s) b;", 160},
		"uneven":   {"SELECT id FROM (SELECT id FROM s UNION ALL SELECT id FROM r) a UNION ALL SELECT id FROM r;", 60},
		"filtered": {"SELECT id FROM (SELECT id FROM s UNION ALL SELECT id FROM r) a WHERE id = 1 UNION ALL SELECT id FROM r;", 0},
		"with":     {"WITH c0 AS (SELECT id FROM s), c1 AS (SELECT id FROM c0 UNION ALL SELECT id FROM c0), c2 AS (SELECT id FROM c1 UNION ALL SELECT id FROM c1), c3 AS (SELECT id FROM c2 UNION ALL SELECT id FROM c2) SELECT id FROM c3;", 320},
	} {
		res, err := planScript(t, stream+tc.query, oneTypeInfra, planner.Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := res.Physical.Throughput
		if tc.want == 0 {
			// The filter keeps a fraction of the first union: more than r
			// alone, less than all of s and r.
			if got <= 10 || got >= 60 {
				t.Errorf("%s: %g items/s, want between 10 and 60", name, got)
			}
			continue
		}
		if math.Abs(got-tc.want) > 1e-6*tc.want {
			t.Errorf("%s: %g items/s, want %g (every row once)", name, got, tc.want)
		}
	}
}

// A model called three times is estimated once in the plan and in the
// reason a plan is refused: it was named once per call, three times over.
func TestAnEstimateIsNamedOncePerModel(t *testing.T) {
	q := "SELECT id, a.label FROM frames CROSS JOIN LATERAL classify(image) AS a(label, score) CROSS JOIN LATERAL classify(image) AS b(label, score) CROSS JOIN LATERAL classify(image) AS c(label, score)"
	res, err := planScript(t, unprofiledModel+q+";", oneTypeInfra, planner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Physical.Estimates) != 1 || res.Physical.Estimates[0].Model != "classify" {
		t.Errorf("estimates %+v, want classify once", res.Physical.Estimates)
	}
	res, err = planScript(t, unprofiledModel+q+" WITH (ACCURACY >= 99);", oneTypeInfra, planner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Runnable(); err == nil || strings.Count(err.Error(), "the latency of model classify is an estimate") != 1 {
		t.Errorf("%v: want the estimate named once", err)
	}
}
