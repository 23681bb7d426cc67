package nexmark

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"

	"github.com/tierflow/tierflow/bench"
	"github.com/tierflow/tierflow/internal/cli"
	"github.com/tierflow/tierflow/runtime/cluster"
)

// ScaleRow is one query on one number of workers: its time, and its speed
// over the first worker count's (the speedup) as the median of the ratios
// of runs made one after the other, so a load that comes and goes on a
// shared machine weighs on both sides of each ratio.
type ScaleRow struct {
	Query        string  `json:"query"`
	Workers      int     `json:"workers"`
	Partitions   int     `json:"partitions"`
	Events       int     `json:"events"`
	Rows         int64   `json:"rows_out"`
	Seconds      float64 `json:"seconds_median"`
	EventsPerSec float64 `json:"events_per_sec"`
	Speedup      float64 `json:"speedup"`
	SpeedupMin   float64 `json:"speedup_min"`
	SpeedupMax   float64 `json:"speedup_max"`
	// Same says every run answered the rows of the first worker count's
	// first run (compared by the sum of the rows' hashes).
	Same bool `json:"same_answer"`
	// WorkerCPU is the worker processes' CPU seconds (user and system, all
	// of them together) per million events, the median over the runs; 0
	// with the workers in this process. BenchCPU is this process's own
	// (the NATS server, the coordinator, the sink; with embedded workers,
	// theirs too). CPU per event holds on a machine shared with other
	// load, where events/s does not, and on C cores bounds the speedup of
	// n workers over 1 by min(n, C) x WorkerCPU(1) / (WorkerCPU(n) +
	// BenchCPU(n)) while the single worker has a core of its own.
	WorkerCPU float64 `json:"worker_cpu_s_per_m_events,omitempty"`
	BenchCPU  float64 `json:"bench_cpu_s_per_m_events"`
	// RelayMB and RelayMsgs are what the workers' relay connections sent
	// the NATS server (batches, progress and acks crossing between
	// workers: the exchanges' cost), in megabytes and messages per million
	// events; OtherMB is every other connection's (the control plane, the
	// sink's rows). Medians over the runs.
	RelayMB   float64 `json:"relay_mb_per_m_events"`
	RelayMsgs float64 `json:"relay_msgs_per_m_events"`
	OtherMB   float64 `json:"other_mb_per_m_events"`
}

// ScaleOptions run the keyed queries on clusters of several sizes.
type ScaleOptions struct {
	Events  int
	Workers []int // worker counts; the first is the baseline
	Reps    int
	// Processes runs the workers as child processes (Binary, or this
	// executable); otherwise in this process.
	Processes bool
	Binary    string
	Log       io.Writer
	Progress  *cli.Progress
	// ProfileDir, with Processes, has every worker process write a CPU
	// profile to ProfileDir/N-workers/NAME.pprof.
	ProfileDir string
}

// Scale runs each query Reps times on a cluster of each size in
// o.Workers, over the events in parts (Partition), the sizes taking turns
// in each repetition (and the order turned around every other one).
func Scale(ctx context.Context, parts string, partitions int, qs []Query, o ScaleOptions) ([]ScaleRow, error) {
	clusters := make([]*Cluster, len(o.Workers))
	defer func() {
		for _, c := range clusters {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i, n := range o.Workers {
		if o.Progress != nil {
			o.Progress.Describe("starting " + cli.Count(n, "worker"))
		}
		co := ClusterOptions{Workers: n, Processes: o.Processes, Binary: o.Binary, Log: o.Log}
		if o.ProfileDir != "" && o.Processes {
			co.ProfileDir = filepath.Join(o.ProfileDir, fmt.Sprintf("%d-workers", n))
			if err := os.MkdirAll(co.ProfileDir, 0o755); err != nil {
				return nil, err
			}
		}
		c, err := StartCluster(ctx, co)
		if err != nil {
			return nil, err
		}
		clusters[i] = c
	}
	if o.Processes && os.Getenv("GOMAXPROCS") == "" {
		// This process (the NATS server, the coordinators, the sink)
		// shares the machine with the largest cluster's worker
		// processes: it gets the cores they leave (cluster.HostShare),
		// in every size's runs alike.
		most := 0
		for _, c := range clusters {
			most = max(most, c.cpus)
		}
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(cluster.HostShare(most)))
	}
	var out []ScaleRow
	for _, q := range qs {
		secs := make([][]float64, len(o.Workers))
		workerCPU := make([][]float64, len(o.Workers))
		benchCPU := make([][]float64, len(o.Workers))
		relayMB := make([][]float64, len(o.Workers))
		relayMsgs := make([][]float64, len(o.Workers))
		otherMB := make([][]float64, len(o.Workers))
		rows := make([]ScaleRow, len(o.Workers))
		var first *Result
		for r := 0; r < o.Reps; r++ {
			for j := range o.Workers {
				i := j
				if r%2 == 1 {
					i = len(o.Workers) - 1 - j
				}
				if o.Progress != nil {
					o.Progress.Describe(q.Name + " on " + cli.Count(o.Workers[i], "worker"))
				}
				stopProfile, err := o.profileBench(o.Workers[i], q.Name, r)
				if err != nil {
					return nil, err
				}
				trafficBefore := clusters[i].traffic()
				workersBefore, benchBefore := clusters[i].workerCPU(), bench.ProcessCPU()
				res, err := clusters[i].Run(ctx, parts, q, Options{Check: true})
				stopProfile()
				if err != nil {
					return nil, err
				}
				perM := 1e6 / float64(o.Events)
				if o.Processes {
					workerCPU[i] = append(workerCPU[i], (clusters[i].workerCPU()-workersBefore).Seconds()*perM)
				}
				benchCPU[i] = append(benchCPU[i], (bench.ProcessCPU()-benchBefore).Seconds()*perM)
				t := clusters[i].traffic().Sub(trafficBefore)
				relayMB[i] = append(relayMB[i], float64(t.RelayBytes)/1e6*perM)
				relayMsgs[i] = append(relayMsgs[i], float64(t.RelayMsgs)*perM)
				otherMB[i] = append(otherMB[i], float64(t.OtherBytes)/1e6*perM)
				if o.Progress != nil {
					o.Progress.Add(1)
				}
				if first == nil {
					first = &res
					for k := range rows {
						rows[k].Same = true
					}
				}
				if res.Written != first.Written || res.Sum != first.Sum {
					rows[i].Same = false
				}
				rows[i].Rows = res.Written
				secs[i] = append(secs[i], res.Elapsed.Seconds())
			}
		}
		for i, n := range o.Workers {
			var ratios []float64
			for r := range secs[i] {
				ratios = append(ratios, secs[0][r]/secs[i][r])
			}
			row := rows[i]
			row.Query, row.Workers, row.Partitions, row.Events = q.Name, n, partitions, o.Events
			row.Seconds = median(secs[i])
			row.EventsPerSec = float64(o.Events) / row.Seconds
			row.Speedup = median(ratios)
			if len(workerCPU[i]) > 0 {
				row.WorkerCPU = median(workerCPU[i])
			}
			row.BenchCPU = median(benchCPU[i])
			row.RelayMB, row.RelayMsgs, row.OtherMB = median(relayMB[i]), median(relayMsgs[i]), median(otherMB[i])
			sort.Float64s(ratios)
			row.SpeedupMin, row.SpeedupMax = ratios[0], ratios[len(ratios)-1]
			out = append(out, row)
		}
	}
	return out, nil
}

// profileBench, with ProfileDir and Processes, profiles this process (the
// NATS server, the coordinator, the sink) during one run into
// ProfileDir/N-workers/bench-QUERY-rR.pprof, beside the workers' profiles:
// the side that does not scale with the workers shows there. The returned
// function stops it.
func (o ScaleOptions) profileBench(workers int, query string, rep int) (func(), error) {
	if o.ProfileDir == "" || !o.Processes {
		return func() {}, nil
	}
	f, err := os.Create(filepath.Join(o.ProfileDir, fmt.Sprintf("%d-workers", workers), fmt.Sprintf("bench-%s-r%d.pprof", query, rep+1)))
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// lcm is the least common multiple of ns: partitions that spread evenly
// over every worker count compared.
func lcm(ns []int) int {
	l := 1
	for _, n := range ns {
		a, b := l, n
		for b != 0 {
			a, b = b, a%b
		}
		l = l / a * n
	}
	return l
}
