package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"syscall"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/devices"
	"github.com/tierflow/tierflow/runtime/inference/sched"
	"github.com/tierflow/tierflow/runtime/onnx"
	"github.com/tierflow/tierflow/runtime/security"
	"github.com/tierflow/tierflow/runtime/worker"
)

func newWorkerCmd(a *app) *cobra.Command {
	var name, tier, location, typ, metricsAddr string
	var threads int
	var noCPUShare bool
	var schedName, evidence string
	var dataRoots []string
	var anyFile bool
	var namespace, maxMemory, maxModelMemory, cpuProfile, traceFile string
	c := &cobra.Command{
		Use:   "worker",
		Short: "Run a tierflow worker: register with the coordinator and run the operators it is given",
		Long: `worker connects to NATS (--nats URL), registers with the coordinator (name,
tier, location, worker type, CPUs, GPUs, memory), heartbeats, and runs the
operator instances of the queries deployed to it, exchanging batches with the
other workers over NATS. Ctrl-C (or SIGTERM) aborts what runs and leaves.
--metrics :PORT serves Prometheus metrics at /metrics.`,
		Example: `  tierflow worker --nats nats://127.0.0.1:4222 --tier edge --location l1 --type x4
  tierflow worker --nats nats://hub:4222 --tier hub --type gpu-1 --name hub-1 --metrics :9101`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if a.g.nats == "" {
				return badInput(errNeedNATS)
			}
			if tier == "" {
				return badInput(fmt.Errorf("--tier is required (edge, hub, cloud, ...)"))
			}
			if threads < 0 {
				return badInput(fmt.Errorf("--threads %d: want 0 (ONNX Runtime's default) or more", threads))
			}
			if err := checkNamespace(namespace); err != nil {
				return err
			}
			policy, err := sched.ByName(schedName)
			if err != nil {
				return badInput(fmt.Errorf("--sched: %w", err))
			}
			ev, err := loadEvidence(evidence)
			if err != nil {
				return badInput(err)
			}
			if name == "" && a.g.auth.Creds != "" {
				// Creds bound to one worker name are that worker.
				name = security.BoundWorker(a.g.auth.Creds)
			}
			if name == "" {
				host, _ := os.Hostname()
				name = cluster.WorkerName(fmt.Sprintf("%s-%d", host, os.Getpid()))
			}
			var roots *security.Roots
			if anyFile && len(dataRoots) > 0 {
				return badInput(fmt.Errorf("--any-file and --data-root: choose one"))
			}
			if !anyFile {
				if roots, err = a.dataRoots(dataRoots, ""); err != nil {
					return err
				}
			}
			guard, err := memoryGuard(a, maxMemory)
			if err != nil {
				return err
			}
			if err := boundModelMemory(guard, maxModelMemory); err != nil {
				return err
			}
			if cpuProfile != "" {
				stopProfile, err := startCPUProfile(cpuProfile)
				if err != nil {
					return badInput(err)
				}
				defer stopProfile()
			}
			if traceFile != "" {
				stopTrace, err := startTrace(traceFile)
				if err != nil {
					return badInput(err)
				}
				defer stopTrace()
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			log := slog.New(slog.NewTextHandler(a.err, nil))
			// A worker outlives its server (the connection reconnects for
			// as long as it takes): it says when the server goes and when
			// it is back, or it would wait in silence.
			nc, err := a.connectNATS(a.g.nats, "tierflow-worker-"+name,
				nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
					if err != nil {
						log.Warn("lost the NATS server: reconnecting", "err", err)
					}
				}),
				nats.ReconnectHandler(func(nc *nats.Conn) { log.Info("reconnected to the NATS server", "url", redact(nc.ConnectedUrl())) }))
			if err != nil {
				return err
			}
			defer nc.Close()
			reg, msrv, err := startMetrics(metricsAddr)
			if err != nil {
				return badInput(err)
			}
			murl := ""
			if msrv != nil {
				defer msrv.Close()
				murl = msrv.URL()
			}
			w, err := worker.Start(ctx, worker.Config{Conn: nc, Name: name, Tier: tier, Location: location, Type: typ,
				Metrics: reg, MetricsURL: murl, Stdout: a.out, Log: log,
				Exec: cluster.ExecHooksWith(nc, a.g.ortLib, a.err, threads, ev), ModelThreads: threads, DataRoots: roots, Namespace: namespace, Sched: policy,
				MemoryGuard: guard, NoCPUShare: noCPUShare, NoResults: a.g.auth.Creds != "" && !security.MayPublishResults(a.g.auth.Creds)})
			if err != nil {
				return err
			}
			fmt.Fprintf(a.out, "worker %s (%s) registered on %s\n", name, tier, redact(a.g.nats))
			if murl != "" {
				fmt.Fprintf(a.out, "metrics at %s\n", murl)
			}
			<-ctx.Done()
			return w.Close()
		},
	}
	f := c.Flags()
	f.StringVar(&name, "name", "", "worker name (default: the name --nats-creds is bound to, else host name and process id)")
	f.StringVar(&namespace, "namespace", "", "subject namespace of the coordinator to serve (default: the shared one)")
	f.StringVar(&tier, "tier", "", "tier this worker sits in (edge, hub, cloud, ...)")
	f.StringVar(&location, "location", "", "location within the tier")
	f.StringVar(&typ, "type", "", "worker type (as the catalog's profiles and the infrastructure name it)")
	f.BoolVar(&anyFile, "any-file", false, "serve any file the worker's user can read, also on a secured cluster: for a worker that runs only its own user's queries (tierflow run --processes starts its workers so)")
	f.StringArrayVar(&dataRoots, "data-root", nil, "serve the files of submitted queries (catalogs, models, file streams, tables, sinks) only under this directory (repeatable); without it any file the worker's user can read, and on a secured cluster (credentials or --nats-config) none")
	f.StringVar(&metricsAddr, "metrics", "", "serve Prometheus metrics on this address (e.g. :9101)")
	f.StringVar(&maxMemory, "max-memory", "", "what all the worker's queries may hold together, e.g. 12GiB: a query part is refused near it and the largest query fails past it (default: 80% of the machine's memory; 0: no guard)")
	f.StringVar(&maxModelMemory, "max-model-memory", "", "what ONNX Runtime may hold for all the worker's model sessions together, weights and the tensors between layers, e.g. 2GiB: a model batch past it is split, a model whose weights do not fit is refused (default: the machine's memory beyond the Go runtime's limit, 10% of it with the default --max-memory; 0: no bound)")
	f.IntVar(&threads, "threads", 0, "intra-op threads of each model session: this worker's share of the machine's CPUs (0: ONNX Runtime's default, all of them)")
	f.StringVar(&schedName, "sched", sched.NaiveName, "policy of the worker's inference scheduler, shared by its queries: naive (each batch runs as it comes), deepquery (REALTIME batches first, BEST_EFFORT ones sized to the gaps), or a SneakPeek scheduler choosing each batch's variant by utility: maxacc-edf, lo-edf, grouped or sneakpeek (data-aware with --evidence)")
	f.StringVar(&evidence, "evidence", "", "with --sched sneakpeek: the Fashion-MNIST example directory whose training sample's nearest neighbours estimate each row's class")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile (pprof) of the worker to this file until it leaves")
	// Hidden: a measurement's tool (docs/benchmarks.md, go tool trace):
	// the regions "tierflow build" and "tierflow instance" name each
	// query's part.
	f.StringVar(&traceFile, "trace", "", "write an execution trace (go tool trace) of the worker to this file until it leaves")
	_ = f.MarkHidden("trace")
	// The share's baseline for measurements (what the share is for): steps
	// run as they come. Hidden: no deployment wants it.
	f.BoolVar(&noCPUShare, "no-cpu-share", false, "run the queries' steps as they come, without sharing the worker's processors among its queries (a measurement's baseline)")
	_ = f.MarkHidden("no-cpu-share")
	// Accepted for symmetry with the coordinator; the coordinator decides.
	f.Duration("heartbeat", 0, "ignored: the coordinator sets the heartbeat interval")
	return c
}

// Shares of the machine's memory a worker keeps by default: its queries
// guard, and the Go runtime's soft limit (GOMEMLIMIT) above it, so the
// collector reclaims garbage before the kernel runs out, and a query fails
// before the collector has to run all the time.
const (
	guardShare   = 0.8
	gcLimitShare = 0.9
)

// memoryGuard is the worker's guard in bytes (--max-memory, else a share
// of the machine's memory), and sets the Go runtime's memory limit above
// it unless GOMEMLIMIT says otherwise.
func memoryGuard(a *app, flag string) (int64, error) {
	total := int64(devices.Take().MemoryTotal)
	guard := int64(guardShare * float64(total))
	if flag != "" {
		var err error
		if guard, err = parseBytes(flag); err != nil {
			return 0, badInput(fmt.Errorf("--max-memory: %w", err))
		}
	}
	if guard > 0 && os.Getenv("GOMEMLIMIT") == "" {
		limit := int64(gcLimitShare * float64(total))
		if limit < guard {
			limit = guard + guard/8
		}
		debug.SetMemoryLimit(limit)
	}
	return guard, nil
}

// boundModelMemory bounds ONNX Runtime's memory in this worker process
// (onnx.BoundMemory): --max-model-memory, else what the machine has beyond
// the Go runtime's limit. The guard and the collector's limit above it
// are the Go side's; ONNX Runtime's memory is outside both, so it gets the
// rest, and a worker with a query's model calls at their worst and its Go
// heap at its limit still fits the machine. No guard (--max-memory 0), no
// default bound.
func boundModelMemory(guard int64, flag string) error {
	var bound int64
	switch {
	case flag != "":
		var err error
		if bound, err = parseBytes(flag); err != nil || bound < 0 {
			return badInput(fmt.Errorf("--max-model-memory %q: want a size, 0 for no bound", flag))
		}
	case guard > 0:
		total, limit := int64(devices.Take().MemoryTotal), debug.SetMemoryLimit(-1)
		if bound = total - limit; bound <= 0 {
			return badInput(fmt.Errorf("--max-model-memory: the Go runtime's limit (%s) leaves none of the machine's %s to ONNX Runtime: set it, or lower --max-memory or GOMEMLIMIT",
				dataflow.Bytes(limit), dataflow.Bytes(total)))
		}
	}
	return onnx.BoundMemory(bound)
}

// checkNamespace refuses a --namespace that is not one subject token.
func checkNamespace(ns string) error {
	if ns == "" {
		return nil
	}
	if err := deploy.ValidName("namespace", ns); err != nil {
		return badInput(err)
	}
	return nil
}

// startTrace writes this process's execution trace into file until the
// returned function is called.
func startTrace(file string) (func(), error) {
	return startRecording("--trace", file, trace.Start, trace.Stop)
}

// startCPUProfile profiles this process into file until the returned
// function is called.
func startCPUProfile(file string) (func(), error) {
	return startRecording("--cpuprofile", file, pprof.StartCPUProfile, pprof.StopCPUProfile)
}

// startRecording runs start on file (created) until the returned function
// stops it and closes the file; errors name flag.
func startRecording(flag, file string, start func(io.Writer) error, stop func()) (func(), error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	if err := start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return func() {
		stop()
		f.Close()
	}, nil
}
