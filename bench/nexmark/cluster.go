package nexmark

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/runtime/cluster"
)

// A Cluster runs queries on workers of one tier: an embedded cluster (the
// workers goroutines of this process) or worker processes, on one NATS
// server, their batches crossing it between workers as on separate
// machines.
type Cluster struct {
	c       *cluster.Cluster
	Workers int
	cpus    int // the cores its worker processes hold (GOMAXPROCS each, together); 0 embedded
}

// ClusterOptions start a Cluster.
type ClusterOptions struct {
	Workers int
	// Processes starts each worker as a child process (`tierflow worker`,
	// Binary or this executable); otherwise they run in this process.
	Processes bool
	Binary    string
	// Log receives the workers' warnings (default: dropped).
	Log io.Writer
	// Heartbeat is the workers' heartbeat interval (cluster.Options';
	// default 500 ms, a worker silent for four of them is lost): tests
	// on a loaded machine that kill no worker take a longer one.
	Heartbeat time.Duration
	// ProfileDir, with Processes, has each worker process write a CPU
	// profile to ProfileDir/NAME.pprof (cluster.ProcessOptions).
	ProfileDir string
}

// StartCluster starts o.Workers workers in one tier.
func StartCluster(ctx context.Context, o ClusterOptions) (*Cluster, error) {
	if o.Workers < 1 {
		return nil, fmt.Errorf("nexmark: %d workers", o.Workers)
	}
	inf, err := infra.Parse("nexmark-cluster.yaml", []byte(fmt.Sprintf(`tiers:
  - name: cloud
worker_types:
  - name: core
    vcpus: 1
    memory_gb: 4
    price: 1
workers:
  - name: w
    type: core
    tier: cloud
    count: %d
`, o.Workers)))
	if err != nil {
		return nil, err
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	opts := cluster.Options{Infra: inf, Log: slog.New(slog.NewTextHandler(o.Log, &slog.HandlerOptions{Level: slog.LevelWarn})), Namespace: fmt.Sprintf("nexmark-%d-%d", o.Workers, time.Now().UnixNano()), Heartbeat: o.Heartbeat}
	var c *cluster.Cluster
	cpus := 0 // the cores the worker processes hold between them
	if o.Processes {
		// A worker process stands for a machine of its type (1 vCPU): its
		// Go scheduler runs on that share of the cores, as its model
		// sessions' --threads do (cluster.CPUShare), unless GOMAXPROCS is
		// set for the run. Otherwise one worker would run its instances
		// on every core of this machine, and a second process would add
		// no core.
		var env []string
		share := cluster.CPUShare(inf.Machines()[0], o.Workers)
		cpus = share * o.Workers
		if os.Getenv("GOMAXPROCS") == "" {
			env = []string{fmt.Sprintf("GOMAXPROCS=%d", share)}
		}
		c, err = cluster.StartProcesses(ctx, cluster.ProcessOptions{Options: opts, Binary: o.Binary, Stderr: warnings{o.Log}, Env: env, ProfileDir: o.ProfileDir})
	} else {
		c, err = cluster.StartEmbedded(ctx, opts)
	}
	if err != nil {
		return nil, err
	}
	return &Cluster{c: c, Workers: o.Workers, cpus: cpus}, nil
}

// workerCPU is the CPU time the worker processes have used so far (0 when
// the workers run in this process, or where it cannot be read).
func (c *Cluster) workerCPU() time.Duration {
	d, err := c.c.ProcessCPU()
	if err != nil {
		return 0
	}
	return d
}

// traffic is what the cluster's NATS server (in this process) has
// received so far (zero where it cannot be read).
func (c *Cluster) traffic() cluster.Traffic {
	t, err := c.c.Traffic()
	if err != nil {
		return cluster.Traffic{}
	}
	return t
}

// Close stops the workers (and their processes).
func (c *Cluster) Close() error { return c.c.Close() }

// Kill ends worker i (0-based) at once, as a crash would: the cluster
// recovers its queries on the others.
func (c *Cluster) Kill(i int) error { return c.c.Kill(cluster.WorkerName(fmt.Sprintf("w-%d", i+1))) }

// Run runs q on the cluster over the streams Partition wrote into parts
// (each file a partition, read by a source instance of its own).
func (c *Cluster) Run(ctx context.Context, parts string, q Query, o Options) (Result, error) {
	if o.MaxDelay == 0 {
		o.MaxDelay = time.Second
	}
	out := &rows{keep: o.Keep, check: o.Check}
	start := time.Now()
	err := c.c.RunScript(ctx, filepath.Join(parts, q.Name+".sql"), PartitionedDDL(parts)+q.Text, cluster.ScriptOptions{
		BaseDir: parts, BatchSize: o.BatchSize, MaxDelay: o.MaxDelay, Log: io.Discard, Stdout: io.Discard,
		NewOutput: func() (sinks.Writer, error) { return out, nil },
	})
	res := Result{Rows: out.rows, Written: out.n.Load(), Sum: out.sum.Load(), Elapsed: time.Since(start)}
	if err != nil {
		return res, fmt.Errorf("%s on %d workers: %w", q.Name, c.Workers, err)
	}
	return res, nil
}

// Explain is EXPLAIN of q on the cluster over the streams in parts: the
// plan, then where each operator's instances would run and what each
// takes of its input (nothing is deployed).
func (c *Cluster) Explain(ctx context.Context, parts string, q Query) (string, error) {
	var out bytes.Buffer
	// EXPLAIN goes before the query, after any statement of its own text
	// before it (a stream it declares).
	text := q.Text
	at := strings.LastIndex(strings.TrimRight(text, "; \n"), ";") + 1
	text = text[:at] + "\nEXPLAIN " + text[at:]
	err := c.c.RunScript(ctx, filepath.Join(parts, q.Name+".sql"), PartitionedDDL(parts)+text, cluster.ScriptOptions{
		BaseDir: parts, Log: io.Discard, Stdout: &out})
	return out.String(), err
}

// warnings passes on the worker processes' log lines but their INFO ones
// (a line a query deployed, each run): a benchmark's progress stays
// readable, and a warning or an error still shows.
type warnings struct{ w io.Writer }

func (l warnings) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(" level=INFO ")) {
		return len(p), nil
	}
	return l.w.Write(p)
}
