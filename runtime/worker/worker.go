// Package worker is a tierflow worker: it registers with the coordinator
// (name, tier, location, worker type, CPUs, GPUs, memory), heartbeats,
// receives its part of each query (the script and the placement), builds the
// local dataflow with operators/exec, connects it to the other workers through
// the NATS relay, runs it, reports per-operator statistics (end-to-end latency
// at its sinks included), relay meters and its round trip to the NATS server,
// and stops cleanly. The protocol is documented in runtime/deploy.
//
// worker imports dataflow, operators/exec, relay and runtime/{connectors,
// deploy, devices, metrics}; never runtime/coordinator, runtime/cluster or cmd.
package worker

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/relay/natsrelay"
	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/connectors"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/devices"
	"github.com/tierflow/tierflow/runtime/inference/sched"
	"github.com/tierflow/tierflow/runtime/metrics"
	"github.com/tierflow/tierflow/runtime/security"
)

// ErrRegister: no coordinator accepted the worker.
var ErrRegister = errors.New("worker: registration failed")

// Config describes a worker.
type Config struct {
	// Conn is the worker's own NATS connection: control and data.
	Conn                       *nats.Conn
	Name, Tier, Location, Type string
	// Inventory is what the worker reports; nil takes the machine's
	// (devices.Take).
	Inventory *devices.Inventory
	Allocator memory.Allocator
	// Metrics, when set, exports every query's counters.
	Metrics    *metrics.Registry
	MetricsURL string
	// RegisterTimeout bounds the wait for a coordinator (default 10s).
	RegisterTimeout time.Duration
	// Stdout receives STDOUT sinks (default io.Discard: results go to the
	// client).
	Stdout io.Writer
	// Exec, when set, completes the executor options of every part the
	// worker builds: the model runtime (Lateral) and the NATS connectors
	// (Stream, Sink), which live in runtime packages operators cannot import.
	// The part says which query, with the model variants its plan chose,
	// its priority, and the worker's inference scheduler.
	Exec func(o *exec.Options, part deploy.ExecPart)
	// ModelThreads is the intra-op threads Exec's model sessions run with
	// (0: ONNX Runtime's default, every core); the worker reports it.
	ModelThreads int
	// Sched is the policy of the worker's inference scheduler, which every
	// query on the worker shares (nil: sched.Naive, each batch runs as it
	// comes, as without a scheduler).
	Sched sched.Policy
	Log   *slog.Logger
	// DataRoots, when set, confine the files a deployed query may use
	// (its catalog, models, file streams, tables and sinks) to these
	// directories (--data-root). nil: no confinement.
	DataRoots *security.Roots
	// Namespace is the deployment's subject namespace (deploy.InNamespace;
	// "" the default): the worker serves only its coordinator's.
	Namespace string
	// MemoryGuard bounds what all the worker's queries hold together, in
	// bytes (0: no bound): every query's budget is its child, a query
	// part is refused while the guard is nearly full, and when the
	// process's live heap passes it the query holding the most fails
	// (`tierflow worker --max-memory`, by default below the machine's
	// memory). Guard, when set, is a guard shared with other workers of
	// the process (an embedded cluster) and wins.
	MemoryGuard int64
	Guard       *dataflow.Memory
	// CPU, when set, shares the worker's processors among its queries
	// (dataflow.CPU: a query with many busy operators gets its share, not
	// the machine); it may be shared with other workers of the process
	// (an embedded cluster, whose workers share one runtime). Nil: the
	// worker's own, by slices of dataflow.DefaultCPUSlice.
	CPU *dataflow.CPU
	// NoCPUShare runs steps as they come, without CPU (the measurements'
	// baseline of what the share is for).
	NoCPUShare bool
	// NoResults says the worker's own NATS user may not publish a query's
	// results (nats-setup's worker creds, security.MayPublishResults): a
	// part holding a sink needs a data user minted by the coordinator, and
	// is refused with the reason without one (instead of its rows being
	// dropped by the server).
	NoResults bool
}

// Worker is a running worker.
type Worker struct {
	cfg       Config
	hooks     Hooks
	info      deploy.WorkerInfo
	heartbeat time.Duration
	subs      []*nats.Subscription

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	queries map[string]*query
	// building are the parts being built (not yet in queries), by query:
	// a stop ends a build there, and a newer generation's waits for it.
	building map[string]*building
	// buildTurns are each owner's turn to build (buildTurn).
	buildTurns map[string]chan struct{}
	// sched is the one inference scheduler of the worker.
	sched *sched.Scheduler
	// dataKey is the worker's data key (WorkerInfo.DataKey): the seed of
	// every query part's data user, which never leaves the process.
	dataKey nkeys.KeyPair
	// guard is the budget every query's is a child of (limits.go).
	memGuard *dataflow.Memory
	// cpu is what every query's CPU share is of.
	cpu *dataflow.CPU
	// relays are the query owners' relay connections (partconn.go).
	relays *relayConns
}

// query is one query's part on this worker.
type query struct {
	id       string
	eq       *exec.Query
	dw       *dataflow.Worker
	dt       *relay.DataflowTransport
	tr       *natsrelay.Transport
	res      *results
	sinkHere bool
	sinks    []*lazySink // catalog sinks (INSERT INTO NATS)
	stop     chan struct{}
	stopOnce sync.Once
	graceful atomic.Bool // a graceful stop was asked for
	cancel   context.CancelFunc
	started  bool
	stopped  bool
	done     chan struct{}
	// gen is the deployment generation (deploy.DeployRequest);
	// sinkInstances counts the sink instances on this worker.
	gen           int
	sinkInstances int
	// mem is the query's memory budget on this worker; limitErr is why
	// the query was stopped for passing a limit (limits.go).
	mem      *dataflow.Memory
	limitErr atomic.Pointer[error]
	// cpu is the query's share of the worker's processors, left once
	// (leaveCPU) when the part ends.
	cpu     *dataflow.CPUShare
	cpuLeft sync.Once
	// req is the deployment as the coordinator sent it: a restarted
	// coordinator learns the query back from it (relearn.go).
	req deploy.DeployRequest
	// final is the part's last status, once it ended: the answer to a stop
	// that asks for one (onStop).
	final atomic.Pointer[deploy.Status]
	// slo is the query's LATENCY bound (0: none).
	slo time.Duration
	// data is the part's own connection for its streams and sinks (nil:
	// the worker's, on a cluster without an authority).
	data *dataConn
	// link is the connection for the part's relay links (and its results
	// without a data user): its owner's (relayConns); releaseLink hands it
	// back.
	link        *nats.Conn
	releaseLink func()
}

// closeLink releases the part's relay connection once its transport
// closed.
func (q *query) closeLink() {
	if q.releaseLink != nil {
		q.releaseLink()
	}
}

// linkProbe is how often a LATENCY query's part looks at its links' acks
// between status reports; linkDrop is the share of the reported bandwidth
// below which a link's estimate is reported at once.
const (
	linkProbe = 100 * time.Millisecond
	linkDrop  = 0.8
)

// ackBandwidths are the sending links' ack bandwidths as the SLO policy
// takes them: the mean over the last second, or the latest two acks'
// samples when lower (dataflow.LinkBandwidth.PlanBps).
func ackBandwidths(links []relay.LinkStats) map[relay.LinkID]float64 {
	out := map[relay.LinkID]float64{}
	for _, l := range links {
		if bw := decisionBps(l); l.Direction == relay.Send && bw > 0 {
			out[l.Link] = bw
		}
	}
	return out
}

func decisionBps(l relay.LinkStats) float64 { return l.Bandwidth().PlanBps() }

// linkDropped reports whether a sending link's ack bandwidth fell below
// linkDrop of what the last status report said.
func linkDropped(links []relay.LinkStats, reported map[relay.LinkID]float64) bool {
	for _, l := range links {
		if was, bw := reported[l.Link], decisionBps(l); l.Direction == relay.Send && was > 0 && bw > 0 && bw < linkDrop*was {
			return true
		}
	}
	return false
}

// Start registers the worker and starts serving deployments.
func Start(ctx context.Context, cfg Config) (*Worker, error) {
	return StartHooked(ctx, cfg, Hooks{})
}

// StartHooked is Start with hooks h (tests, drills and benchmarks).
func StartHooked(ctx context.Context, cfg Config, h Hooks) (*Worker, error) {
	if cfg.Conn == nil {
		return nil, fmt.Errorf("%w: no NATS connection", ErrRegister)
	}
	if err := deploy.ValidName("worker", cfg.Name); err != nil {
		return nil, err
	}
	if cfg.Tier == "" {
		return nil, fmt.Errorf("%w: worker %s has no tier", ErrRegister, cfg.Name)
	}
	// Each part's script is parsed here: the parser is built while the
	// worker registers, not at its first deploy.
	go lang.Prepare()
	if cfg.Allocator == nil {
		cfg.Allocator = memory.DefaultAllocator
	}
	if cfg.RegisterTimeout <= 0 {
		cfg.RegisterTimeout = 10 * time.Second
	}
	if cfg.Stdout == nil {
		cfg.Stdout = io.Discard
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	inv := cfg.Inventory
	modelThreads := 0 // ONNX Runtime's default: every core of the machine
	if inv == nil {
		i := devices.Take()
		modelThreads = i.CPUs
		// The worker's processors are the ones Go runs its steps on
		// (GOMAXPROCS: a cgroup's CPU limit, or what the operator set,
		// without the one its CPU share keeps for the control plane),
		// not the machine's: the coordinator admits and places by them.
		i.CPUs = min(i.CPUs, dataflow.StepProcessors())
		inv = &i
	}
	info := deploy.WorkerInfo{Name: cfg.Name, Tier: cfg.Tier, Location: cfg.Location, Type: cfg.Type,
		CPUs: inv.CPUs, MemoryBytes: inv.MemoryTotal, Metrics: cfg.MetricsURL, ModelThreads: cfg.ModelThreads}
	if info.ModelThreads <= 0 {
		info.ModelThreads = cmp.Or(modelThreads, inv.CPUs) // ONNX Runtime's default: every core
	}
	sc := sched.New(cfg.Sched)
	info.Sched = sc.Policy().Name()
	for _, g := range inv.GPUs {
		info.GPUs = append(info.GPUs, fmt.Sprint(g.Name))
	}
	dataKey, err := nkeys.CreateUser()
	if err != nil {
		return nil, fmt.Errorf("%w: data key: %w", ErrRegister, err)
	}
	if info.DataKey, err = dataKey.PublicKey(); err != nil {
		return nil, fmt.Errorf("%w: data key: %w", ErrRegister, err)
	}
	wctx, cancel := context.WithCancel(context.Background())
	guard := cfg.Guard
	if guard == nil {
		guard = dataflow.NewMemory("worker "+cfg.Name+"'s memory guard", cfg.MemoryGuard, nil)
	}
	cpu := cfg.CPU
	if cpu == nil && !cfg.NoCPUShare {
		cpu = dataflow.NewCPU(0)
	}
	w := &Worker{cfg: cfg, hooks: h, info: info, ctx: wctx, cancel: cancel, queries: map[string]*query{}, building: map[string]*building{}, buildTurns: map[string]chan struct{}{}, sched: sc, dataKey: dataKey, memGuard: guard, cpu: cpu,
		relays: newRelayConns(cfg.Conn, cfg.Name, relayConnIdle)}
	nc := cfg.Conn
	for subj, h := range map[string]nats.MsgHandler{
		deploy.DeploySubject(w.cfg.Namespace, "*", cfg.Name): w.onDeployConcurrently,
		deploy.QuerySubject(w.cfg.Namespace, "*", "start"):   w.onStart,
		deploy.QuerySubject(w.cfg.Namespace, "*", "stop"):    w.onStop,
	} {
		sub, err := nc.Subscribe(subj, w.guard(subj, h))
		if err != nil {
			w.Close()
			return nil, err
		}
		w.subs = append(w.subs, sub)
	}
	if err := nc.Flush(); err != nil {
		w.Close()
		return nil, err
	}
	if err := w.register(ctx); err != nil {
		w.Close()
		return nil, err
	}
	w.wg.Add(1)
	go w.heartbeats()
	if guard.Limit() > 0 {
		w.wg.Add(1)
		go w.watchHeap()
	}
	return w, nil
}

// register asks the coordinator to accept the worker, retrying until
// RegisterTimeout so that workers may start before the coordinator.
func (w *Worker) register(ctx context.Context) error {
	body, _ := json.Marshal(w.info)
	deadline := time.Now().Add(w.cfg.RegisterTimeout)
	var last error
	for time.Now().Before(deadline) {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		msg, err := w.cfg.Conn.RequestWithContext(rctx, deploy.InNamespace(w.cfg.Namespace, deploy.RegisterSubject(w.cfg.Name)), body)
		cancel()
		if err == nil {
			var rep deploy.RegisterReply
			if err := json.Unmarshal(msg.Data, &rep); err != nil {
				return fmt.Errorf("%w: %v", ErrRegister, err)
			}
			switch {
			case rep.Alive:
				// A name still alive (this worker's previous process, until
				// it expires): try again while time remains.
				last = errors.New(rep.Error)
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(250 * time.Millisecond):
				}
				continue
			case rep.Error != "":
				return fmt.Errorf("%w: %s", ErrRegister, rep.Error)
			}
			w.heartbeat = time.Duration(rep.HeartbeatMs) * time.Millisecond
			if w.heartbeat <= 0 {
				w.heartbeat = time.Second
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		last = err
		if !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nats.ErrTimeout) {
			return fmt.Errorf("%w: %v", ErrRegister, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("%w: no coordinator answered on %s within %s (%v)", ErrRegister, deploy.InNamespace(w.cfg.Namespace, deploy.RegisterSubject(w.cfg.Name)), w.cfg.RegisterTimeout, last)
}

// heartbeats tells the coordinator the worker lives; a coordinator that does
// not know the worker (restarted, or it expired the worker) is registered
// with again.
func (w *Worker) heartbeats() {
	defer w.wg.Done()
	t := time.NewTicker(w.heartbeat)
	defer t.Stop()
	var describe []string // asked about by a restarted coordinator
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-t.C:
		}
		body, _ := json.Marshal(deploy.Heartbeat{Name: w.cfg.Name, Queries: w.Running(), Parts: w.parts(describe), Memory: w.memoryReport()})
		describe = nil
		ctx, cancel := context.WithTimeout(w.ctx, w.heartbeat)
		msg, err := w.cfg.Conn.RequestWithContext(ctx, deploy.InNamespace(w.cfg.Namespace, deploy.HeartbeatSubject(w.cfg.Name)), body)
		cancel()
		if err != nil {
			continue
		}
		var ack deploy.Ack
		if json.Unmarshal(msg.Data, &ack) == nil && ack.Error != "" {
			if err := w.register(w.ctx); err != nil {
				w.cfg.Log.Warn("re-register failed", "err", err)
			}
		} else {
			describe = ack.Describe
		}
	}
}

// Name is the worker's name.
func (w *Worker) Name() string { return w.cfg.Name }

// Scheduler is the worker's inference scheduler.
func (w *Worker) Scheduler() *sched.Scheduler { return w.sched }

// Info is what the worker registered with.
func (w *Worker) Info() deploy.WorkerInfo { return w.info }

// Running lists the queries the worker has parts of.
func (w *Worker) Running() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for id := range w.queries {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

func reply(m *nats.Msg, v any) {
	if m.Reply == "" {
		return
	}
	b, _ := json.Marshal(v)
	_ = m.Respond(b)
}

// guard runs a control handler so that a panic in it (building a query's
// part runs planner and operator code) is logged, answered as an error when
// the message wants a reply, and leaves the worker serving.
func (w *Worker) guard(subj string, h nats.MsgHandler) nats.MsgHandler {
	return func(m *nats.Msg) {
		defer func() {
			if p := recover(); p != nil {
				err := dataflow.Recovered("worker "+w.cfg.Name+" on "+m.Subject, p)
				w.cfg.Log.Error("handler panicked", "subject", subj, "err", err, "stack", string(dataflow.PanicStack(err)))
				reply(m, deploy.Ack{Error: dataflow.BoundText(err.Error(), dataflow.MaxErrorText)})
			}
		}()
		h(m)
	}
}

// onDeployConcurrently builds each part on a goroutine of its own: a
// subscription's messages come one at a time, and one user's part whose
// build runs long (an uncorrelated subquery over a cross join, bounded by
// its run time only) held every other user's deployment on the worker
// behind it.
func (w *Worker) onDeployConcurrently(m *nats.Msg) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		w.guard(m.Subject, w.onDeploy)(m)
	}()
}

// building is a part being built: cancel ends its build (a stop, or a
// newer generation's), done is closed when the build has returned.
type building struct {
	gen    int
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// buildTurn waits for owner's turn to build on the worker (until ctx
// ends) and returns what gives it back.
func (w *Worker) buildTurn(ctx context.Context, owner string) (func(), error) {
	w.mu.Lock()
	turn := w.buildTurns[owner]
	if turn == nil {
		turn = make(chan struct{}, 1)
		w.buildTurns[owner] = turn
	}
	w.mu.Unlock()
	select {
	case turn <- struct{}{}:
		return func() { <-turn }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// errStoppedBuilding is why a build a stop ended failed.
var errStoppedBuilding = errors.New("stopped while it was built")

func (w *Worker) onDeploy(m *nats.Msg) {
	defer trace.StartRegion(context.Background(), "tierflow build").End()
	var req deploy.DeployRequest
	if err := json.Unmarshal(m.Data, &req); err != nil {
		reply(m, deploy.Ack{Error: dataflow.BoundText("bad deploy request: "+err.Error(), dataflow.MaxErrorText)})
		return
	}
	trace.Log(context.Background(), "query", req.Query)
	var ack deploy.Ack
	if err := w.build(req, &ack); err != nil {
		reply(m, deploy.Ack{Error: dataflow.BoundText(err.Error(), dataflow.MaxErrorText), ErrorKind: deploy.KindOf(err)})
		return
	}
	reply(m, ack)
}

// build makes the worker's part of a query, ready to start, and puts in
// ack how long it waited for an older generation and built.
func (w *Worker) build(req deploy.DeployRequest, ack *deploy.Ack) error {
	began := time.Now()
	orig := req // before the limits and the confinement edit its script
	idx := req.Placement.WorkerIndex(w.cfg.Name)
	if idx < 0 {
		return fmt.Errorf("worker %s has no part in query %s", w.cfg.Name, req.Query)
	}
	bctx, cancelBuild := context.WithCancelCause(w.ctx)
	defer cancelBuild(nil)
	me := &building{gen: req.Generation, cancel: cancelBuild, done: make(chan struct{})}
	defer close(me.done)
	w.mu.Lock()
	old, prev := w.queries[req.Query], w.building[req.Query]
	if prev != nil && prev.gen >= req.Generation {
		w.mu.Unlock()
		return fmt.Errorf("worker %s already builds query %s", w.cfg.Name, req.Query)
	}
	w.building[req.Query] = me
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		if w.building[req.Query] == me {
			delete(w.building, req.Query)
		}
		w.mu.Unlock()
	}()
	if prev != nil {
		// An older generation still building: it goes first, at once.
		prev.cancel(errStoppedBuilding)
		select {
		case <-prev.done:
		case <-time.After(10 * time.Second):
			return fmt.Errorf("worker %s: generation %d of query %s did not stop building", w.cfg.Name, prev.gen, req.Query)
		}
	}
	// One build at a time per owner: a user's builds wait for each
	// other, never for another user's, so parts building side by side
	// give no user more of the worker than one build's.
	release, err := w.buildTurn(bctx, req.Owner)
	if err != nil {
		return fmt.Errorf("query %s: %w", req.Query, context.Cause(bctx))
	}
	defer release()
	if old != nil {
		if old.gen >= req.Generation {
			return fmt.Errorf("worker %s already runs query %s", w.cfg.Name, req.Query)
		}
		// A re-deployment (a worker was lost): the older generation's part
		// goes first, at once; the new one replays what it had not
		// committed.
		w.stopQuery(req.Query, true)
		select {
		case <-old.done:
		case <-time.After(10 * time.Second):
			return fmt.Errorf("worker %s: generation %d of query %s did not stop", w.cfg.Name, old.gen, req.Query)
		}
	}
	built := time.Now()
	ack.StopWaitMs = ms(built.Sub(began))
	defer func() { ack.BuildMs = ms(time.Since(built)) }()
	if err := w.admit(req.Query); err != nil {
		return err
	}
	// The part joins the worker's CPU share as it starts to build: from
	// now the queries already running step on no more than their share of
	// the processors (dataflow.CPU), so the build's round trips (its relay
	// connection's handshake and flushes) do not queue behind them.
	var share *dataflow.CPUShare
	if w.cpu != nil {
		share = w.cpu.Join(req.Query)
		defer func() {
			if share != nil { // not handed to the part (q.leaveCPU)
				share.Leave()
			}
		}()
	}
	qmem := dataflow.NewMemory(fmt.Sprintf("query %s on worker %s", req.Query, w.cfg.Name), req.Limits.MemoryBytes, w.memGuard)
	mem := qmem.Allocator(w.cfg.Allocator)
	window := applyLimits(req.Limits, &req.Script)
	sinkInstances, sinkWorkers, nSinks := 0, map[int]bool{}, 0
	for _, op := range req.Placement.Operators {
		if op.Name == "sink" {
			nSinks += len(op.Workers)
			for _, wi := range op.Workers {
				sinkWorkers[wi] = true
				if wi == idx {
					sinkInstances++
				}
			}
		}
	}
	res := &results{conn: func() (*nats.Conn, error) { return w.cfg.Conn, nil }, subject: req.Results, mem: mem,
		worker: w.cfg.Name, gen: req.Generation, sinks: nSinks, sinkWorkers: len(sinkWorkers)}
	if res.subject == "" {
		res.subject = deploy.InNamespace(w.cfg.Namespace, deploy.UserSubject(natsserver.Anonymous, req.Query, "results"))
	}
	// The query's GROUP BYs and joins of tables spill past half its
	// memory, as the coordinator compiled them (deploy.Limits.SpillBytes).
	eo := exec.Options{Allocator: mem, Output: res, Stdout: w.cfg.Stdout, MemoryLimit: req.Limits.SpillBytes()}
	if w.cfg.Exec != nil {
		w.cfg.Exec(&eo, deploy.ExecPart{Query: req.Query, Variants: req.Script.Variants, Priority: req.Script.Priority,
			LatencyMs: req.Script.LatencyMs, Scheduler: w.sched})
	}
	if err := w.confine(req.Owner, &req.Script, &eo); err != nil {
		return err
	}
	// Streams FROM NATS and sinks TO NATS: the instances of one query's scan
	// share a queue group, so scans on several workers split a core NATS
	// subject instead of each reading every message; a sink marks the end
	// of its subject so a downstream reader of it ends too.
	policy := sources.Fail
	if req.Script.OnError != "" {
		var err error
		if policy, err = sources.ParseOnError(req.Script.OnError); err != nil {
			return err
		}
	}
	// The part's streams and sinks act with its owner's authority: every
	// subject is checked here, whatever the coordinator checked, and
	// nothing under the engine's own namespaces is ever a source or sink.
	access := req.Access
	check := func(subject string, publish bool) error {
		if err := security.CheckSubject(access, subject, publish); err != nil {
			return fmt.Errorf("%w: %w", deploy.ErrInput, err)
		}
		return nil
	}
	// With a data user minted for the part, its streams and sinks connect
	// as that user: the server then refuses what a missed check would not.
	conn := func() (*nats.Conn, error) { return w.cfg.Conn, nil }
	var data *dataConn
	if req.Access.JWT != "" {
		data = newDataConn(w.cfg.Conn, req.Access.JWT, w.dataKey, req.Query, w.cfg.Name)
		conn = data.conn
		// The results too: on a secure cluster only the data user of the
		// part holding the sink may publish the owner's results subject.
		res.conn = data.conn
	} else if sinkInstances > 0 && w.cfg.NoResults {
		return fmt.Errorf("%w: worker %s's NATS credentials may not publish a query's results (on a nats-setup cluster only the data user the coordinator mints for each query part may): start the coordinator with --authority authority.json", deploy.ErrInput, w.cfg.Name)
	}
	// The part's relay links, and its results when no data user carries
	// them, go on its owner's relay connection (relayConns says why).
	link, releaseLink, err := w.relays.acquire(relayOwner(req.Owner))
	if err != nil {
		return err
	}
	if data == nil {
		res.conn = func() (*nats.Conn, error) { return link, nil }
	}
	kept := false
	defer func() {
		if !kept {
			data.close()
			releaseLink()
			qmem.Close()
		}
	}()
	nh := connectors.Hooks{Conn: conn, Check: check,
		Sources: connectors.SourceConfig{Queue: "tierflow-" + req.Query, MaxRows: req.Script.BatchSize, MaxDelay: req.Script.SourceMaxDelay, OnError: policy, Streams: req.Access.Streams},
		Sinks:   connectors.SinkConfig{End: true, IDPrefix: req.Query, Streams: req.Access.Streams}}
	if data != nil {
		// The data user may use only the consumers it was minted for,
		// named after the part: the sources name theirs so.
		var made atomic.Int32
		nh.Sources.ConsumerName = func() string {
			return security.ConsumerName(req.Query, w.cfg.Name, req.Generation, int(made.Add(1)-1))
		}
	}
	// operators/exec closes a catalog sink only in its own Run, which a
	// worker does not call: the sink is opened lazily (only the worker that
	// runs it writes) and closed when the part ends on the worker that holds
	// the sink, which publishes its end marker.
	var opened []*lazySink
	eo.Stream = nh.Stream
	eo.Sink = func(s *catalog.Sink, schema *arrow.Schema) (sinks.Writer, error) {
		if isNATSKind(s.Kind) {
			// Refused when the part builds, not at its first row.
			if err := check(s.Target, true); err != nil {
				return nil, fmt.Errorf("sink %s: %w", s.Name, err)
			}
		}
		l := &lazySink{open: func() (sinks.Writer, error) { return nh.Sink(s, schema) }, id: len(opened) + 1, res: res}
		if req.Generation > 0 {
			l.below = dataflow.Epoch(req.Script.ResumeEpoch)
		}
		opened = append(opened, l)
		return l, nil
	}
	// The build answers the query's uncorrelated subqueries: their state
	// and what they answer are the query's memory, and the query's run
	// time bounds them (a stop cannot reach a part still building).
	eo.Memory = qmem
	ectx, cancelRun := bctx, context.CancelFunc(func() {})
	if req.Limits.RunTime > 0 {
		ectx, cancelRun = context.WithTimeoutCause(bctx, req.Limits.RunTime,
			fmt.Errorf("%w: query %s ran past its run time limit of %s while it was built", deploy.ErrLimit, req.Query, req.Limits.RunTime))
	}
	eo.Context = ectx
	eq, plan, err := req.Script.Build(nil, eo)
	cancelRun()
	if err != nil {
		if cause := context.Cause(ectx); cause != nil && errors.Is(err, ectx.Err()) {
			err = fmt.Errorf("%w: %w", cause, err)
		}
		return limitErrorOf(err)
	}
	// LATENCY <= x is measured: the sinks here count the rows over it.
	slo := time.Duration(plan.Objectives.LatencyMs * float64(time.Millisecond))
	g := eq.Graph()
	if err := req.Placement.Apply(g); err != nil {
		return err
	}
	if req.Generation > 0 {
		// Each generation's relay subjects are its own: nothing an aborted
		// generation still had in flight reaches the new one.
		g.Query = req.Query + "-g" + strconv.Itoa(req.Generation)
	}
	sinkHere := false
	for _, op := range req.Placement.Operators {
		if op.Name == "sink" && slices.Contains(op.Workers, idx) {
			sinkHere = true
		}
	}
	if w.cfg.Metrics != nil {
		w.cfg.Metrics.Instrument(g, w.cfg.Name)
	}
	p := req.Placement
	// Each relay subject carries the names of the worker that publishes
	// on it and the one that reads it: a worker's creds then publish only
	// its own links' frames and read only those sent to it
	// (security.Worker), whatever query they belong to.
	ends := func(l relay.LinkID) (string, string) {
		return p.LinkEnds(int(l.Edge), int(l.Sender), int(l.Receiver))
	}
	ro := natsrelay.Options{Config: relay.Config{Allocator: mem, Window: window}, Prefix: deploy.InNamespace(w.cfg.Namespace, "tierflow.relay"), Ends: ends}
	// receiverWorker names the worker at a link's receiving end when it is
	// another worker ("" for a local link or one the placement cannot name).
	receiverWorker := func(l relay.LinkID) string {
		if _, to := ends(l); to != w.cfg.Name {
			return to
		}
		return ""
	}
	if w.hooks.Shape != nil {
		ro.Shape = func(l relay.LinkID) float64 {
			if to := receiverWorker(l); to != "" {
				return w.hooks.Shape(to)
			}
			return 0
		}
	}
	if w.hooks.Shaper != nil {
		ro.Shaper = func(l relay.LinkID) relay.Shaper {
			if to := receiverWorker(l); to != "" {
				return w.hooks.Shaper(to)
			}
			return nil
		}
	}
	tr := natsrelay.New(link, ro)
	dt := relay.NewDataflowTransport(tr)
	q := &query{link: link, releaseLink: releaseLink, id: req.Query, gen: req.Generation, sinkInstances: sinkInstances, eq: eq, dt: dt, tr: tr, res: res, sinkHere: sinkHere, sinks: opened, stop: make(chan struct{}), done: make(chan struct{}),
		mem: qmem, req: orig, slo: slo}
	// An operator that has all it needs (a full final LIMIT) stops the
	// whole query: the coordinator tells every worker, gracefully.
	requestStop := func() {
		b, _ := json.Marshal(deploy.Enough{Query: req.Query, Worker: w.cfg.Name})
		_ = w.cfg.Conn.Publish(deploy.QuerySubject(w.cfg.Namespace, req.Query, "enough."+w.cfg.Name), b)
	}
	// Every callback is timed: the coordinator's live estimates (busy
	// share, model time per batch) are made of it. Against a batch's trip
	// over NATS its two monotonic clock reads are noise.
	// A sink here writing the query's rows tells the scheduler that its
	// real-time batch is out (a DeepQuery worker holds best-effort work
	// until then).
	var onLatency func(time.Duration, int64)
	if f, sc := w.hooks.OnLatency, w.sched; f != nil || sc != nil {
		onLatency = func(d time.Duration, rows int64) {
			if sc != nil {
				sc.Delivered(req.Query)
			}
			if f != nil {
				f(req.Query, d, rows)
			}
		}
	}
	var onResult func(time.Duration, arrow.Record)
	if f := w.hooks.OnResult; f != nil {
		onResult = func(d time.Duration, rec arrow.Record) { f(req.Query, d, rec) }
	}
	q.cpu, share = share, nil
	dw, err := dataflow.NewWorker(g, idx, dataflow.Config{Allocator: mem, Memory: qmem, Transport: dt, Stop: q.stop, RequestStop: requestStop,
		Timing: true, Latency: true, LatencySLO: slo, OnLatency: onLatency, OnResult: onResult, CPU: q.cpu})
	if err != nil {
		q.leaveCPU()
		_ = dt.Close()
		_ = tr.Close()
		return err
	}
	q.dw = dw
	q.data, kept = data, true
	w.mu.Lock()
	w.queries[req.Query] = q
	w.mu.Unlock()
	w.cfg.Log.Info("deployed", "query", req.Query, "index", idx)
	return nil
}

// isNATSKind: a stream's source or a sink's kind that is a NATS subject.
func isNATSKind(kind string) bool {
	return strings.EqualFold(kind, connectors.NATS) || strings.EqualFold(kind, connectors.JetStream)
}

func (w *Worker) onStart(m *nats.Msg) {
	id := deploy.QueryOf(w.cfg.Namespace, m.Subject)
	w.mu.Lock()
	q := w.queries[id]
	if q == nil || q.started || q.stopped {
		w.mu.Unlock()
		return
	}
	q.started = true
	ctx, cancel := context.WithCancel(w.ctx)
	q.cancel = cancel
	w.mu.Unlock()
	w.wg.Add(1)
	go w.run(ctx, q)
}

func (w *Worker) onStop(m *nats.Msg) {
	var req deploy.StopRequest
	_ = json.Unmarshal(m.Data, &req)
	id := deploy.QueryOf(w.cfg.Namespace, m.Subject)
	if req.OnlyGeneration {
		w.mu.Lock()
		q := w.queries[id]
		w.mu.Unlock()
		if q == nil || q.gen != req.Generation {
			if m.Reply != "" {
				// Nothing of that generation runs here (any more): say so,
				// so the coordinator need not wait.
				reply(m, deploy.Status{Query: id, Worker: w.cfg.Name, Generation: req.Generation})
			}
			return
		}
		if m.Reply != "" && req.Abort {
			// A re-plan's cut-over: answer once the part has stopped, with
			// how far its sinks committed, so the next generation resumes
			// there and not at the older epoch of the last status report.
			w.stopQuery(id, true)
			go func() {
				select {
				case <-q.done:
				case <-time.After(stopReplyWait):
					return // the coordinator resumes from what it knows
				}
				st := deploy.Status{Query: id, Worker: w.cfg.Name, Generation: q.gen, State: deploy.StateStopped}
				if f := q.final.Load(); f != nil {
					st = *f
				}
				reply(m, st)
			}()
			return
		}
	}
	w.stopQuery(id, req.Abort)
}

// stopReplyWait bounds how long a stop that asks for an answer waits for
// the part to stop (a build waits as long for an older generation).
const stopReplyWait = 10 * time.Second

// stopQuery stops a query: a running one gracefully (sources end, the rest
// drains) or at once, one that never started by dropping what was built.
func (w *Worker) stopQuery(id string, abort bool) {
	w.mu.Lock()
	q := w.queries[id]
	if q == nil {
		// A part still building will not start: its build ends now.
		if b := w.building[id]; b != nil {
			b.cancel(errStoppedBuilding)
		}
		w.mu.Unlock()
		return
	}
	if !q.started {
		q.stopped = true
		delete(w.queries, id)
		w.mu.Unlock()
		q.dw.Close()
		_ = q.dt.Close()
		_ = q.tr.Close()
		defer q.data.close() // after the sinks' end markers
		defer q.closeLink()
		if q.sinkHere {
			// Readers of the sink's subject wait for its end: tell them
			// this query will not write it (another worker failed before
			// this part started, or the query was stopped).
			cause := fmt.Errorf("query %s was stopped before it started", id)
			for _, s := range q.sinks {
				_ = s.finish(cause)
			}
		}
		close(q.done)
		w.status(q, deploy.StateStopped, nil, nil)
		q.mem.Close()
		q.leaveCPU()
		return
	}
	cancel := q.cancel
	w.mu.Unlock()
	if abort {
		cancel()
		return
	}
	q.graceful.Store(true)
	q.stopOnce.Do(func() { close(q.stop) })
}

// run runs a query's part to the end and reports.
func (w *Worker) run(ctx context.Context, q *query) {
	defer w.wg.Done()
	defer close(q.done)
	var freeze func()
	if w.cfg.Metrics != nil {
		freeze = w.cfg.Metrics.Track(q.id, w.cfg.Name, q.dw.Stats, q.tr.Stats)
	}
	// Progress reports while running; a broken relay link fails the run
	// (dataflow waits on an input that will never come otherwise).
	watch := make(chan struct{})
	var wwg sync.WaitGroup
	wwg.Add(1)
	go func() {
		defer wwg.Done()
		t := time.NewTicker(min(w.heartbeat, 500*time.Millisecond))
		defer t.Stop()
		// A LATENCY query's links are also looked at between reports: a
		// link whose acks say it slowed down is reported at once, since
		// the coordinator's SLO policy moves the query to smaller frames
		// only once it knows, and its frames queue until then.
		var probe <-chan time.Time
		if q.slo > 0 {
			p := time.NewTicker(linkProbe)
			defer p.Stop()
			probe = p.C
		}
		var reported map[relay.LinkID]float64
		for {
			links := []relay.LinkStats(nil)
			select {
			case <-watch:
				return
			case <-t.C:
			case <-probe:
				if links = q.tr.Stats(); !linkDropped(links, reported) {
					continue
				}
			}
			if err := q.dt.Err(); err != nil {
				q.cancel()
			}
			if links == nil {
				links = q.tr.Stats()
			}
			reported = ackBandwidths(links)
			w.status(q, deploy.StateRunning, q.dw.Stats(), links)
		}
	}()
	wwg.Add(1)
	go func() { defer wwg.Done(); w.watchMemory(q, watch) }()
	err := q.dw.Run(ctx)
	if st := dataflow.PanicStack(err); st != nil {
		w.cfg.Log.Error("query panicked", "query", q.id, "err", err, "stack", string(st))
	}
	close(watch)
	wwg.Wait()
	if lerr := q.limitErr.Load(); lerr != nil {
		err = *lerr // stopped for it: the reason, not a cancellation
	}
	err = limitErrorOf(err)
	if derr := q.dt.Err(); err != nil && derr != nil {
		err = fmt.Errorf("%w (relay: %v)", err, derr)
	}
	// Whatever failed, its report must fit one status message.
	err = dataflow.BoundError(err)
	if q.sinkHere {
		cause := err
		if errors.Is(err, context.Canceled) && !q.graceful.Load() {
			cause = fmt.Errorf("query %s was aborted (a worker failed or it was stopped at once)", q.id)
		}
		for _, s := range q.sinks {
			if cerr := s.finish(cause); cerr != nil && err == nil {
				err = cerr
			}
		}
		// The end marker says every result was sent: the client then
		// writes all it holds, complete epochs or not. A part that failed
		// or was aborted (a worker lost: the next generation replays) has
		// not sent them all, and what it held of an epoch must wait for the
		// generation that completes it; a stopped one ends its results.
		if err == nil || q.graceful.Load() {
			if eerr := q.res.end(); eerr != nil && err == nil {
				err = eerr
			}
		}
	}
	_ = q.dt.Close()
	q.data.close()
	stats, links := q.dw.Stats(), q.tr.Stats()
	_ = q.tr.Close()
	q.closeLink()
	if freeze != nil {
		freeze()
	}
	w.mu.Lock()
	delete(w.queries, q.id)
	w.mu.Unlock()
	state := deploy.StateFinished
	if q.graceful.Load() {
		state = deploy.StateStopped
	}
	switch {
	case err != nil && w.ctx.Err() == nil && errors.Is(err, context.Canceled):
		state, err = deploy.StateStopped, nil
	case err != nil:
		state = deploy.StateFailed
	}
	if state == deploy.StateFailed {
		w.cfg.Log.Info("query part failed", "query", q.id, "generation", q.gen, "err", err)
	}
	w.statusErr(q, state, err, stats, links)
	w.sched.Forget(q.id)
	q.cancel()
	// Whatever the part still held (a failure's leftovers) leaves the guard.
	q.mem.Close()
	q.leaveCPU()
}

// leaveCPU ends the part's share of the worker's CPU, once.
func (q *query) leaveCPU() { q.cpuLeft.Do(q.cpu.Leave) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (w *Worker) status(q *query, state string, stats []dataflow.InstanceStats, links []relay.LinkStats) {
	w.statusErr(q, state, nil, stats, links)
}

func (w *Worker) statusErr(q *query, state string, err error, stats []dataflow.InstanceStats, links []relay.LinkStats) {
	st := deploy.Status{Query: q.id, Worker: w.cfg.Name, State: state, Error: errString(err), ErrorKind: deploy.KindOf(err), Operators: stats, Links: links,
		Generation: q.gen}
	if f, ok := q.res.frontier(q.sinkInstances); ok {
		st.SinkFrontier, st.HasSinkFrontier = uint64(f), true
	}
	if state == deploy.StateRunning {
		// The coordinator's link RTT estimates add up their ends' round trips.
		if rtt, err := w.cfg.Conn.RTT(); err == nil {
			st.RTTNs = int64(rtt)
		}
	}
	if q.sinkHere {
		st.ResultRows = q.res.rows.Load()
	}
	for _, s := range w.sched.Stats() {
		if s.Query == q.id {
			st.Sched = &s
		}
	}
	if q.eq != nil {
		c := q.eq.Stats()
		st.LateRows, st.BadRows, st.Problems, st.Dropped = c.LateRows, c.BadRows, c.Problems, c.Dropped
		st.Positions = q.eq.TakePositions()
		if state != deploy.StateRunning {
			st.DroppedAt = q.eq.DropsByEpoch()
		}
	}
	if state != deploy.StateRunning {
		q.final.Store(&st)
	}
	b, _ := json.Marshal(st)
	_ = w.cfg.Conn.Publish(deploy.QuerySubject(w.cfg.Namespace, q.id, "status."+w.cfg.Name), b)
	if state != deploy.StateRunning {
		_ = w.cfg.Conn.Flush()
	}
}

// Close aborts every query still running, waits for them and leaves.
func (w *Worker) Close() error {
	for _, s := range w.subs {
		_ = s.Unsubscribe()
	}
	w.mu.Lock()
	var pending []*query
	for _, q := range w.queries {
		pending = append(pending, q)
	}
	w.mu.Unlock()
	for _, q := range pending {
		w.stopQuery(q.id, true)
	}
	w.cancel()
	w.wg.Wait()
	w.relays.close()
	return nil
}

// lazySink opens a catalog sink's writer at its first batch, or when the
// part ends on the worker that holds the sink (so an empty result still
// marks its end).
type lazySink struct {
	open func() (sinks.Writer, error)
	w    sinks.Writer
	// below is the epoch a re-deployed generation resumes at: every result
	// of an earlier epoch was sent by the generation before, and what this
	// one computes for them again (a replay from the start, or windows it
	// sees only part of after resuming its streams past their rows) must
	// not reach the sink a second time.
	below dataflow.Epoch
	// res records the sink's committed frontiers (as sink id), which the
	// worker reports like those of the results to the client: a recovery
	// then resumes an INSERT INTO at its committed epoch, not at 0.
	id  int
	res *results
}

// WriteEpoch implements sinks.EpochWriter: results of an epoch below the
// resume epoch are dropped.
func (l *lazySink) WriteEpoch(instance int, epoch dataflow.Epoch, rec arrow.Record) error {
	if epoch < l.below {
		return nil
	}
	if err := l.ensure(); err != nil {
		return err
	}
	if ew, ok := l.w.(sinks.EpochWriter); ok {
		// A JetStream sink gives its messages ids the server dedupes.
		return ew.WriteEpoch(instance, epoch, rec)
	}
	return l.w.Write(rec)
}

// Commit implements sinks.EpochWriter. The writer has every row below
// frontier by then (a JetStream sink waits for the stream's acks; a core
// NATS one published them on the connection that reports the frontier,
// ahead of the report).
func (l *lazySink) Commit(instance int, frontier dataflow.Epoch) error {
	if ew, ok := l.w.(sinks.EpochWriter); ok {
		if err := ew.Commit(instance, frontier); err != nil {
			return err
		}
	}
	if l.res != nil {
		l.res.record(l.id, instance, frontier)
	}
	return nil
}

func (l *lazySink) ensure() error {
	if l.w == nil {
		w, err := l.open()
		if err != nil {
			return err
		}
		l.w = w
	}
	return nil
}

func (l *lazySink) Write(rec arrow.Record) error {
	if l.w == nil {
		w, err := l.open()
		if err != nil {
			return err
		}
		l.w = w
	}
	return l.w.Write(rec)
}

// Close is the executor's: the part's end is the worker's to decide.
func (l *lazySink) Close() error { return nil }

// finish ends the sink's output: its end marker, or when the query failed
// (err), its failure marker.
func (l *lazySink) finish(err error) error {
	if l.w == nil {
		w, oerr := l.open()
		if oerr != nil {
			return oerr
		}
		l.w = w
	}
	return sinks.Finish(l.w, err)
}
