package coordinator

import (
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/deploy"
)

var (
	descWorkers = prometheus.NewDesc("tierflow_workers", "Registered workers by tier.", []string{"tier"}, nil)
	descQueries = prometheus.NewDesc("tierflow_queries", "Queries by state.", []string{"state"}, nil)
	descTier    = prometheus.NewDesc("tierflow_query_tier_bytes", "Bytes a query moved between tiers (relay meters, sender side).", []string{"query", "from", "to"}, nil)
	// The control loop's live estimates (runtime/control), per operator
	// and per link, smoothed.
	descEst = prometheus.NewDesc("tierflow_estimate_operator", "Live smoothed estimate of an operator of a running query (runtime/control): input_rate rows/s, selectivity, batch_rows, model_ms_per_batch, queue_length, busy share.",
		[]string{"query", "operator_id", "operator", "measure"}, nil)
	descLinkEst = prometheus.NewDesc("tierflow_estimate_link", "Live smoothed estimate of a relay link of a running query: bandwidth_bps, rtt_ms.",
		[]string{"query", "edge", "sender", "receiver", "from", "to", "measure"}, nil)
	descLatency = prometheus.NewDesc("tierflow_query_latency_ms", "End-to-end latency percentiles of a query's result rows (ingest to written), milliseconds.",
		[]string{"query", "quantile"}, nil)
)

// gauges exports the coordinator's view at scrape time.
type gauges Coordinator

func (g *gauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- descWorkers
	ch <- descQueries
	ch <- descTier
	ch <- descEst
	ch <- descLinkEst
	ch <- descLatency
}

func (g *gauges) Collect(ch chan<- prometheus.Metric) {
	c := (*Coordinator)(g)
	tiers := map[string]int{}
	for _, w := range c.Workers() {
		tiers[w.Tier]++
	}
	for t, n := range tiers {
		ch <- prometheus.MustNewConstMetric(descWorkers, prometheus.GaugeValue, float64(n), t)
	}
	states := map[string]int{}
	for _, q := range c.Queries() {
		states[q.State]++
		for k, v := range q.TierBytes() {
			from, to, _ := strings.Cut(k, "->")
			ch <- prometheus.MustNewConstMetric(descTier, prometheus.GaugeValue, float64(v), q.Query, from, to)
		}
		if h, _ := q.EndToEnd(); h.Count > 0 {
			l := control.Percentiles(h)
			for _, x := range []struct {
				q string
				v float64
			}{{"0.5", l.P50}, {"0.95", l.P95}, {"0.99", l.P99}} {
				ch <- prometheus.MustNewConstMetric(descLatency, prometheus.GaugeValue, x.v, q.Query, x.q)
			}
		}
		if q.Estimates == nil || !q.Ended.IsZero() {
			continue
		}
		for _, e := range q.Estimates.Operators {
			id := strconv.Itoa(e.OperatorID)
			for _, m := range []struct {
				name string
				v    float64
			}{{"input_rate", e.InputRate}, {"selectivity", e.Selectivity}, {"batch_rows", e.BatchRows},
				{"model_ms_per_batch", e.ModelMsPerBatch}, {"queue_length", e.QueueLength}, {"busy", e.Busy}} {
				ch <- prometheus.MustNewConstMetric(descEst, prometheus.GaugeValue, m.v, q.Query, id, e.Operator, m.name)
			}
		}
		for _, e := range q.Estimates.Links {
			l := e.Link
			for _, m := range []struct {
				name string
				v    float64
			}{{"bandwidth_bps", e.BandwidthBps}, {"rtt_ms", e.RTTMs}} {
				ch <- prometheus.MustNewConstMetric(descLinkEst, prometheus.GaugeValue, m.v, q.Query,
					strconv.Itoa(int(l.Edge)), strconv.Itoa(int(l.Sender)), strconv.Itoa(int(l.Receiver)), e.From, e.To, m.name)
			}
		}
	}
	for s, n := range states {
		ch <- prometheus.MustNewConstMetric(descQueries, prometheus.GaugeValue, float64(n), s)
	}
}

// costs prices what a query measured with the infrastructure's link and
// worker prices: bytes between tiers (sender side) per GB, and each worker's
// hourly price (by its type in types) for the time the query has held it.
func costs(inf *infra.Infra, info *deploy.QueryInfo, types map[string]string) {
	if inf == nil {
		return
	}
	info.NetworkCost = 0
	for k, b := range info.TierBytes() {
		from, to, _ := strings.Cut(k, "->")
		if from == to {
			continue
		}
		for _, l := range inf.Links {
			if l.From == from && l.To == to || l.From == to && l.To == from {
				info.NetworkCost += float64(b) / (1 << 30) * l.CostPerGB
				break
			}
		}
	}
	end := info.Ended
	if end.IsZero() {
		end = time.Now()
	}
	hours := end.Sub(info.Submitted).Hours()
	info.ComputeCost = 0
	for _, name := range info.Workers {
		if typ, ok := types[name]; ok {
			if wt := inf.WorkerType(typ); wt != nil {
				info.ComputeCost += hours * wt.Price
			}
		}
	}
}
