package analyze

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// run is a finished two-tier query: a source on the edge paced at 100 rows/s
// for 10 s (100 batches), a model on two hub workers, 1 GiB crossing
// edge->hub, and the plan that expected it.
func run() deploy.QueryInfo {
	t0 := time.Unix(1_700_000_000, 0)
	ns := func(d time.Duration) int64 { return t0.Add(d).UnixNano() }
	hist := func(d time.Duration, n int) dataflow.Histogram {
		return dataflow.Histogram{Buckets: map[int]uint64{bucketIndex(d): uint64(n)}, Count: uint64(n), SumNs: uint64(n) * uint64(d)}
	}
	return deploy.QueryInfo{
		Query: "q1", State: deploy.StateFinished, Planner: "optimizer (auto)",
		Submitted: t0.Add(-time.Second), Started: t0, Ended: t0.Add(10*time.Second + 300*time.Millisecond),
		Placement: &deploy.Placement{
			Workers: []string{"edge-1", "hub-1", "hub-2"},
			Operators: []deploy.OperatorPlan{
				{Name: "scan s", Workers: []int{0}, Tier: "edge", Stage: "s"},
				{Name: "model m", Workers: []int{1, 2}, Tier: "hub", Stage: "m"},
				{Name: "sink", Workers: []int{1}, Tier: "hub", Stage: "m"},
			},
			Edges: []deploy.EdgePlan{{From: 0, To: 1, Kind: "balance"}, {From: 1, To: 2, Kind: "pipeline"}},
		},
		Operators: []dataflow.InstanceStats{
			{Operator: "scan s", OperatorID: 0, Worker: 0, RowsOut: 1000, BatchesOut: 100, First: ns(0), Last: ns(9900 * time.Millisecond)},
			{Operator: "model m", OperatorID: 1, Index: 0, Worker: 1, RowsIn: 600, RowsOut: 600, BatchesIn: 60, BusyNs: int64(3 * time.Second),
				Attributes:   map[string]string{"variant": "m-small", "device": "cuda:0"},
				BatchLatency: hist(2*time.Millisecond, 60), First: ns(10 * time.Millisecond), Last: ns(9950 * time.Millisecond)},
			{Operator: "model m", OperatorID: 1, Index: 1, Worker: 2, RowsIn: 400, RowsOut: 400, BatchesIn: 40, BusyNs: int64(time.Second),
				Attributes:   map[string]string{"variant": "m-small", "device": "cpu (no GPU)"},
				BatchLatency: hist(8*time.Millisecond, 40), First: ns(20 * time.Millisecond), Last: ns(9960 * time.Millisecond)},
			{Operator: "sink", OperatorID: 2, Worker: 1, RowsIn: 1000, BatchesIn: 100, First: ns(15 * time.Millisecond), Last: ns(10 * time.Second)},
		},
		Links: []relay.LinkStats{
			{Link: relay.LinkID{Edge: 0}, Direction: relay.Send, Bytes: 1 << 30, Batches: 100},
			{Link: relay.LinkID{Edge: 0}, Direction: relay.Recv, Bytes: 1 << 30, Batches: 100}, // counted once, at the sender
		},
		Estimate: &deploy.Estimate{
			Strategy: "auto", ComputeCost: 2, NetworkCost: 36, Throughput: 100, TargetThroughput: 100,
			Sources: []deploy.SourceEstimate{{Name: "s", Stream: "s", Tier: "edge", Rate: 100}},
			Stages: []deploy.StageEstimate{{Name: "m", Kind: "ml", Model: "m", Variant: "m-small", Demand: 100,
				Workers: []deploy.WorkerEstimate{{Name: "hub-1", Tier: "hub", ItemsPerSec: 60}, {Name: "hub-2", Tier: "hub", ItemsPerSec: 40}}}},
			Links: []deploy.LinkEstimate{{From: "edge", To: "hub", MBps: 102.4}},
		},
	}
}

func bucketIndex(d time.Duration) int {
	var h dataflow.Histogram
	for i := 0; i < 160; i++ { // the first bucket whose midpoint is d's
		h = dataflow.Histogram{Buckets: map[int]uint64{i: 1}, Count: 1}
		if q := h.Quantile(1); q >= d*9/10 {
			return i
		}
	}
	return 0
}

func testInfra() *infra.Infra {
	return &infra.Infra{
		WorkerTypes: []*infra.WorkerType{{Name: "x2", Price: 0.5}, {Name: "x4", Price: 1}},
		Links:       []*infra.Link{{From: "edge", To: "hub", CostPerGB: 0.1}},
	}
}

func TestReportHoldsRunAgainstPlan(t *testing.T) {
	r, err := New(run(), Options{Infra: testInfra(), WorkerTypes: map[string]string{"edge-1": "x2", "hub-1": "x4", "hub-2": "x4"}})
	if err != nil {
		t.Fatal(err)
	}
	// 100 source batches from 0 to 9.9 s: 100 intervals of 0.1 s; the last
	// batch anywhere 0.1 s after the last source batch, of which 15 ms are
	// the pipeline's latency (the sink's first batch came 15 ms after the
	// first source batch) and 85 ms a backlog.
	if want := 10*time.Second + 85*time.Millisecond; r.Span < want-time.Millisecond || r.Span > want+time.Millisecond {
		t.Fatalf("span %v, want %v", r.Span, want)
	}
	secs := r.Span.Seconds()
	checks := map[string]Check{}
	for _, c := range r.Checks {
		checks[c.What] = c
	}
	if c := checks["throughput"]; math.Abs(c.Measured-1000/secs) > 1e-9 || !c.OK || c.Estimated != 100 {
		t.Errorf("throughput %+v, want %.4g items/s and within 5%% of 100", c, 1000/secs)
	}
	// 1 GiB at 0.1 per GB over the span, per hour; the plan expected
	// 102.4 MiB/s = 36 per hour.
	wantNet := 0.1 * 3600 / secs
	if c := checks["network cost"]; math.Abs(c.Measured-wantNet) > 1e-9 || c.OK != (math.Abs(wantNet/36-1) <= 0.1) {
		t.Errorf("network cost %+v, want %.4g", c, wantNet)
	}
	// The two hub workers ran the model's stage; the edge worker only read
	// the source (the camera), which the plan does not price.
	if c := checks["compute cost"]; c.Measured != 2 || c.Estimated != 2 || !c.OK {
		t.Errorf("compute cost %+v: the staged workers' prices add up to 2 per hour", c)
	}
	if w := r.Workers[0]; w.Name != "edge-1" || w.Staged || !r.Workers[1].Staged {
		t.Errorf("workers %+v: only the hub workers run a stage", r.Workers)
	}
	if len(r.Sources) != 1 || r.Sources[0].Planned != 100 || r.Sources[0].Rows != 1000 {
		t.Errorf("sources %+v", r.Sources)
	}
	m := r.Operators[1]
	if m.Device != "cpu (no GPU), cuda:0" {
		t.Errorf("device %q: each instance's device, once", m.Device)
	}
	if m.Stage != "m" || m.Variant != "m-small" || m.Estimated != 100 || m.RowsIn != 1000 || strings.Join(m.Workers, ",") != "hub-1,hub-2" {
		t.Errorf("model operator %+v", m)
	}
	// Latency percentiles merge both instances: 60 batches of 2 ms, 40 of 8.
	if m.P50 < 1.6 || m.P50 > 2.4 || m.P90 < 6.4 || m.P90 > 9.6 {
		t.Errorf("model batch latency p50 %.3g ms, p90 %.3g ms; want about 2 and 8", m.P50, m.P90)
	}
	if want := 4.0 / secs / 2; math.Abs(m.Busy-want) > 1e-9 {
		t.Errorf("busy %.4g, want %.4g (4 s over two instances)", m.Busy, want)
	}
	if r.Operators[2].Estimated != 0 {
		t.Errorf("the sink shares the model's stage but not its demand: %+v", r.Operators[2])
	}
	hub1 := r.Workers[1]
	if hub1.Name != "hub-1" || hub1.Estimated != 60 || math.Abs(hub1.Measured-600/secs) > 1e-9 || hub1.Price != 1 {
		t.Errorf("worker %+v", hub1)
	}
	if len(r.Links) != 1 || r.Links[0].Bytes != 1<<30 || r.Links[0].EstimatedMBps != 102.4 || r.Links[0].PricePerGB != 0.1 {
		t.Fatalf("links %+v (each byte counts once, at the sender)", r.Links)
	}
	if l := r.Links[0]; math.Abs(l.EstimatedCost-36) > 1e-9 {
		t.Errorf("estimated link cost %.4g, want 36 per hour", l.EstimatedCost)
	}

	var out bytes.Buffer
	if err := r.Write(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"EXPLAIN ANALYZE q1", "checks", "throughput", "network cost", "est MiB/s", "m-small", "hub-1,hub-2"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

// A run that could not keep up fails the throughput check; a query that has
// not ended, or has no placement, cannot be analysed.
func TestReportFlagsAndRefuses(t *testing.T) {
	q := run()
	q.Operators[0].RowsOut = 800 // the source fell behind: 80 rows/s
	r, err := New(q, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c := r.Checks[0]; c.What != "throughput" || c.OK || c.Error == nil || *c.Error > -0.15 {
		t.Errorf("throughput check %+v: 20%% short must fail", c)
	}
	q = run()
	q.Ended = time.Time{}
	if _, err := New(q, Options{}); err == nil || !strings.Contains(err.Error(), "not ended") {
		t.Errorf("unfinished query: %v", err)
	}
	q = run()
	q.Placement = nil
	if _, err := New(q, Options{}); err == nil {
		t.Error("a query without placement was analysed")
	}
}

// A query of tables alone has no rate to keep up with: its sources are read
// once as fast as they go, and the plan's one item a second for each is a
// placeholder. EXPLAIN ANALYZE judged a UNION ALL of four table scans
// against 4 items/s: "NO, +682913158.1%".
func TestATableHasNoThroughputToJudge(t *testing.T) {
	q := run()
	q.Estimate.TargetThroughput = 0
	q.Estimate.Sources = []deploy.SourceEstimate{{Name: "s", Stream: "s", Tier: "edge", Rate: 1, Bounded: true}}
	r, err := New(q, Options{Infra: testInfra(), WorkerTypes: map[string]string{"edge-1": "x2", "hub-1": "x4", "hub-2": "x4"}})
	if err != nil {
		t.Fatal(err)
	}
	if c := r.Checks[0]; c.What != "throughput" || !c.OK || c.Tolerance != 0 || c.Estimated != 0 {
		t.Errorf("throughput over a table: %+v, want not judged", c)
	}
	if len(r.Sources) != 1 || !r.Sources[0].Bounded || r.Sources[0].Planned != 0 {
		t.Errorf("sources %+v, want the table with no planned rate", r.Sources)
	}
	var text strings.Builder
	if err := r.Write(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "- (a table)") || strings.Contains(text.String(), " NO ") {
		t.Errorf("the report:\n%s\nwant the table's rate as none, and no check failed", text.String())
	}
}
