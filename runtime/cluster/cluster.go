// Package cluster starts a whole tierflow deployment on one machine: an
// in-process NATS server (or an external one by URL), a coordinator, and one
// worker per worker of an infrastructure spec, each worker with its own NATS
// connection, so a plan's data really crosses NATS between tiers, exactly as
// it does between machines. Workers run as goroutine groups in this process
// (StartEmbedded) or as child processes of the tierflow binary
// (StartProcesses). It is the default engine of `tierflow run`.
//
// cluster imports runtime/{coordinator, worker, deploy, metrics}, relay and
// planner/infra; never cmd.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/connectors"
	"github.com/tierflow/tierflow/runtime/coordinator"
	"github.com/tierflow/tierflow/runtime/dataaware"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/devices"
	"github.com/tierflow/tierflow/runtime/inference"
	"github.com/tierflow/tierflow/runtime/inference/sched"
	"github.com/tierflow/tierflow/runtime/metrics"
	"github.com/tierflow/tierflow/runtime/policy"
	"github.com/tierflow/tierflow/runtime/worker"
)

// ErrInfra: the infrastructure spec names no worker.
var ErrInfra = errors.New("cluster: no workers in the infrastructure")

// Options configure a local cluster.
type Options struct {
	// Infra lists the workers to start (one per expanded machine) and
	// orders the tiers. Required.
	Infra *infra.Infra
	// Catalog is a catalog YAML file scripts start from (optional).
	Catalog string
	// NATS is an external server's URL; empty starts one in-process.
	NATS string
	// Auth are the credentials every connection of the cluster presents
	// (coordinator, workers, client): one identity, so it needs the
	// permissions of all three roles.
	Auth natsserver.Auth
	// ServerConfig is a nats-server configuration file for the in-process
	// server (when NATS is empty).
	ServerConfig string
	// Allocator for every worker's records (default memory.DefaultAllocator).
	Allocator memory.Allocator
	// Heartbeat interval of the workers (default 500ms: a lost worker is noticed within 2s).
	Heartbeat time.Duration
	// Metrics, when set, collects the coordinator's and every worker's
	// metrics (one registry: one process).
	Metrics *metrics.Registry
	// Stdout receives STDOUT sinks of the workers (default io.Discard).
	Stdout io.Writer
	Log    *slog.Logger
	// OrtLib is the ONNX Runtime library model calls run with ("": the
	// setup cache); ModelLog receives a line per model operator.
	OrtLib   string
	ModelLog io.Writer
	// Placement is the coordinator's placement mode (coordinator.PlaceOptimizer,
	// the default, or coordinator.PlaceRules).
	Placement string
	// Policies are the coordinator's policies (coordinator.Config.Policies:
	// runtime/policy; nil: policy.Defaults()).
	Policies []policy.Policy
	// Namespace is the deployment's subject namespace (deploy.InNamespace):
	// two clusters on one NATS server (two `tierflow run --nats URL`) each
	// take their own and never see the other's workers or queries.
	Namespace string
	// Sched names the policy of every worker's inference scheduler
	// (sched.ByName: "naive", the default, "deepquery", or a SneakPeek
	// scheduler: "maxacc-edf", "lo-edf", "grouped", "sneakpeek").
	Sched string
	// Evidence is the SneakPeek estimator the data-aware policies weigh
	// each row's variants by (nil: profiled accuracy).
	Evidence dataaware.Evidence
	// Limits bound every query as `tierflow coordinator --max-...` does
	// (coordinator.Config.Limits); zero fields are unlimited.
	Limits deploy.Limits
	// EvidenceDir is where Evidence came from (tierflow worker --evidence):
	// worker processes load it themselves.
	EvidenceDir string
}

// ExecHooks completes executor options for a process on connection nc: the
// model runtime (runtime/inference, running the plan's variants when given)
// for CROSS JOIN LATERAL model calls and the NATS connectors
// (runtime/connectors) for FROM NATS streams and TO NATS sinks. Workers and
// the coordinator take it as their Exec.
//
// threads is the intra-op thread count of the process's model sessions: its
// share of the machine's CPUs (0: ONNX Runtime's default, the whole machine).
func ExecHooks(nc *nats.Conn, ortLib string, modelLog io.Writer, threads int) func(*exec.Options, deploy.ExecPart) {
	return ExecHooksWith(nc, ortLib, modelLog, threads, nil)
}

// ExecHooksWith is ExecHooks whose workers' model calls carry each row's
// SneakPeek evidence (ev: kNN over a training sample) to a data-aware
// scheduling policy.
func ExecHooksWith(nc *nats.Conn, ortLib string, modelLog io.Writer, threads int, ev dataaware.Evidence) func(*exec.Options, deploy.ExecPart) {
	rt := inference.New(inference.Config{OrtLib: ortLib, Log: modelLog, IntraOpThreads: threads})
	nh := connectors.Hooks{Conn: func() (*nats.Conn, error) { return nc, nil }}
	return func(o *exec.Options, p deploy.ExecPart) {
		r := rt
		if len(p.Variants) > 0 || p.Scheduler != nil {
			// A worker's part: its model calls run on the worker's
			// scheduler, as the query's tenant.
			r = inference.New(inference.Config{OrtLib: ortLib, Log: modelLog, Variants: p.Variants, IntraOpThreads: threads,
				Scheduler: p.Scheduler, Evidence: ev, Tenant: sched.Tenant{Query: p.Query, Priority: sched.ParsePriority(p.Priority),
					Latency: time.Duration(p.LatencyMs * float64(time.Millisecond))}})
		}
		o.Lateral, o.Stream, o.Sink = r.Lateral, nh.Stream, nh.Sink
	}
}

// CPUShare is the intra-op threads of a worker that shares this machine with
// n-1 others: its worker type's vCPUs, but no more than an equal share of the
// cores here, and at least one. Without the cap, every embedded worker's
// sessions would spread over all the cores and the workers would fight.
func CPUShare(m infra.Machine, n int) int {
	share := max(1, runtime.NumCPU()/max(n, 1))
	if m.Type != nil && m.Type.VCPUs > 0 {
		share = min(share, m.Type.VCPUs)
	}
	return share
}

// HostShare is the processors left to this process (its NATS server,
// coordinator and sink) when worker processes on this machine hold
// workerCPUs of its cores between them (each its CPUShare): the rest of
// the cores, and at least one. Where the workers take every core, a
// process with more would run its goroutines on threads spread over the
// workers' cores, each hand-off between two of them a wake-up on a core a
// worker is running on (measured in bench nexmark --processes 2 on 2
// cores: with GOMAXPROCS 2, 10x the CPU migrations and 10-25% more CPU
// for this process than with 1; docs/benchmarks.md).
func HostShare(workerCPUs int) int {
	return max(1, runtime.NumCPU()-workerCPUs)
}

// Cluster is a running local deployment.
type Cluster struct {
	server      *natsserver.Server
	storeDir    string
	serverCfg   string // the in-process server's config file (StartServer)
	coCfg       coordinator.Config
	url         string
	auth        natsserver.Auth
	conns       []*nats.Conn
	Coordinator *coordinator.Coordinator
	Workers     []*worker.Worker
	procs       []*process
	client      *coordinator.Client
	ortLib      string
	modelLog    io.Writer
	infra       *infra.Infra
}

// WorkerName turns a machine name into a valid worker name (subject token).
func WorkerName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// startCore starts the server (unless external) and the coordinator.
func startCore(o *Options) (*Cluster, error) {
	if o.Infra == nil || len(o.Infra.Machines()) == 0 {
		return nil, ErrInfra
	}
	if o.Allocator == nil {
		o.Allocator = memory.DefaultAllocator
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = 500 * time.Millisecond
	}
	c := &Cluster{url: o.NATS, auth: o.Auth, ortLib: o.OrtLib, modelLog: o.ModelLog, infra: o.Infra}
	user, err := o.Auth.Identity(o.NATS)
	if err != nil {
		return nil, err
	}
	if c.url == "" {
		// JetStream too, so streams FROM JETSTREAM and sinks TO JETSTREAM
		// work against the one server the cluster runs.
		dir, err := os.MkdirTemp("", "tierflow-cluster-")
		if err != nil {
			return nil, err
		}
		srv, err := natsserver.Start(natsserver.Options{JetStream: true, StoreDir: dir, ConfigFile: o.ServerConfig})
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		c.server, c.url, c.storeDir, c.serverCfg = srv, srv.ClientURL(), dir, o.ServerConfig
	}
	nc, err := c.connect("tierflow-coordinator")
	if err != nil {
		c.Close()
		return nil, err
	}
	c.coCfg = coordinator.Config{Conn: nc, Infra: o.Infra, Catalog: o.Catalog, Heartbeat: o.Heartbeat, Metrics: o.Metrics, Log: o.Log,
		Exec: ExecHooks(nc, o.OrtLib, nil, 1), Placement: o.Placement, Policies: o.Policies,
		CheckModelArgs: ModelArgChecks(o.OrtLib), Namespace: o.Namespace, Limits: o.Limits}
	co, err := coordinator.Start(c.coCfg)
	if err != nil {
		c.Close()
		return nil, err
	}
	c.Coordinator = co
	cc, err := c.connect("tierflow-client")
	if err != nil {
		c.Close()
		return nil, err
	}
	c.client = coordinator.NewClient(cc)
	c.client.User = user
	c.client.Namespace = o.Namespace
	c.client.Allocator = o.Allocator
	return c, nil
}

// StartEmbedded starts a server, a coordinator and one in-process worker per
// machine of o.Infra, and returns once every worker has registered.
func StartEmbedded(ctx context.Context, o Options) (*Cluster, error) {
	return StartEmbeddedHooked(ctx, o, Hooks{})
}

// StartEmbeddedHooked is StartEmbedded with hooks h on the embedded
// workers (tests, drills and benchmarks).
func StartEmbeddedHooked(ctx context.Context, o Options, h Hooks) (*Cluster, error) {
	c, err := startCore(&o)
	if err != nil {
		return nil, err
	}
	inv := devices.Take()
	policy, err := sched.ByName(o.Sched)
	if err != nil {
		c.Close()
		return nil, err
	}
	if h.SchedPolicy != nil {
		policy = h.SchedPolicy
	}
	// The embedded workers share this process's processors: one fair
	// share of them among the queries, whichever worker runs a part.
	cpu := dataflow.NewCPU(0)
	for _, m := range o.Infra.Machines() {
		name := WorkerName(m.Name)
		nc, err := c.connect("tierflow-worker-" + name)
		if err != nil {
			c.Close()
			return nil, err
		}
		typ := ""
		if m.Type != nil {
			typ = m.Type.Name
		}
		threads := CPUShare(m, len(o.Infra.Machines()))
		w, err := worker.StartHooked(ctx, worker.Config{Conn: nc, Name: name, Tier: m.Tier, Location: m.Location, Type: typ,
			Inventory: &inv, Allocator: o.Allocator, Metrics: o.Metrics, Stdout: o.Stdout, Log: o.Log,
			Exec: ExecHooksWith(nc, o.OrtLib, o.ModelLog, threads, o.Evidence), ModelThreads: threads, Namespace: o.Namespace,
			Sched: policy, CPU: cpu}, h.of(name))
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("worker %s: %w", name, err)
		}
		c.Workers = append(c.Workers, w)
	}
	return c, nil
}

func (c *Cluster) connect(name string) (*nats.Conn, error) {
	opts, err := c.auth.Options(c.url)
	if err != nil {
		return nil, err
	}
	nc, err := natsserver.Connect(c.url, append(opts, nats.Name(name))...)
	if err != nil {
		return nil, err
	}
	c.conns = append(c.conns, nc)
	return nc, nil
}

// URL is the NATS server the cluster uses.
func (c *Cluster) URL() string { return c.url }

// Client is a client connected to the cluster's coordinator.
func (c *Cluster) Client() *coordinator.Client { return c.client }

// Run submits a script's query and writes its rows to out until it is done.
func (c *Cluster) Run(ctx context.Context, script deploy.Script, out sinks.Writer) (deploy.QueryInfo, error) {
	return c.client.Submit(ctx, script, "", out)
}

// WaitWorkers waits until n workers are registered with the coordinator.
func (c *Cluster) WaitWorkers(ctx context.Context, n int) error {
	for {
		if len(c.Coordinator.Workers()) >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d workers registered: %w", len(c.Coordinator.Workers()), n, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Close stops the workers (aborting what runs), the coordinator and the
// server.
func (c *Cluster) Close() error {
	var errs []error
	for _, w := range c.Workers {
		errs = append(errs, w.Close())
	}
	// The worker processes stop together: each gets its interrupt and up
	// to 5 s before it is killed, and one after another a cluster of n
	// could take n times that to close (under load a run stopped by SIGTERM
	// soon after a deploy once outlived TestRunProcessesLeaveNoChildren's
	// 15 s; serial stops were up to 10 s of it).
	stopped := make([]error, len(c.procs))
	var wg sync.WaitGroup
	for i, p := range c.procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stopped[i] = p.stop()
		}()
	}
	wg.Wait()
	errs = append(errs, stopped...)
	if c.Coordinator != nil {
		errs = append(errs, c.Coordinator.Close())
	}
	for _, nc := range c.conns {
		nc.Close()
	}
	if c.server != nil {
		c.server.Shutdown()
		os.RemoveAll(c.storeDir)
	}
	return errors.Join(errs...)
}

// ModelArgChecks is the coordinator's checker of model calls against their
// files (coordinator.Config.CheckModelArgs): a script's relative model paths
// are from its base directory.
func ModelArgChecks(ortLib string) func(baseDir string) bind.ModelArgChecker {
	return func(base string) bind.ModelArgChecker {
		return inference.New(inference.Config{OrtLib: ortLib, BaseDir: base, CheckOnly: true}).CheckModelArgs
	}
}

// DefaultInfra is the infrastructure embedded mode uses when none is given:
// one worker on each of an edge, a hub and a cloud tier, so that a plan's
// stages still run on different workers and their data crosses NATS.
func DefaultInfra() *infra.Infra {
	// The three tiers share this machine: moving bytes between them is free.
	in := &infra.Infra{WorkerTypes: []*infra.WorkerType{{Name: "local"}}, DefaultLink: &infra.DefaultLink{}}
	for _, t := range []string{"edge", "hub", "cloud"} {
		in.Tiers = append(in.Tiers, &infra.Tier{Name: t})
		in.Workers = append(in.Workers, &infra.Worker{Name: t + "-1", Type: "local", Tier: t})
	}
	return in
}
