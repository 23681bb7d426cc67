package control

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/relay"
)

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-6*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// stats of a source and a model call (two instances) after k seconds at
// 100 rows/s, half of them kept by the model, in batches of 10 rows whose
// inference takes 4 ms, busy 20% of the time.
func stats(k int64) ([]dataflow.InstanceStats, []relay.LinkStats) {
	lat := dataflow.Histogram{Count: uint64(10 * k), SumNs: uint64(10*k) * 4e6}
	ops := []dataflow.InstanceStats{
		{Operator: "scan s", OperatorID: 0, RowsOut: 100 * k, BatchesOut: 10 * k},
		{Operator: "model m", OperatorID: 1, Index: 0, RowsIn: 50 * k, RowsOut: 25 * k, BatchesIn: 5 * k, BatchesOut: 5 * k,
			BusyNs: k * 2e8, BatchLatency: dataflow.Histogram{Count: lat.Count / 2, SumNs: lat.SumNs / 2}, QueueLength: 2,
			Attributes: map[string]string{"variant": "v"}},
		{Operator: "model m", OperatorID: 1, Index: 1, RowsIn: 50 * k, RowsOut: 25 * k, BatchesIn: 5 * k, BatchesOut: 5 * k,
			BusyNs: k * 2e8, BatchLatency: dataflow.Histogram{Count: lat.Count / 2, SumNs: lat.SumNs / 2}, QueueLength: 1,
			Attributes: map[string]string{"variant": "v"}},
	}
	link := relay.LinkID{Query: "q", Edge: 0, Sender: 0, Receiver: 1}
	links := []relay.LinkStats{
		{Link: link, Direction: relay.Send, Bytes: uint64(k) * 1_000_000},
		{Link: link, Direction: relay.Recv, Bytes: uint64(k) * 1_000_000}, // the same bytes, counted once
	}
	return ops, links
}

func TestLiveEstimates(t *testing.T) {
	l := NewLive()
	t0 := time.Unix(1000, 0)
	rtt := map[string]time.Duration{"edge": 3 * time.Millisecond, "cloud": 7 * time.Millisecond}
	ends := func(relay.LinkID) (string, string) { return "edge", "cloud" }
	for k := int64(0); k <= 3; k++ {
		ops, links := stats(k)
		l.Observe(t0.Add(time.Duration(k)*time.Second), ops, links, rtt, ends)
		// A report 10 ms later is too close to be a rate: ignored.
		l.Observe(t0.Add(time.Duration(k)*time.Second+10*time.Millisecond), nil, nil, nil, nil)
	}
	e := l.Estimates()
	if e.Samples != 3 || len(e.Operators) != 2 || len(e.Links) != 1 {
		t.Fatalf("estimates %+v", e)
	}
	src, m := e.Operators[0], e.Operators[1]
	near(t, "source rate", src.InputRate, 100)
	near(t, "source batch rows", src.BatchRows, 10)
	near(t, "model input rate", m.InputRate, 100)
	near(t, "model selectivity", m.Selectivity, 0.5)
	near(t, "model batch rows", m.BatchRows, 10)
	near(t, "model ms per batch", m.ModelMsPerBatch, 4)
	near(t, "model queue", m.QueueLength, 3)
	near(t, "model busy", m.Busy, 0.2)
	near(t, "source model ms", src.ModelMsPerBatch, 0)
	ln := e.Links[0]
	near(t, "bandwidth", ln.BandwidthBps, 1e6)
	near(t, "rtt", ln.RTTMs, 10)
	if ln.From != "edge" || ln.To != "cloud" {
		t.Errorf("link ends %s -> %s", ln.From, ln.To)
	}

	// A rate that doubles moves the estimate by Alpha of the step per sample.
	ops, links := stats(3)
	for i := range ops {
		ops[i].RowsOut += 100
		ops[i].BatchesOut += 10
	}
	l.Observe(t0.Add(4*time.Second), ops, links, rtt, ends)
	near(t, "smoothed source rate", l.Estimates().Operators[0].InputRate, 100+Alpha*(100-100))
	ops2, links2 := stats(3)
	for i := range ops2 {
		ops2[i].RowsOut += 100 + 200
		ops2[i].BatchesOut += 30
	}
	l.Observe(t0.Add(5*time.Second), ops2, links2, rtt, ends)
	near(t, "smoothed source rate after a step to 200/s", l.Estimates().Operators[0].InputRate, 100+Alpha*(200-100))
}

func TestSummaryFields(t *testing.T) {
	var e2e dataflow.Histogram
	for _, ms := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 100} {
		e2e.Add(one(time.Duration(ms) * time.Millisecond))
	}
	ops := []dataflow.InstanceStats{
		{Operator: "scan s", RowsOut: 12},
		{Operator: "sink", RowsIn: 10, EndToEnd: e2e, SLOMissRows: 1},
	}
	s := Summarize(Run{Operators: ops, ResultRows: 10, Dropped: map[string]int64{"late": 2}, LatencySLO: 50 * time.Millisecond, Elapsed: 1500 * time.Millisecond})
	if s.RowsIn != 12 || s.RowsOut != 10 || s.Dropped["late"] != 2 || s.ElapsedS != 1.5 {
		t.Errorf("summary %+v", s)
	}
	if s.SLOMissRate == nil || *s.SLOMissRate != 0.1 {
		t.Errorf("slo miss rate %v, want 0.1", s.SLOMissRate)
	}
	if s.LatencyMs.P50 < 4 || s.LatencyMs.P50 > 6.5 || s.LatencyMs.P99 < 80 || s.LatencyMs.P99 > 120 {
		t.Errorf("latency %+v, want p50 about 5 ms and p99 about 100 ms", s.LatencyMs)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{`"rows_in":`, `"rows_out":`, `"dropped":{`, `"latency_ms":{"p50":`, `"p95":`, `"p99":`,
		`"slo_miss_rate":0.1`, `"replans":[]`, `"recoveries":[]`, `"elapsed_s":1.5`} {
		if !strings.Contains(string(b), f) {
			t.Errorf("summary JSON %s lacks %s", b, f)
		}
	}
	// Rows dropped lazily past their deadline are SLO misses: 1 late of 10
	// written, and 10 dropped, is 11 misses of 20.
	s = Summarize(Run{Operators: ops, ResultRows: 10, Dropped: map[string]int64{dataflow.DropDeadline: 10}, LatencySLO: 50 * time.Millisecond})
	if s.SLOMissRate == nil || *s.SLOMissRate != 0.55 || s.Dropped[dataflow.DropDeadline] != 10 {
		t.Errorf("with deadline drops: slo miss rate %v, dropped %v; want 0.55 and 10", s.SLOMissRate, s.Dropped)
	}
	s = Summarize(Run{Operators: ops})
	if b, _ := json.Marshal(s); !strings.Contains(string(b), `"slo_miss_rate":null`) {
		t.Errorf("without LATENCY: %s, want slo_miss_rate null", b)
	}
}

// one is a histogram of one sample of d.
func one(d time.Duration) dataflow.Histogram {
	var h dataflow.Histogram
	h.AddSample(d)
	return h
}
