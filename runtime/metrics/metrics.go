// Package metrics serves a process's Prometheus endpoint: per operator
// instance rows and batches in and out, queue depth, batch latency
// histograms and frontier lag, and per relay link bytes and batches (the
// measured network cost). Counters are read from the dataflow's and the
// relay's own meters at scrape time, so running a query costs nothing extra
// but the latency timing of each batch.
//
// metrics imports dataflow and relay (for their stats types) and
// prometheus/client_golang; never planner, operators or cmd.
package metrics

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/relay"
)

// Registry is one process's metrics.
type Registry struct {
	reg          *prometheus.Registry
	batchSeconds *prometheus.HistogramVec
	frontierLag  *prometheus.GaugeVec

	mu      sync.Mutex
	tracked map[[2]string]*tracked // by query and worker (embedded mode has many workers per process)
}

type tracked struct {
	query, worker string
	stats         func() []dataflow.InstanceStats
	links         func() []relay.LinkStats
}

// New makes a registry with the Go runtime and process collectors.
func New() *Registry {
	r := &Registry{reg: prometheus.NewRegistry(), tracked: map[[2]string]*tracked{}}
	r.batchSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "tierflow_operator_batch_seconds",
		Help:    "Time an operator instance spends handling one input batch.",
		Buckets: prometheus.ExponentialBuckets(1e-5, 4, 10),
	}, []string{"query", "operator", "worker"})
	r.frontierLag = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "tierflow_operator_frontier_lag_epochs",
		Help: "Newest epoch an operator has seen minus its input frontier: how far completion trails the data.",
	}, []string{"query", "operator", "worker"})
	r.reg.MustRegister(prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}),
		r.batchSeconds, r.frontierLag, (*collector)(r))
	return r
}

// Register adds a collector of the caller's (the coordinator's gauges).
func (r *Registry) Register(c prometheus.Collector) error { return r.reg.Register(c) }

// Handler serves the registry in the Prometheus text format.
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{Registry: r.reg})
}

// Gather is the registry's Gatherer, for tests and tools.
func (r *Registry) Gather() prometheus.Gatherer { return r.reg }

// Track exports a running query's counters. The returned function freezes
// them at their final values (a finished query stays visible).
func (r *Registry) Track(query, worker string, stats func() []dataflow.InstanceStats, links func() []relay.LinkStats) (freeze func()) {
	t := &tracked{query: query, worker: worker, stats: stats, links: links}
	r.mu.Lock()
	r.tracked[[2]string{query, worker}] = t
	r.mu.Unlock()
	return func() {
		s, l := stats(), links()
		r.mu.Lock()
		t.stats = func() []dataflow.InstanceStats { return s }
		t.links = func() []relay.LinkStats { return l }
		r.mu.Unlock()
	}
}

var (
	descRowsIn     = prometheus.NewDesc("tierflow_operator_rows_in_total", "Rows an operator instance received.", []string{"query", "operator", "instance", "worker"}, nil)
	descRowsOut    = prometheus.NewDesc("tierflow_operator_rows_out_total", "Rows an operator instance emitted.", []string{"query", "operator", "instance", "worker"}, nil)
	descBatchesIn  = prometheus.NewDesc("tierflow_operator_batches_in_total", "Batches an operator instance received.", []string{"query", "operator", "instance", "worker"}, nil)
	descBatchesOut = prometheus.NewDesc("tierflow_operator_batches_out_total", "Batches an operator instance emitted.", []string{"query", "operator", "instance", "worker"}, nil)
	descQueue      = prometheus.NewDesc("tierflow_operator_queue_depth", "Messages waiting in an operator instance's inbox.", []string{"query", "operator", "instance", "worker"}, nil)
	descLinkBytes  = prometheus.NewDesc("tierflow_link_bytes_total", "Bytes on the wire of one relay link end (the measured network cost).", []string{"query", "edge", "sender", "receiver", "direction"}, nil)
	descLinkBatch  = prometheus.NewDesc("tierflow_link_batches_total", "Data batches over one relay link end.", []string{"query", "edge", "sender", "receiver", "direction"}, nil)
	descLinkStall  = prometheus.NewDesc("tierflow_link_stalled_seconds_total", "Time a relay sender waited for credit (backpressure).", []string{"query", "edge", "sender", "receiver", "direction"}, nil)
	descEndToEnd   = prometheus.NewDesc("tierflow_sink_end_to_end_seconds", "End-to-end latency of the rows a sink instance wrote, from their ingest time at the source to written.", []string{"query", "operator", "instance", "worker"}, nil)
	descSLOMiss    = prometheus.NewDesc("tierflow_sink_slo_miss_rows_total", "Rows a sink instance wrote later than the query's LATENCY bound.", []string{"query", "operator", "instance", "worker"}, nil)
)

// latencyBounds are the end-to-end latency histogram's buckets.
var latencyBounds = []time.Duration{time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond,
	20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second}

// collector reads the tracked queries' meters at scrape time.
type collector Registry

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRowsIn, descRowsOut, descBatchesIn, descBatchesOut, descQueue, descLinkBytes, descLinkBatch, descLinkStall, descEndToEnd, descSLOMiss} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	type snap struct {
		query, worker string
		stats         []dataflow.InstanceStats
		links         []relay.LinkStats
	}
	var snaps []snap
	for _, t := range c.tracked {
		snaps = append(snaps, snap{t.query, t.worker, nil, nil})
		snaps[len(snaps)-1].stats, snaps[len(snaps)-1].links = t.stats(), t.links()
	}
	c.mu.Unlock()
	for _, s := range snaps {
		for _, st := range s.stats {
			lv := []string{s.query, st.Operator, strconv.Itoa(st.Index), s.worker}
			ch <- prometheus.MustNewConstMetric(descRowsIn, prometheus.CounterValue, float64(st.RowsIn), lv...)
			ch <- prometheus.MustNewConstMetric(descRowsOut, prometheus.CounterValue, float64(st.RowsOut), lv...)
			ch <- prometheus.MustNewConstMetric(descBatchesIn, prometheus.CounterValue, float64(st.BatchesIn), lv...)
			ch <- prometheus.MustNewConstMetric(descBatchesOut, prometheus.CounterValue, float64(st.BatchesOut), lv...)
			ch <- prometheus.MustNewConstMetric(descQueue, prometheus.GaugeValue, float64(st.QueueLength), lv...)
			if h := st.EndToEnd; h.Count > 0 {
				cum := h.Cumulative(latencyBounds)
				buckets := make(map[float64]uint64, len(cum))
				for i, b := range latencyBounds {
					buckets[b.Seconds()] = cum[i]
				}
				ch <- prometheus.MustNewConstHistogram(descEndToEnd, h.Count, float64(h.SumNs)/1e9, buckets, lv...)
				ch <- prometheus.MustNewConstMetric(descSLOMiss, prometheus.CounterValue, float64(st.SLOMissRows), lv...)
			}
		}
		for _, l := range s.links {
			lv := []string{s.query, strconv.Itoa(int(l.Link.Edge)), strconv.Itoa(int(l.Link.Sender)), strconv.Itoa(int(l.Link.Receiver)), string(l.Direction)}
			ch <- prometheus.MustNewConstMetric(descLinkBytes, prometheus.CounterValue, float64(l.Bytes), lv...)
			ch <- prometheus.MustNewConstMetric(descLinkBatch, prometheus.CounterValue, float64(l.Batches), lv...)
			ch <- prometheus.MustNewConstMetric(descLinkStall, prometheus.CounterValue, l.Stalled.Seconds(), lv...)
		}
	}
}

// Server is a running metrics endpoint.
type Server struct {
	ln  net.Listener
	srv *http.Server
	wg  sync.WaitGroup
}

// Serve listens on addr (":0" picks a port) and serves r at /metrics.
func Serve(addr string, r *Registry) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", r.Handler())
	s := &Server{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // the listener closed under us: nothing left to serve
		}
	}()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL is the endpoint's URL.
func (s *Server) URL() string { return "http://" + s.Addr() + "/metrics" }

// Close stops the server.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	s.wg.Wait()
	return err
}
