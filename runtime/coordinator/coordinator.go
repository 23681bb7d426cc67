// Package coordinator is tierflow's coordinator: it keeps the registered
// workers (SHOW WORKERS) and expires those that stop heartbeating, places
// submitted queries on the workers actually present (runtime/deploy),
// deploys each worker its operator instances, starts them once all are
// built, tracks their status and statistics (SHOW QUERIES) and folds them
// into live estimates (runtime/control), stops queries,
// and tells the client when a query is done. It recovers a query that lost
// a worker (noticed within 2s of its last heartbeat) and re-plans one a
// control.Policy asks about: both place the query again and deploy it as a
// new generation, which replays its streams to the epoch every sink had
// committed; the Client writes each epoch's results once. It also holds
// the client side of the protocol (Client). Data never passes through it:
// workers exchange batches peer to peer over the relay.
//
// coordinator imports planner, operators (sinks, exec through deploy),
// relay and runtime/{control, deploy, metrics}; never runtime/worker, runtime/cluster
// or cmd.
package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/session"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/planner/optimize"
	"github.com/tierflow/tierflow/planner/physical"
	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/inference/sched"
	"github.com/tierflow/tierflow/runtime/metrics"
	"github.com/tierflow/tierflow/runtime/security"
)

// Error kinds.
var (
	ErrUnknownQuery = errors.New("coordinator: unknown query")
	ErrDuplicate    = errors.New("coordinator: query name in use")
	ErrDeploy       = errors.New("coordinator: deployment failed")
	ErrUnsupported  = errors.New("not supported yet")
	// ErrDenied: a client asked for something only a query's owner (or an
	// admin) may do.
	ErrDenied = errors.New("coordinator: permission denied")
)

// Config configures a coordinator.
type Config struct {
	// Conn is the coordinator's NATS connection.
	Conn *nats.Conn
	// Infra, when set, orders the tiers (and later prices plans); tiers of
	// registered workers it does not name come after its own.
	Infra *infra.Infra
	// Catalog is a catalog YAML file for scripts that name none.
	Catalog string
	// Heartbeat is the interval workers are told to heartbeat at (default
	// 500ms); a worker silent for Expiry (default 3 heartbeats, at least
	// 1.5s) is dropped and the queries it ran are recovered on the others,
	// so a lost worker is noticed within 2s.
	Heartbeat time.Duration
	Expiry    time.Duration
	// DeployTimeout bounds each worker's build of its part (default 20s).
	DeployTimeout time.Duration
	Metrics       *metrics.Registry
	Log           *slog.Logger
	// Exec completes the executor options the coordinator compiles queries
	// with (as the workers' Exec does), so it can place model calls and NATS
	// streams.
	Exec func(o *exec.Options, part deploy.ExecPart)
	// CheckModelArgs, when set, gives the checker of model calls against
	// their files for a script whose relative paths are from baseDir, so a
	// declared tensor shape no model file takes fails the query at bind
	// time (bind.ModelArgChecker); nil: the workers find out when they build.
	CheckModelArgs func(baseDir string) bind.ModelArgChecker
	// Placement chooses how queries are placed: "optimizer" (the default:
	// the planner's physical plan against the registered workers, the
	// default rules when it cannot plan) or "rules" (runtime/deploy's
	// default rules only: sources at their tier, aggregates a tier up, the
	// sink on top, so data crosses every tier).
	Placement string
	// AdmitAll turns off the refusal of a REALTIME query on a loaded
	// worker (admitRealtime): `bench shared`'s naive baseline runs as
	// before priorities existed.
	AdmitAll bool
	// Policy, when set, is asked about every running query once a second
	// and may have it re-planned and cut over (runtime/control).
	Policy control.Policy
	// SLOPolicy is asked first about a query WITH (LATENCY <= x) whose
	// model calls have variants to choose from (default
	// control.DefaultJellyfish: variant and input size from the links'
	// bandwidth); NoSLOPolicy turns it off.
	SLOPolicy   control.Policy
	NoSLOPolicy bool
	// ReplanBudget bounds the optimizer's exact search when it plans with
	// a policy's live numbers (default DefaultReplanBudget).
	ReplanBudget time.Duration
	// Admins are the identities (deploy.SubmitSubject's <user>) that may
	// stop any query; everyone else stops only their own.
	Admins []string
	// Authority, when set, is the cluster's authority file (nats-setup's
	// authority.json): each user's data subjects, which bound what its
	// queries read and write, its admin role (as Admins), and the signing
	// key the coordinator mints each part's data user with
	// (deploy.Access.JWT). SetAuthority replaces it while running.
	Authority *security.Authority
	// DataRoots confine the files the coordinator reads to plan a query
	// (catalog, file streams and tables, whose schemas it probes), as a
	// worker's do; nil: none.
	DataRoots *security.Roots
	// Limits bound every query (deploy.Limits): the coordinator refuses a
	// user's submission past QueriesPerUser and fails a query past its
	// RunTime; workers enforce MemoryBytes and RowsInFlight.
	Limits deploy.Limits
	// Namespace is the deployment's subject namespace (deploy.InNamespace;
	// "" the default): workers and clients of another namespace on the same
	// server never reach this coordinator.
	Namespace string
}

// Placement modes (Config.Placement).
const (
	PlaceOptimizer = "optimizer"
	PlaceRules     = "rules"
)

// Coordinator is a running coordinator.
type Coordinator struct {
	cfg  Config
	nc   *nats.Conn
	subs []*nats.Subscription
	// hbSub is the heartbeats' subscription (settle waits for its queue).
	hbSub *nats.Subscription
	stop  chan struct{}
	wg    sync.WaitGroup

	mu      sync.Mutex
	workers map[string]*deploy.WorkerInfo
	queries map[string]*queryState
	order   []string // query ids in submission order
	// out is the coordinator's own connection's outages (outage.go).
	out outage
	// startedAt: for a while after it, the coordinator learns running
	// queries back from their workers (relearn.go).
	startedAt time.Time
	// authority is Config.Authority, replaced by SetAuthority.
	authority atomic.Pointer[security.Authority]
}

type queryState struct {
	info    deploy.QueryInfo
	status  map[string]deploy.Status // last status by worker
	started bool
	// live folds the workers' reports into the query's estimates; rtt is
	// each worker's last measured round trip to the NATS server.
	live *control.Live
	rtt  map[string]time.Duration
	// req is the submission, which a recovery places again on the
	// workers left; front is each sink worker's input frontier in the
	// current generation; pending is the recovery under way (until rows
	// flow past its epoch again).
	req     deploy.SubmitRequest
	front   map[string]uint64
	pending *pendingRecovery
	// droppedBefore are the rows earlier generations dropped, by reason:
	// their statuses go with them, and the query's count must not. Rows a
	// resumed generation sends again above the committed epoch may count
	// twice if both generations drop them.
	droppedBefore dataflow.DropCounts
	// positions are where the query's JetStream sources stood, by stream,
	// over every generation: a recovery resumes them from there
	// (deploy.Script.Positions).
	positions map[string]sources.Positions
	// bound is the query as written, bound to its catalog: the shape that
	// says where a recovery resumes its streams (info.ResumeSeq).
	bound *logical.Plan
	// failing is set while a worker's failure waits to see whether a
	// lost worker caused it (a relay link to a dead peer breaks first).
	failing bool
	// recovering serialises re-deployments of the query; redeploying is
	// set while one is asked for or under way (no policy runs then).
	recovering  sync.Mutex
	redeploying bool
	// replayable: every stream of the query replays (files, JetStream),
	// so a re-plan loses nothing; planned is when the current generation
	// was deployed and decided when the policy last ran.
	replayable       bool
	planned, decided time.Time
	// sampled is when the SLO timeline last took a sample (sampleSLO).
	sampled time.Time
	// kept backs the policy off after a re-plan that kept the plan.
	kept keptBackoff
	// plan is the optimizer's plan while the query deploys or runs: the
	// capacity it holds on its workers, which later queries plan around.
	plan *physical.Plan
	// assumed is what plan assumed of the live estimates (the drift
	// policy's other side; nil when placed by rules); variants are the
	// variants the current generation runs.
	assumed  *control.Assumed
	variants map[string]string
	// learned are the live numbers the policies measured so far, merged:
	// every re-plan plans with all of them. cutting is the re-plan whose
	// rows do not flow yet (its cut-over time is not known).
	learned *control.Overrides
	cutting *pendingReplan
	// outageCount counts the core NATS messages published since the
	// server came back, until a recovery from the outage re-deploys the
	// query (outage.go).
	outageCount func() int64
	// counting: a recovery is counting the core NATS messages it lost;
	// endHeld: the query ended meanwhile, and its done message waits for
	// the count (its dropped counts must include it).
	counting, endHeld bool
	// stopAsked: a stop was asked for (true: abort); a generation
	// deploying meanwhile is told again once it starts.
	stopAsked *bool
	// resumeFrom is the epoch a client that lost its connection has
	// written (a recovery from an outage resumes no later; outage.go).
	resumeFrom *uint64
	// classMix is the class mix a DATA AWARE plan was made for (the last
	// data-aware Decision's); nil: profiled accuracy.
	classMix map[string]map[string]float64
	// latency is what the SLO policy knows of a LATENCY query's model
	// calls (nil: none to adapt); pins the variants it chose, which every
	// later placement keeps.
	latency *control.LatencyInput
	pins    map[string]string
	// jetstream are the subjects of the query's JetStream streams and
	// sinks: its parts' data users may create streams over them (mint).
	jetstream []string
}

// pendingRecovery is a recovery whose rows do not flow yet.
type pendingRecovery struct {
	rec    control.Recovery
	lostAt time.Time
}

// Start subscribes the coordinator to the control subjects.
func Start(cfg Config) (*Coordinator, error) {
	if cfg.Conn == nil {
		return nil, errors.New("coordinator: no NATS connection")
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 500 * time.Millisecond
	}
	if cfg.Expiry <= 0 {
		// A loaded machine can delay a heartbeat or two; dropping a live
		// worker costs its queries a recovery (a replay), so never expire
		// within 1.5 seconds.
		cfg.Expiry = max(3*cfg.Heartbeat, 1500*time.Millisecond)
	}
	if cfg.DeployTimeout <= 0 {
		cfg.DeployTimeout = 20 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	switch cfg.Placement {
	case "":
		cfg.Placement = PlaceOptimizer
	case PlaceOptimizer, PlaceRules:
	default:
		return nil, fmt.Errorf("coordinator: unknown placement %q: want %s or %s", cfg.Placement, PlaceOptimizer, PlaceRules)
	}
	c := &Coordinator{cfg: cfg, nc: cfg.Conn, stop: make(chan struct{}), workers: map[string]*deploy.WorkerInfo{}, queries: map[string]*queryState{},
		startedAt: time.Now()}
	c.out.reconnects = c.nc.Stats().Reconnects
	c.authority.Store(cfg.Authority)
	handlers := []struct {
		subject string
		h       nats.MsgHandler
	}{
		{deploy.InNamespace(c.cfg.Namespace, deploy.RegisterSubject("*")), c.onRegister},
		{deploy.InNamespace(c.cfg.Namespace, deploy.HeartbeatSubject("*")), c.onHeartbeat},
		{deploy.InNamespace(c.cfg.Namespace, deploy.SubmitSubject("*")), c.onSubmit},
		{deploy.InNamespace(c.cfg.Namespace, deploy.SubjectWorkers), func(m *nats.Msg) { reply(m, c.Workers()) }},
		{deploy.InNamespace(c.cfg.Namespace, deploy.QueriesSubject("*")), func(m *nats.Msg) { reply(m, c.QueriesOf(lastToken(m.Subject))) }},
		{deploy.InNamespace(c.cfg.Namespace, deploy.StopSubject("*")), c.onStop},
		{deploy.InNamespace(c.cfg.Namespace, deploy.ResumeSubject("*")), c.onResume},
		{deploy.InNamespace(c.cfg.Namespace, deploy.SubjectQuery), c.onQuery},
		{deploy.QuerySubject(c.cfg.Namespace, "*", "status.*"), c.onStatus},
		{deploy.QuerySubject(c.cfg.Namespace, "*", "enough.*"), c.onEnough},
	}
	for _, h := range handlers {
		sub, err := c.nc.Subscribe(h.subject, c.guard(h.subject, h.h))
		if err != nil {
			c.Close()
			return nil, err
		}
		c.subs = append(c.subs, sub)
		if h.subject == deploy.InNamespace(c.cfg.Namespace, deploy.HeartbeatSubject("*")) {
			c.hbSub = sub
		}
	}
	if err := c.nc.Flush(); err != nil {
		c.Close()
		return nil, err
	}
	if cfg.Metrics != nil {
		_ = cfg.Metrics.Register((*gauges)(c))
	}
	c.wg.Add(1)
	go c.expire()
	return c, nil
}

func reply(m *nats.Msg, v any) {
	if m.Reply == "" {
		return
	}
	b, _ := json.Marshal(v)
	_ = m.Respond(b)
}

// guard runs a handler so that a panic in it (a submission runs the
// binder, the optimizer and the executor's builder) is logged and answered
// as an error, and the coordinator keeps serving.
func (c *Coordinator) guard(subj string, h nats.MsgHandler) nats.MsgHandler {
	return func(m *nats.Msg) {
		defer func() {
			if p := recover(); p != nil {
				err := dataflow.Recovered("coordinator on "+m.Subject, p)
				c.cfg.Log.Error("handler panicked", "subject", subj, "err", err, "stack", string(dataflow.PanicStack(err)))
				reply(m, deploy.Ack{Error: err.Error()})
			}
		}()
		h(m)
	}
}

func (c *Coordinator) onRegister(m *nats.Msg) {
	var wi deploy.WorkerInfo
	if err := json.Unmarshal(m.Data, &wi); err != nil {
		reply(m, deploy.RegisterReply{Error: "bad registration: " + err.Error()})
		return
	}
	if err := deploy.ValidName("worker", wi.Name); err != nil {
		reply(m, deploy.RegisterReply{Error: err.Error()})
		return
	}
	// The server lets a worker with creds of its own publish on its own
	// name only: the subject, not the message, says who registers.
	if tok := lastToken(m.Subject); tok != wi.Name {
		reply(m, deploy.RegisterReply{Error: fmt.Sprintf("worker %s registering on %s: the names differ", wi.Name, m.Subject)})
		return
	}
	if err := c.checkDataKey(wi); err != nil {
		reply(m, deploy.RegisterReply{Error: err.Error()})
		return
	}
	now := time.Now()
	wi.Registered, wi.LastSeen = now, now
	c.mu.Lock()
	c.workers[wi.Name] = &wi
	c.mu.Unlock()
	c.cfg.Log.Info("worker registered", "name", wi.Name, "tier", wi.Tier)
	reply(m, deploy.RegisterReply{HeartbeatMs: c.cfg.Heartbeat.Milliseconds()})
}

func (c *Coordinator) onHeartbeat(m *nats.Msg) {
	var hb deploy.Heartbeat
	if err := json.Unmarshal(m.Data, &hb); err != nil || hb.Name != lastToken(m.Subject) {
		reply(m, deploy.Ack{Error: "bad heartbeat"})
		return
	}
	c.mu.Lock()
	w := c.workers[hb.Name]
	if w != nil {
		w.LastSeen, w.Queries = time.Now(), hb.Queries
	}
	c.mu.Unlock()
	if w == nil {
		reply(m, deploy.Ack{Error: "unknown worker " + hb.Name + ": register again"})
		return
	}
	reply(m, deploy.Ack{Describe: c.relearn(hb)})
}

// anyExpired reports whether some worker's last heartbeat is older than Expiry.
func (c *Coordinator) anyExpired() bool {
	cutoff := time.Now().Add(-c.cfg.Expiry)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range c.workers {
		if w.LastSeen.Before(cutoff) {
			return true
		}
	}
	return false
}

// settle lets the heartbeat handler catch up before expire judges a worker by
// its last heartbeat: a round trip to the server puts every heartbeat it
// already routed here in the subscription's queue (messages arrive before the
// PONG), and the queue drains within max. On a loaded machine the handler lags
// behind the heartbeats, and two live workers were once declared lost at once.
func (c *Coordinator) settle(max time.Duration) {
	deadline := time.Now().Add(max)
	_ = c.nc.FlushTimeout(max)
	for c.hbSub != nil && time.Now().Before(deadline) {
		if n, _, err := c.hbSub.Pending(); err != nil || n == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// expire drops workers that stopped heartbeating and fails their queries.
func (c *Coordinator) expire() {
	defer c.wg.Done()
	// Checking four times an expiry keeps detection within Expiry + a
	// quarter of it.
	t := time.NewTicker(min(c.cfg.Heartbeat, c.cfg.Expiry/4))
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		if c.serverDown() {
			continue // no heartbeat can come: the server is away
		}
		if c.anyExpired() {
			c.settle(c.cfg.Expiry / 4)
		}
		cutoff := time.Now().Add(-c.cfg.Expiry)
		dead := map[string]time.Time{}
		c.mu.Lock()
		for name, w := range c.workers {
			if w.LastSeen.Before(cutoff) {
				dead[name] = w.LastSeen
				delete(c.workers, name)
			}
		}
		c.mu.Unlock()
		for name, last := range dead {
			c.cfg.Log.Warn("worker expired", "name", name)
			for _, q := range c.Queries() {
				if q.Ended.IsZero() && slices.Contains(q.Workers, name) {
					c.mu.Lock()
					if qs := c.queries[q.Query]; qs != nil {
						qs.redeploying = true
					}
					c.mu.Unlock()
					go c.recover(q.Query, name, last)
				}
			}
		}
	}
}

// Workers lists the registered workers by name (SHOW WORKERS).
func (c *Coordinator) Workers() []deploy.WorkerInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]deploy.WorkerInfo, 0, len(c.workers))
	for _, w := range c.workers {
		out = append(out, *w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Queries lists the queries in submission order (SHOW QUERIES).
func (c *Coordinator) Queries() []deploy.QueryInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]deploy.QueryInfo, 0, len(c.order))
	for _, id := range c.order {
		out = append(out, c.queries[id].info)
	}
	return out
}

// QueriesOf is SHOW QUERIES for user: its own queries, every query for an
// admin.
func (c *Coordinator) QueriesOf(user string) []deploy.QueryInfo {
	all := c.Queries()
	if c.isAdmin(user) {
		return all
	}
	own := all[:0]
	for _, q := range all {
		if q.Owner == user {
			own = append(own, q)
		}
	}
	return own
}

// Query returns one query's state.
func (c *Coordinator) Query(id string) (deploy.QueryInfo, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	q, ok := c.queries[id]
	if !ok {
		return deploy.QueryInfo{}, false
	}
	return q.info, true
}

// tiers orders the tiers: the infrastructure file's first, then the usual
// edge < hub < cloud, then any other registered tier by name.
func (c *Coordinator) tiers(ws []deploy.Worker) []string {
	var out []string
	add := func(t string) {
		if t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	if c.cfg.Infra != nil {
		for _, t := range c.cfg.Infra.Tiers {
			add(t.Name)
		}
	}
	present := map[string]bool{}
	for _, w := range ws {
		present[w.Tier] = true
	}
	for _, t := range []string{"device", "edge", "fog", "hub", "cloud"} {
		if present[t] {
			add(t)
		}
	}
	var rest []string
	for t := range present {
		if !slices.Contains(out, t) {
			rest = append(rest, t)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// lastToken is the <user> of tierflow.ctl.submit.<user> and the like.
func lastToken(subject string) string { return subject[strings.LastIndexByte(subject, '.')+1:] }

func (c *Coordinator) onSubmit(m *nats.Msg) {
	var req deploy.SubmitRequest
	if err := json.Unmarshal(m.Data, &req); err != nil {
		reply(m, deploy.SubmitReply{Error: "bad submission: " + err.Error()})
		return
	}
	// The server let this client publish on this subject only: its token
	// is who submits, whatever the request says.
	req.Owner = lastToken(m.Subject)
	p, err := c.Submit(context.Background(), req)
	if err != nil {
		reply(m, deploy.SubmitReply{Query: req.Query, Error: err.Error(), ErrorKind: deploy.KindOf(err)})
		return
	}
	reply(m, deploy.SubmitReply{Query: req.Query, Placement: p})
}

// Submit places a script's query on the registered workers, deploys every
// worker its part and starts the query. It returns once all workers have
// built their part; completion is announced on tierflow.q.<query>.done.
func (c *Coordinator) Submit(ctx context.Context, req deploy.SubmitRequest) (*deploy.Placement, error) {
	if err := deploy.ValidName("query", req.Query); err != nil {
		return nil, err
	}
	if req.Owner == "" {
		req.Owner = natsserver.Anonymous
	}
	if err := deploy.ValidName("user", req.Owner); err != nil {
		return nil, err
	}
	if err := c.known(req.Owner); err != nil {
		return nil, err
	}
	if req.Script.Catalog == "" {
		req.Script.Catalog = c.cfg.Catalog
	}
	var ws []deploy.Worker
	for _, w := range c.Workers() {
		ws = append(ws, deploy.Worker{Name: w.Name, Tier: w.Tier, Location: w.Location, Type: w.Type})
	}
	c.mu.Lock()
	if _, dup := c.queries[req.Query]; dup {
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: %s", ErrDuplicate, req.Query)
	}
	if err := c.admit(req.Owner); err != nil {
		c.mu.Unlock()
		c.cfg.Log.Warn("submission refused", "query", req.Query, "user", req.Owner, "err", err)
		return nil, err
	}
	qs := &queryState{info: deploy.QueryInfo{Query: req.Query, Owner: req.Owner, State: deploy.StateDeploying, Submitted: time.Now()}, status: map[string]deploy.Status{},
		live: control.NewLive(), rtt: map[string]time.Duration{}, req: req, front: map[string]uint64{}}
	c.queries[req.Query] = qs
	c.order = append(c.order, req.Query)
	c.mu.Unlock()

	pl, err := c.place(ctx, req, ws, nil, nil, nil)
	if err != nil {
		c.fail(req.Query, err)
		return nil, err
	}
	p, script := pl.placement, pl.script
	c.mu.Lock()
	qs.info.Placement, qs.info.Workers, qs.info.Planner, qs.info.Estimate, qs.info.LatencySLOMs = p, p.Workers, pl.note, pl.estimate, pl.sloMs
	qs.info.Priority, qs.info.InputRows = script.Priority, pl.inputRows
	qs.plan, qs.assumed, qs.variants, qs.latency = pl.plan, pl.assumed, script.Variants, pl.latency
	qs.bound = pl.bound
	c.mu.Unlock()

	if _, _, err := c.deployAll(ctx, req.Query, req.Owner, script, p, 0); err != nil {
		c.fail(req.Query, err)
		return nil, err
	}
	c.mu.Lock()
	ended := !qs.info.Ended.IsZero()
	if !ended {
		qs.info.State, qs.started, qs.info.Started = deploy.StateRunning, true, time.Now()
		qs.planned, qs.replayable = qs.info.Started, len(c.coreNATSSubjects(req.Script)) == 0
	}
	c.mu.Unlock()
	if ended {
		return nil, fmt.Errorf("%w: %s ended while deploying: %s", ErrDeploy, req.Query, qs.info.Error)
	}
	if err := c.nc.Publish(deploy.QuerySubject(c.cfg.Namespace, req.Query, "start"), nil); err != nil {
		c.fail(req.Query, err)
		return nil, err
	}
	c.limitRunTime(req.Query)
	c.cfg.Log.Info("query started", "query", req.Query, "workers", p.Workers)
	return p, nil
}

// deployAll has every worker of a placement build its part of generation
// gen. The query starts only when all have, so no source runs into a worker
// that could still fail to build.
//
// gone lists the workers nobody answered for (no responders): lost since
// the placement. slowest has the longest stop wait and build the workers
// answered with.
func (c *Coordinator) deployAll(ctx context.Context, id, owner string, script deploy.Script, p *deploy.Placement, gen int) (gone []string, slowest deploy.Ack, err error) {
	errs := make([]error, len(p.Workers))
	acks := make([]deploy.Ack, len(p.Workers))
	var wg sync.WaitGroup
	var submitted time.Time
	c.mu.Lock()
	if qs := c.queries[id]; qs != nil {
		submitted = qs.info.Submitted
	}
	c.mu.Unlock()
	req := deploy.DeployRequest{Query: id, Script: script, Placement: *p, Generation: gen,
		Results: deploy.InNamespace(c.cfg.Namespace, deploy.UserSubject(owner, id, "results")), Limits: c.cfg.Limits,
		Owner: owner, Submitted: submitted, Access: c.access(owner)}
	for i, name := range p.Workers {
		// Each part's data user is its own: minted on its worker's key.
		r := req
		jwt, err := c.mint(id, owner, name)
		if err != nil {
			errs[i] = fmt.Errorf("worker %s: %w", name, err)
			continue
		}
		r.Access.JWT = jwt
		body, _ := json.Marshal(r)
		wg.Add(1)
		go func() {
			defer wg.Done()
			dctx, cancel := context.WithTimeout(ctx, c.cfg.DeployTimeout)
			defer cancel()
			msg, err := c.nc.RequestWithContext(dctx, deploy.DeploySubject(c.cfg.Namespace, id, name), body)
			if err != nil {
				errs[i] = fmt.Errorf("worker %s: %w", name, err)
				return
			}
			var ack deploy.Ack
			if err := json.Unmarshal(msg.Data, &ack); err != nil {
				errs[i] = fmt.Errorf("worker %s: %w", name, err)
			} else if ack.Error != "" {
				errs[i] = fmt.Errorf("worker %s: %w", name, deploy.RemoteError(ack.Error, ack.ErrorKind))
			}
			acks[i] = ack
		}()
	}
	wg.Wait()
	for i, e := range errs {
		if errors.Is(e, nats.ErrNoResponders) {
			gone = append(gone, p.Workers[i])
		}
		slowest.StopWaitMs = max(slowest.StopWaitMs, acks[i].StopWaitMs)
		slowest.BuildMs = max(slowest.BuildMs, acks[i].BuildMs)
	}
	if err := errors.Join(errs...); err != nil {
		return gone, slowest, fmt.Errorf("%w: %w", ErrDeploy, err)
	}
	return nil, slowest, nil
}

// placed is how place placed a query: the placement, the script the
// workers must build (rewritten, with the plan's variants and batching, when
// the optimizer placed it), a note on how it was placed, the optimizer's
// estimate and plan (nil when placed by rules), and its LATENCY bound in
// milliseconds.
type placed struct {
	placement *deploy.Placement
	script    deploy.Script
	note      string
	estimate  *deploy.Estimate
	plan      *physical.Plan
	sloMs     float64
	// inputRows: a best-effort query's rows to read (inputRows).
	inputRows int64
	// assumed is what plan assumed of the live estimates (nil by rules).
	assumed *control.Assumed
	// latency: the SLO policy's view of the query (latencyInput).
	latency *control.LatencyInput
	// bound: the query as written (queryState.bound).
	bound *logical.Plan
}

// place compiles the script as every worker will and places it: where the
// optimizer puts it when it can plan the query against the registered
// workers (a model call, a catalog with profiles) around the capacity the
// running queries hold, by runtime/deploy's default rules otherwise. live
// (a re-plan's measured numbers, nil at submission) replaces the catalog's
// and the infrastructure's numbers in the optimizer's inputs; mix is a DATA
// AWARE query's live class mix (nil: profiled accuracy).
func (c *Coordinator) place(ctx context.Context, req deploy.SubmitRequest, ws []deploy.Worker, live *control.Overrides, mix map[string]map[string]float64, pins map[string]string) (placed, error) {
	script := req.Script
	// The catalog is checked here; the files the compile opens, in
	// execOptions.
	if err := c.cfg.DataRoots.ConfineScript(&script, &exec.Options{}); err != nil {
		return placed{}, err
	}
	if c.cfg.CheckModelArgs != nil {
		script.CheckModelArgs = c.cfg.DataRoots.ConfineModelArgs(c.cfg.CheckModelArgs(script.BaseDir), script.BaseDir)
	}
	bound, cat, err := script.Bind(nil)
	if err != nil {
		return placed{}, err
	}
	// The query's sources and sinks act with its owner's authority: a
	// subject of the engine's, or one the owner was not granted, is
	// refused before anything is placed (and again by every worker).
	if err := security.CheckCatalog(cat, c.access(req.Owner)); err != nil {
		return placed{}, err
	}
	c.mu.Lock()
	if qs := c.queries[req.Query]; qs != nil {
		qs.jetstream = jetStreamSubjects(cat)
	}
	c.mu.Unlock()
	if sk, ok := bound.Root.(*logical.Sink); ok && sk.Sink != nil && !strings.EqualFold(sk.Sink.Kind, "nats") && !strings.EqualFold(sk.Sink.Kind, "jetstream") {
		// operators/exec opens a sink's file when it builds and closes it
		// only in its own Run: every worker would truncate the file and
		// none would flush it. NATS and JetStream sinks run: the worker
		// that holds the sink opens it on first use and closes it when its
		// part ends (JetStream's close waits for the acks).
		return placed{}, fmt.Errorf("%s: %w: INSERT INTO %s (%s) on a cluster; submit the SELECT and write its streamed results (tierflow submit --output)", sk.Pos, ErrUnsupported, sk.Sink.Name, sk.Sink.Kind)
	}
	o := deploy.Options{Tiers: c.tiers(ws)}
	if c.cfg.Infra != nil {
		o.SourceTier = c.cfg.Infra.DefaultSourceTier()
	}
	var res *planner.Result
	perr := errors.New("placement by rules")
	if c.cfg.Placement != PlaceRules {
		res, perr = c.optimize(ctx, bound, cat, ws, o.Tiers, c.reserved(req.Query, bound.Objectives.Priority == "REALTIME", ws), script.Planner, live, mix)
		if errors.Is(perr, planner.ErrInfeasible) {
			// The planner did plan the query, and no plan meets what it
			// asks (with what running queries leave): running another one
			// would ignore the objectives.
			return placed{}, perr
		}
	}
	slo := bound.Objectives.LatencyMs
	script.Priority, script.LatencyMs = bound.Objectives.Priority, slo
	var in int64
	if script.Priority == "BEST_EFFORT" {
		in = inputRows(bound, script.BaseDir)
	}
	if perr == nil {
		planned := script
		planned.Rewrite, planned.Variants, planned.Batches = true, res.Physical.Variants(), batches(res.Physical)
		for call, v := range pins { // the SLO policy's choice over the planner's
			planned.Variants[call] = v
		}
		q, err := planned.BuildPlan(res.Rewritten, c.execOptions(planned.Variants))
		if err == nil {
			po := o
			po.Physical, po.Lowered = res.Physical, res.Lowered
			p, err := deploy.Place(req.Query, q.Graph(), res.Rewritten, ws, po)
			var slowed string
			if err == nil {
				if slowed, err = c.admitRealtime(req.Query, bound.Objectives, p, res.Physical); err != nil {
					return placed{}, err
				}
			}
			if err == nil {
				// The rewritten plan has the calls the workers run (a
				// call per source of a latency-bound query over several).
				lat := latencyInput(res.Rewritten.Root, slo, ws, planned.Variants, script.Planner[deploy.AdaptSetting])
				callSources(lat, res.Rewritten.Root, p)
				note := fmt.Sprintf("optimizer (%s): compute %.4g + network %.4g per hour, accuracy %.4g, throughput %.4g",
					res.Physical.Strategy, res.Physical.ComputeCost, res.Physical.NetworkCost, res.Physical.Accuracy, res.Physical.Throughput)
				if r := res.Physical.Targets.Reserved; len(r) > 0 {
					note += "; around running queries (" + reservedText(r) + ")"
				}
				if slowed != "" {
					note += "; " + slowed
				}
				return placed{placement: p, script: planned, note: note, estimate: deploy.EstimateOf(res.Physical, bound.Objectives.Throughput),
					plan: res.Physical, sloMs: slo, assumed: assumedOf(res.Physical, ws), inputRows: in,
					latency: lat, bound: bound}, nil
			}
			perr = err
		} else if deploy.KindOf(err) == deploy.KindInput {
			// The plan's query cannot be built for a reason of its own (a
			// model file that is not there): building it by the default
			// rules would fail the same way and blame another variant.
			return placed{}, err
		} else {
			perr = err
		}
	}
	if len(pins) > 0 {
		script.Variants = maps.Clone(pins)
	}
	q, plan, err := script.Build(nil, c.execOptions(script.Variants))
	if err != nil {
		return placed{}, err
	}
	p, err := deploy.Place(req.Query, q.Graph(), plan, ws, o)
	if err != nil {
		return placed{}, err
	}
	slowed, err := c.admitRealtime(req.Query, bound.Objectives, p, nil)
	if err != nil {
		return placed{}, err
	}
	note := "default placement (" + perr.Error() + ")"
	if slowed != "" {
		note += "; " + slowed
	}
	return placed{placement: p, script: script, note: note, sloMs: slo, inputRows: in, latency: latencyInput(bound.Root, slo, ws, script.Variants, ""), bound: bound}, nil
}

// reservedText is a reservation list for the planner note.
func reservedText(rs []optimize.Reservation) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("%s %.0f%% busy by %s", r.Worker, 100*min(r.Busy, 1), strings.Join(r.By, ",")))
	}
	return strings.Join(parts, "; ")
}

// batches are the plan's dynamic batching by model operator.
func batches(p *physical.Plan) map[string]deploy.Batch {
	out := map[string]deploy.Batch{}
	for _, op := range p.Operators {
		if op.Batch != nil {
			out[op.Name] = deploy.Batch{MaxBatch: op.Batch.MaxBatch, MaxDelay: op.Batch.MaxDelay}
		}
	}
	return out
}

func (c *Coordinator) execOptions(variants map[string]string) exec.Options {
	eo := exec.Options{Output: discardWriter{}, Stdout: io.Discard}
	if c.cfg.Exec != nil {
		c.cfg.Exec(&eo, deploy.ExecPart{Variants: variants})
	}
	if eo.Sink != nil {
		// The compile only shapes the graph: the coordinator never opens
		// a query's sink (creating a JetStream stream is its owner's
		// data user's business, on the worker that writes it).
		eo.Sink = func(*catalog.Sink, *arrow.Schema) (sinks.Writer, error) { return discardWriter{}, nil }
	}
	// The catalog was checked by place; Catalog is empty here.
	_ = c.cfg.DataRoots.ConfineScript(&deploy.Script{}, &eo)
	return eo
}

// optimize plans a bound query against the registered workers: their
// tiers, types and locations, with prices, links and tier fan-outs from the
// coordinator's infrastructure file.
//
// live, when set, replaces the catalog's and the infrastructure's numbers
// with measured ones (applyLive): the re-plan of the control loop.
func (c *Coordinator) optimize(ctx context.Context, bound *logical.Plan, cat *catalog.Catalog, ws []deploy.Worker, tiers []string, reserved []optimize.Reservation, settings map[string]string, live *control.Overrides, mix map[string]map[string]float64) (*planner.Result, error) {
	// The script's SET planner.* before the query (checked where it ran).
	set, err := session.FromValues(settings)
	if err != nil {
		return nil, err
	}
	file := c.cfg.Infra
	inf := &infra.Infra{}
	if file != nil {
		inf.Links, inf.DefaultLink, inf.SourceTier = slices.Clone(file.Links), file.DefaultLink, file.SourceTier
	}
	for _, t := range tiers {
		tier := &infra.Tier{Name: t}
		if file != nil {
			if ft := file.Tier(t); ft != nil {
				tier.Locations = ft.Locations
			}
		}
		inf.Tiers = append(inf.Tiers, tier)
	}
	seen := map[string]bool{}
	for _, w := range ws {
		typ := w.Type
		if typ == "" {
			typ = "default"
		}
		if !seen[typ] {
			seen[typ] = true
			var wt *infra.WorkerType
			if file != nil {
				wt = file.WorkerType(typ)
			}
			if wt == nil {
				wt = &infra.WorkerType{Name: typ}
			}
			inf.WorkerTypes = append(inf.WorkerTypes, wt)
		}
		inf.Workers = append(inf.Workers, &infra.Worker{Name: w.Name, Type: typ, Tier: w.Tier, Location: w.Location})
	}
	opts := set.Planner
	opts.Strategy = "" // the optimizer's default unless the script set one
	if _, ok := settings["planner.strategy"]; ok {
		opts.Strategy = set.Planner.Strategy
	}
	opts.Reserved = reserved
	applyLive(bound, inf, live)
	opts.Throughput = liveThroughput(bound, opts.Throughput, live)
	if live != nil {
		opts.InputRatio = live.InputRatios
	}
	if b := c.replanBudget(); live != nil && (opts.Optimize.TimeBudget <= 0 || opts.Optimize.TimeBudget > b) {
		opts.Optimize.TimeBudget = b
	}
	opts.ClassMix = mix // a DATA AWARE query's live class mix (SneakPeek)
	res, err := planner.PlanLogical(ctx, bound, cat, inf, opts)
	if err != nil {
		return nil, err
	}
	if err := res.Runnable(); err != nil {
		return nil, err
	}
	return res, nil
}

// maxProblems bounds the bad-row messages a query's info keeps.
const maxProblems = 10

// fail ends a query as failed, stops what runs of it and tells the client.
func (c *Coordinator) fail(id string, err error) {
	c.mu.Lock()
	qs := c.queries[id]
	if qs == nil || !qs.info.Ended.IsZero() {
		c.mu.Unlock()
		return
	}
	qs.info.State, qs.info.Error, qs.info.ErrorKind, qs.info.Ended = deploy.StateFailed, err.Error(), deploy.KindOf(err), time.Now()
	info := qs.info
	c.mu.Unlock()
	b, _ := json.Marshal(deploy.StopRequest{Query: id, Abort: true})
	_ = c.nc.Publish(deploy.QuerySubject(c.cfg.Namespace, id, "stop"), b)
	c.done(info)
}

func (c *Coordinator) done(info deploy.QueryInfo) {
	c.dropOutageCount(info.Query)
	b, _ := json.Marshal(info)
	_ = c.nc.Publish(deploy.InNamespace(c.cfg.Namespace, deploy.UserSubject(info.Owner, info.Query, "done")), b)
	_ = c.nc.Flush()
	c.cfg.Log.Info("query ended", "query", info.Query, "state", info.State, "error", info.Error)
}

func (c *Coordinator) onStatus(m *nats.Msg) {
	var st deploy.Status
	// A worker speaks for its own name and query only (its name is the
	// subject's last token, which its creds may bind it to).
	if err := json.Unmarshal(m.Data, &st); err != nil || st.Worker != lastToken(m.Subject) || st.Query != deploy.QueryOf(c.cfg.Namespace, m.Subject) {
		return
	}
	c.mu.Lock()
	qs := c.queries[st.Query]
	if qs == nil || !qs.info.Ended.IsZero() || st.Generation != qs.info.Generation {
		// An aborted generation's last words are not the query's.
		c.mu.Unlock()
		return
	}
	qs.status[st.Worker] = st
	if st.HasSinkFrontier {
		qs.front[st.Worker] = st.SinkFrontier
	}
	for name, ps := range st.Positions {
		if qs.positions == nil {
			qs.positions = map[string]sources.Positions{}
		}
		for _, p := range ps {
			qs.positions[name] = qs.positions[name].Add(p)
		}
	}
	info := &qs.info
	info.Operators, info.Links, info.ResultRows = nil, nil, 0
	info.LateRows, info.BadRows, info.Problems = 0, 0, nil
	info.Dropped = dataflow.DropCounts(nil).Merge(qs.droppedBefore) // a copy: Merge adds in place
	info.WorkerStates = map[string]string{}
	terminal, failed, failedKind, stopped := 0, "", "", false
	for _, name := range info.Workers {
		s, ok := qs.status[name]
		if !ok {
			continue
		}
		info.WorkerStates[name] = s.State
		if s.Sched != nil {
			if info.Sched == nil {
				info.Sched = map[string]sched.QueryStats{}
			}
			info.Sched[name] = *s.Sched
		}
		info.Operators = append(info.Operators, s.Operators...)
		info.Links = append(info.Links, s.Links...)
		info.ResultRows += s.ResultRows
		info.LateRows += s.LateRows
		info.BadRows += s.BadRows
		info.Dropped = info.Dropped.Merge(s.Dropped)
		if len(info.Problems) < maxProblems {
			info.Problems = append(info.Problems, s.Problems[:min(len(s.Problems), maxProblems-len(info.Problems))]...)
		}
		switch s.State {
		case deploy.StateFinished:
			terminal++
		case deploy.StateStopped:
			terminal++
			stopped = true
		case deploy.StateFailed:
			terminal++
			if failed == "" {
				failed, failedKind = s.Worker+": "+s.Error, s.ErrorKind
			}
		}
	}
	var ended *deploy.QueryInfo
	switch {
	case failed != "" && failedKind == deploy.KindInput:
		info.State, info.Error, info.ErrorKind, info.Ended = deploy.StateFailed, failed, failedKind, time.Now()
	case failed != "":
		// A part that fails because a peer died (its relay link broke)
		// is recovered with the rest once the peer's heartbeats are
		// missed; fail only if no worker is lost by then.
		if !qs.failing {
			qs.failing = true
			gen, msg, kind := info.Generation, failed, failedKind
			time.AfterFunc(c.cfg.Expiry+c.cfg.Heartbeat, func() { c.failGeneration(st.Query, gen, msg, kind) })
		}
	case terminal == len(info.Workers) && qs.started:
		info.State, info.Ended = deploy.StateFinished, time.Now()
		if stopped {
			info.State = deploy.StateStopped
		}
	}
	c.commit(qs)
	info.Dropped = info.Dropped.Merge(disconnected(info.Recoveries))
	c.costs(info)
	progress(info, time.Now())
	if st.RTTNs > 0 {
		qs.rtt[st.Worker] = time.Duration(st.RTTNs)
	}
	qs.live.Observe(time.Now(), info.Operators, info.Links, qs.rtt, linkEnds(info.Placement))
	est := qs.live.Estimates()
	info.Estimates = &est
	c.decide(qs, time.Now())
	if !info.Ended.IsZero() {
		cp := *info
		ended = &cp
	}
	held := ended != nil && qs.counting
	qs.endHeld = qs.endHeld || held
	c.mu.Unlock()
	if ended != nil {
		if held {
			// A recovery is still counting what it lost: it sends the
			// done message with the count.
			if ended.State == deploy.StateFailed {
				b, _ := json.Marshal(deploy.StopRequest{Query: ended.Query, Abort: true})
				_ = c.nc.Publish(deploy.QuerySubject(c.cfg.Namespace, ended.Query, "stop"), b)
			}
			return
		}
		if ended.State == deploy.StateFailed {
			b, _ := json.Marshal(deploy.StopRequest{Query: ended.Query, Abort: true})
			_ = c.nc.Publish(deploy.QuerySubject(c.cfg.Namespace, ended.Query, "stop"), b)
		}
		c.done(*ended)
	}
}

// endGeneration forgets the ending generation's statuses and sink
// frontiers, keeping in the query's record the rows it dropped and what
// its sinks measured (QueryInfo.Earlier).
func (qs *queryState) endGeneration() {
	// A new Earlier, not the old one changed: copies of the query's info
	// handed out before share its pointer.
	e := &deploy.Earlier{}
	if old := qs.info.Earlier; old != nil {
		e.EndToEnd.Add(old.EndToEnd)
		e.SLOMissRows = old.SLOMissRows
		e.AddSides([]dataflow.InstanceStats{{Counters: old.Sides}})
	}
	for _, st := range qs.status {
		qs.droppedBefore = qs.droppedBefore.Merge(st.Dropped)
		for _, op := range st.Operators {
			e.EndToEnd.Add(op.EndToEnd)
			e.SLOMissRows += op.SLOMissRows
		}
		e.AddSides(st.Operators)
	}
	if e.EndToEnd.Count > 0 || e.SLOMissRows > 0 || len(e.Sides) > 0 {
		qs.info.Earlier = e
	}
	qs.status, qs.front = map[string]deploy.Status{}, map[string]uint64{}
}

// positionsCopy is a copy of qs.positions, taken under mu.
func (qs *queryState) positionsCopy(mu *sync.Mutex) map[string]sources.Positions {
	mu.Lock()
	defer mu.Unlock()
	if len(qs.positions) == 0 {
		return nil
	}
	out := make(map[string]sources.Positions, len(qs.positions))
	for k, v := range qs.positions {
		out[k] = slices.Clone(v)
	}
	return out
}

// commit (with c.mu held) moves the query's committed epoch to the
// smallest sink frontier of its generation, and closes a pending recovery
// once rows flow past the epoch it resumed from (or the query ended).
func (c *Coordinator) commit(qs *queryState) {
	info := &qs.info
	var low uint64
	known := false
	if p := info.Placement; p != nil {
		known = true
		first := true
		for _, op := range p.Operators {
			if op.Name != "sink" {
				continue
			}
			for _, wi := range op.Workers {
				name := p.Workers[wi]
				f, ok := qs.front[name]
				if !ok {
					known = false
					break
				}
				if first || f < low {
					low, first = f, false
				}
			}
		}
		known = known && !first
	}
	if known && low > info.Committed {
		info.Committed = low
	}
	info.ResumeSeq = deploy.ResumeSeqs(qs.bound, info.Committed, qs.positions)
	qs.cutOver(known, low)
	// Rows flow again once the new generation's sinks pass the epoch it
	// resumed from or write anything; a query stopped or finished before
	// keeps the recovery in its record too.
	if r := qs.pending; r != nil && (known && low > r.rec.Epoch || info.ResultRows > 0 || !info.Ended.IsZero() && info.State != deploy.StateFailed) {
		r.rec.Seconds = time.Since(r.lostAt).Seconds()
		info.Recoveries = append(info.Recoveries, r.rec)
		qs.pending = nil
	}
}

// failGeneration fails the query with a worker's error unless a recovery
// has replaced that generation since.
func (c *Coordinator) failGeneration(id string, gen int, msg, kind string) {
	c.mu.Lock()
	qs := c.queries[id]
	stale := qs == nil || qs.info.Generation != gen || !qs.info.Ended.IsZero()
	var planned time.Time
	if !stale {
		planned = qs.planned
	}
	c.mu.Unlock()
	if stale {
		return
	}
	if c.outageSince(planned) {
		// The NATS server went away under this generation: its relay
		// links lost what was in flight. Run it again instead.
		down, _ := c.lastOutage()
		c.mu.Lock()
		qs.redeploying = true
		c.mu.Unlock()
		go c.redeploy(id, control.LostServer, down, nil, 0)
		return
	}
	err := errors.New(msg)
	if kind == deploy.KindInput {
		err = deploy.RemoteError(msg, kind)
	}
	c.fail(id, err)
}

// recover re-deploys a query that lost a worker on the workers left: the
// old generation's parts are aborted, the query is placed again and every
// part of the new generation replays its file streams from the start, as
// fast as they read up to the committed epoch (the operators' state is
// rebuilt by the replay) and at their rate after it; a row-wise query, or
// one whose state is TUMBLE windows, reads past the rows whose results are
// committed without sending them (deploy's resumeAt). The client writes
// only epochs it has not written (Client.Submit), so the result is that of
// a run without the loss.
func (c *Coordinator) recover(id, lost string, lostAt time.Time) {
	c.redeploy(id, lost, lostAt, nil, 0)
}

// replan cuts a query over to a new plan a policy asked for (decided on
// generation gen): placed again without the excluded workers, deployed as
// the next generation exactly as a recovery is, so the cut-over is at the
// committed epoch and loses or duplicates no row.
func (c *Coordinator) replan(id string, d *control.Decision, gen int) {
	c.redeploy(id, "", time.Now(), d, gen)
	c.mu.Lock()
	defer c.mu.Unlock()
	qs := c.queries[id]
	if qs == nil || qs.info.Generation != gen {
		return
	}
	// The plan was kept (no other plan is feasible, or it is the same): a
	// policy that sees the same numbers asks the same again, so it is not
	// asked again for a while, longer each time, until the query moves
	// to another generation.
	if qs.kept.gen != gen {
		qs.kept = keptBackoff{gen: gen}
	}
	qs.kept.wait = min(max(2*qs.kept.wait, minKeptBackoff), maxKeptBackoff)
	qs.kept.until = time.Now().Add(qs.kept.wait)
}

// stopGeneration aborts generation gen of query id, placed as p, and waits
// (up to stopWait) for each of p's workers to say its part stopped. ok
// when every sink worker answered with its sinks' frontier: low is the
// smallest, the epoch every sink of the generation committed (fresher than
// the last status reports', up to half a second old, so a cut-over sends
// fewer frames again), and pos the positions its sources reached.
func (c *Coordinator) stopGeneration(id string, gen int, p *deploy.Placement) (low uint64, pos map[string]sources.Positions, ok bool) {
	b, _ := json.Marshal(deploy.StopRequest{Query: id, Abort: true, Generation: gen, OnlyGeneration: true})
	subj := deploy.QuerySubject(c.cfg.Namespace, id, "stop")
	inbox := c.nc.NewInbox()
	sub, err := c.nc.SubscribeSync(inbox)
	if err != nil || p == nil {
		_ = c.nc.Publish(subj, b)
		return 0, nil, false
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := c.nc.PublishRequest(subj, inbox, b); err != nil {
		_ = c.nc.Publish(subj, b)
		return 0, nil, false
	}
	got := map[string]deploy.Status{}
	deadline := time.Now().Add(stopWait)
	for len(got) < len(p.Workers) {
		m, err := sub.NextMsg(time.Until(deadline))
		if err != nil {
			break
		}
		var st deploy.Status
		if json.Unmarshal(m.Data, &st) == nil && st.Generation == gen && slices.Contains(p.Workers, st.Worker) {
			got[st.Worker] = st
		}
	}
	first := true
	for _, op := range p.Operators {
		if op.Name != "sink" {
			continue
		}
		for _, wi := range op.Workers {
			st, answered := got[p.Workers[wi]]
			if !answered || !st.HasSinkFrontier {
				return 0, nil, false
			}
			if first || st.SinkFrontier < low {
				low, first = st.SinkFrontier, false
			}
		}
	}
	for _, st := range got {
		for name, ps := range st.Positions {
			if pos == nil {
				pos = map[string]sources.Positions{}
			}
			pos[name] = append(pos[name], ps...)
		}
	}
	return low, pos, !first
}

// stopWait bounds how long a re-plan waits for the old generation's parts
// to say they stopped before it resumes from the committed epoch it knows.
const stopWait = 2 * time.Second

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func msSince(t time.Time) float64 { return ms(time.Since(t)) }

// keptBackoff holds the policy off a query whose re-plan kept its plan:
// until is when the policy may run again for generation gen, wait the
// back-off that led there (doubling from minKeptBackoff to maxKeptBackoff).
type keptBackoff struct {
	gen   int
	wait  time.Duration
	until time.Time
}

const (
	minKeptBackoff = 2 * time.Second
	maxKeptBackoff = 30 * time.Second
)

// redeploy places a running query again and deploys it as a new
// generation: after the loss of worker lost (a recovery) or for a policy's
// decision d taken on generation fromGen (a re-plan).
func (c *Coordinator) redeploy(id, lost string, lostAt time.Time, d *control.Decision, fromGen int) {
	c.mu.Lock()
	qs := c.queries[id]
	c.mu.Unlock()
	if qs == nil {
		return
	}
	qs.recovering.Lock()
	defer qs.recovering.Unlock()
	defer func() {
		c.mu.Lock()
		qs.redeploying = false
		c.mu.Unlock()
	}()
	c.mu.Lock()
	switch {
	case !qs.info.Ended.IsZero():
		c.mu.Unlock()
		return
	case d == nil && lost != control.LostServer && lost != control.LostCoordinator && !slices.Contains(qs.info.Workers, lost):
		c.mu.Unlock()
		return
	case d == nil && !qs.started:
		c.mu.Unlock()
		c.fail(id, fmt.Errorf("worker %s stopped heartbeating", lost))
		return
	case d != nil && (qs.info.Generation != fromGen || !qs.started):
		c.mu.Unlock()
		return // something else re-deployed it since
	}
	old, oldWorkers := qs.info.Generation, qs.info.Workers
	oldPlacement, oldVariants := qs.info.Placement, qs.variants
	epoch, req := qs.info.Committed, qs.req
	if lost == control.LostServer {
		epoch = outageEpoch(qs, epoch)
	}
	oldPlan, mix, pins := qs.plan, qs.classMix, maps.Clone(qs.pins)
	if d != nil && d.ClassMix != nil {
		mix = d.ClassMix
	}
	if d != nil && len(d.Variants) > 0 {
		if pins == nil {
			pins = map[string]string{}
		}
		maps.Copy(pins, d.Variants)
	}
	c.mu.Unlock()
	if lost == control.LostServer || lost == control.LostCoordinator {
		// After an outage (or a restart, which the workers notice at
		// their next heartbeat) the query's own workers come back: wait
		// for them rather than place it on the first to reconnect.
		c.outageWait(oldWorkers)
	}

	// A loaded machine can delay every worker's heartbeats past the
	// expiry at once; a live worker registers again at its next one, so
	// give the workers a few heartbeats to come back before giving up.
	var ws []deploy.Worker
	for wait := time.Now().Add(2 * c.cfg.Expiry); ; {
		ws = ws[:0]
		for _, w := range c.Workers() {
			if d != nil && slices.Contains(d.Exclude, w.Name) || w.Name == lost {
				continue
			}
			ws = append(ws, deploy.Worker{Name: w.Name, Tier: w.Tier, Location: w.Location, Type: w.Type})
		}
		if len(ws) > 0 || d != nil || time.Now().After(wait) {
			break
		}
		select {
		case <-c.stop:
			return
		case <-time.After(c.cfg.Heartbeat / 4):
		}
	}
	if len(ws) == 0 {
		if d == nil {
			c.fail(id, fmt.Errorf("worker %s stopped heartbeating and no worker is left", lost))
		}
		return
	}
	req.Script.ResumeEpoch = epoch
	req.Script.Positions = qs.positionsCopy(&c.mu)
	ctx := context.Background()
	var live *control.Overrides
	c.mu.Lock()
	if d != nil && d.Live != nil {
		if qs.learned == nil {
			qs.learned = &control.Overrides{}
		}
		qs.learned.Merge(d.Live)
	}
	if qs.learned != nil {
		// A recovery plans with what was measured too.
		cp := control.Overrides{}
		cp.Merge(qs.learned)
		live = &cp
	}
	c.mu.Unlock()
	pl, err := c.place(ctx, req, ws, live, mix, pins)
	cut := &control.CutOver{Decided: lostAt, PlanMs: msSince(lostAt)}
	moved := variantsMoved(oldPlan, pl.plan)
	p, script := pl.placement, pl.script
	if d != nil && (err != nil || samePlan(oldPlacement, p, oldVariants, script.Variants)) {
		// No other plan: the query keeps running as it is. A plan made
		// with live numbers becomes what the drift policy compares with,
		// so numbers that stay where they drifted to ask once.
		if err == nil && live != nil {
			c.mu.Lock()
			if qs.info.Generation == old {
				qs.assumed, qs.info.Estimate = pl.assumed, pl.estimate
			}
			c.mu.Unlock()
		}
		c.cfg.Log.Info("re-plan kept the plan", "query", id, "reason", d.Reason, "err", err)
		return
	}
	gen := old + 1
	c.mu.Lock()
	if !qs.info.Ended.IsZero() {
		c.mu.Unlock()
		return
	}
	qs.info.Generation, qs.failing = gen, false
	qs.endGeneration()
	qs.info.ResultRows = 0 // the new generation's, from its first status
	qs.live, qs.planned = control.NewLive(), time.Now()
	if d == nil {
		if qs.pending == nil {
			qs.pending = &pendingRecovery{lostAt: lostAt}
		}
		if prev := qs.pending.rec.LostWorker; prev != "" && prev != lost {
			lost = prev + "," + lost // a second loss before rows flowed again
		}
		qs.pending.rec = control.Recovery{Epoch: epoch, LostWorker: lost}
	}
	if err == nil {
		qs.info.Placement, qs.info.Workers, qs.info.Planner, qs.info.Estimate = p, p.Workers, pl.note, pl.estimate
		qs.plan, qs.assumed, qs.variants, qs.classMix = pl.plan, pl.assumed, script.Variants, mix
		qs.bound = pl.bound
		qs.latency, qs.pins = pl.latency, pins
	}
	c.mu.Unlock()
	if d == nil {
		c.cfg.Log.Warn("recovering query", "query", id, "lost", lost, "generation", gen, "epoch", epoch)
	} else {
		c.cfg.Log.Info("re-planning query", "query", id, "reason", d.Reason, "generation", gen, "epoch", epoch, "plan_ms", cut.PlanMs)
	}
	// Core NATS streams keep nothing while no part of the query listens:
	// count what is published from now until the new parts subscribe.
	countLost := c.takeOutageCount(qs, lost)
	if countLost == nil {
		countLost = c.countCoreNATS(req.Script, true)
	}
	c.mu.Lock()
	qs.counting = true
	c.mu.Unlock()
	defer func() {
		n := countLost()
		c.mu.Lock()
		qs.counting = false
		if n > 0 {
			if qs.pending != nil && qs.pending.rec.LostWorker == lost {
				qs.pending.rec.LostMessages += n
			} else if k := len(qs.info.Recoveries); k > 0 && qs.info.Recoveries[k-1].LostWorker == lost {
				qs.info.Recoveries[k-1].LostMessages += n
			}
		}
		var ended *deploy.QueryInfo
		if qs.endHeld {
			qs.endHeld = false
			qs.info.Dropped = qs.info.Dropped.Merge(dataflow.DropCounts{dataflow.DropDisconnected: n})
			cp := qs.info
			ended = &cp
		}
		c.mu.Unlock()
		if n > 0 {
			c.cfg.Log.Warn("core NATS messages lost while re-deploying", "query", id, "messages", n)
		}
		if ended != nil {
			c.done(*ended)
		}
	}()
	if d != nil && err == nil {
		// A re-plan: every worker of the old generation is alive, so wait
		// for its parts to stop and resume where their sinks committed.
		stopping := time.Now()
		e, pos, ok := c.stopGeneration(id, old, oldPlacement)
		cut.StopMs = msSince(stopping)
		if ok && e > epoch {
			epoch = e
			c.mu.Lock()
			qs.info.Committed = max(qs.info.Committed, e)
			for name, ps := range pos {
				if qs.positions == nil {
					qs.positions = map[string]sources.Positions{}
				}
				for _, x := range ps {
					qs.positions[name] = qs.positions[name].Add(x)
				}
			}
			c.mu.Unlock()
		}
	} else {
		b, _ := json.Marshal(deploy.StopRequest{Query: id, Abort: true, Generation: old, OnlyGeneration: true})
		_ = c.nc.Publish(deploy.QuerySubject(c.cfg.Namespace, id, "stop"), b)
	}
	if err == nil {
		script.ResumeEpoch = epoch
		script.Positions = qs.positionsCopy(&c.mu)
		var gone []string
		var slowest deploy.Ack
		deploying := time.Now()
		gone, slowest, err = c.deployAll(ctx, id, req.Owner, script, p, gen)
		cut.DeployMs, cut.BuildMs = msSince(deploying), slowest.BuildMs
		if err != nil && len(gone) > 0 && d == nil {
			// Another worker died while this recovery placed the query on
			// it: recover again, from the same epoch, without it.
			c.mu.Lock()
			for _, name := range gone {
				delete(c.workers, name)
			}
			c.mu.Unlock()
			c.cfg.Log.Warn("worker lost while recovering", "query", id, "workers", gone)
			go c.recover(id, gone[0], time.Now())
			return
		}
	}
	if err != nil {
		c.fail(id, fmt.Errorf("re-deploying %s (generation %d): %w", id, gen, err))
		return
	}
	if err := c.nc.Publish(deploy.QuerySubject(c.cfg.Namespace, id, "start"), nil); err != nil {
		c.fail(id, err)
		return
	}
	cut.StartMs = msSince(lostAt)
	c.mu.Lock()
	stop := qs.stopAsked
	c.mu.Unlock()
	if stop != nil {
		// Stopped while this generation was deploying: its workers did
		// not know it yet, so say it again now that it runs.
		b, _ := json.Marshal(deploy.StopRequest{Query: id, Abort: *stop})
		_ = c.nc.Publish(deploy.QuerySubject(c.cfg.Namespace, id, "stop"), b)
	}
	if d != nil {
		c.mu.Lock()
		reason := d.Reason
		if moved != "" {
			reason += "; " + moved
		}
		qs.info.Replans = append(qs.info.Replans, control.Replan{Epoch: epoch, Reason: reason,
			Old: choiceOf(oldPlacement, oldVariants), New: choiceOf(p, script.Variants), Cut: cut})
		qs.cutting = &pendingReplan{index: len(qs.info.Replans) - 1, decided: lostAt}
		c.mu.Unlock()
	}
	c.cfg.Log.Info("query re-deployed", "query", id, "workers", p.Workers, "generation", gen)
}

// sampleSLO (with c.mu held) adds the live estimates of a LATENCY query's
// links to its SLO timeline, about once a second: also while a re-plan
// is under way (the links keep their bandwidth), and again at the next
// report when the estimates had no acks yet, so that a short run or a
// query re-planned at its first estimate still shows its links.
func (qs *queryState) sampleSLO(now time.Time) {
	if qs.latency == nil || !qs.started || qs.info.Estimates == nil || !qs.info.Ended.IsZero() ||
		len(qs.info.SLOTimeline) >= control.MaxSLOSamples || now.Sub(qs.sampled) < time.Second {
		return
	}
	if s := control.SLOSamples(now.Sub(qs.info.Started).Seconds(), *qs.info.Estimates, qs.latency); len(s) > 0 {
		qs.info.SLOTimeline = append(qs.info.SLOTimeline, s...)
		qs.sampled = now
	}
}

// decide (with c.mu held) asks the policies about a running query and
// starts the re-plan one asks for: the SLO policy of a LATENCY query at
// every status report (a link that steps down must be met within the
// report's half second, not the next second: its frames queue and miss
// their deadline meanwhile; the policy holds its own step ups back), the
// others at most once a second (less often after a re-plan kept the plan:
// keptBackoff).
func (c *Coordinator) decide(qs *queryState, now time.Time) {
	var sp control.Policy
	if qs.latency != nil && !c.cfg.NoSLOPolicy {
		if sp = c.cfg.SLOPolicy; sp == nil {
			sp = control.DefaultJellyfish
		}
	}
	if sp != nil {
		qs.sampleSLO(now)
	}
	if sp == nil && c.cfg.Policy == nil || !qs.started || qs.redeploying || !qs.replayable || !qs.info.Ended.IsZero() || qs.info.Estimates == nil {
		return
	}
	second := now.Sub(qs.decided) >= time.Second
	if !second && sp == nil {
		return
	}
	if second {
		qs.decided = now
	}
	if qs.kept.gen == qs.info.Generation && now.Before(qs.kept.until) {
		return // a re-plan kept this plan lately: back off (keptBackoff)
	}
	var policies control.Policies
	if sp != nil {
		policies = append(policies, sp)
	}
	if second && c.cfg.Policy != nil {
		policies = append(policies, c.cfg.Policy)
	}
	if len(policies) == 0 {
		return
	}
	in := control.PolicyInput{Query: qs.info.Query, Workers: qs.info.Workers, Age: now.Sub(qs.planned), Replans: len(qs.info.Replans),
		Estimates: *qs.info.Estimates, Assumed: qs.assumed, Latency: qs.latency}
	for name := range c.workers {
		in.Registered = append(in.Registered, name)
	}
	sort.Strings(in.Registered)
	d := policies.Decide(in)
	if d == nil {
		return
	}
	qs.redeploying = true
	go c.replan(qs.info.Query, d, qs.info.Generation)
}

// countCoreNATS subscribes to the core NATS subjects a script's query
// reads; the function it returns unsubscribes and says how many messages
// came (end markers aside). The subscription is plain, not in the query's
// queue group: it takes nothing from the query's own sources. With flush
// it returns once the server has the subscriptions; without (the server
// is away) they count from when it is back.
func (c *Coordinator) countCoreNATS(script deploy.Script, flush bool) func() int64 {
	var subs []*nats.Subscription
	for _, subj := range c.coreNATSSubjects(script) {
		if sub, err := c.nc.SubscribeSync(subj); err == nil {
			_ = sub.SetPendingLimits(-1, -1)
			subs = append(subs, sub)
		}
	}
	if len(subs) > 0 && flush {
		_ = c.nc.Flush()
	}
	var n int64
	return func() int64 {
		if len(subs) == 0 {
			return n
		}
		// After the round trip, all that was published before it waits
		// in the subscriptions.
		_ = c.nc.Flush()
		for _, s := range subs {
			for {
				m, err := s.NextMsg(time.Millisecond)
				if err != nil {
					break
				}
				if m.Header.Get(deploy.HeaderEnd) == "" { // the connectors' end marker
					n++
				}
			}
			_ = s.Unsubscribe()
		}
		subs = nil
		return n
	}
}

// coreNATSSubjects are the core NATS subjects a script's query reads.
func (c *Coordinator) coreNATSSubjects(script deploy.Script) []string {
	bound, _, err := script.Bind(nil)
	if err != nil {
		return nil
	}
	var out []string
	var walk func(logical.Node)
	walk = func(nd logical.Node) {
		if s, ok := nd.(*logical.Scan); ok && s.Stream != nil && strings.EqualFold(s.Stream.Source, "nats") {
			out = append(out, s.Stream.Subject)
		}
		for _, ch := range nd.Children() {
			walk(ch)
		}
	}
	walk(bound.Root)
	return out
}

// onQuery answers a client waiting for a query: an empty Ack while the
// coordinator knows it, an error once it does not (restarted).
func (c *Coordinator) onQuery(m *nats.Msg) {
	var req deploy.StopRequest
	if err := json.Unmarshal(m.Data, &req); err != nil {
		reply(m, deploy.Ack{Error: "bad query request"})
		return
	}
	if _, ok := c.Query(req.Query); !ok && !c.learning() {
		reply(m, deploy.Ack{Error: fmt.Sprintf("%v: %s", ErrUnknownQuery, req.Query)})
		return
	}
	reply(m, deploy.Ack{})
}

func (c *Coordinator) onStop(m *nats.Msg) {
	var req deploy.StopRequest
	if err := json.Unmarshal(m.Data, &req); err != nil {
		reply(m, deploy.Ack{Error: "bad stop request"})
		return
	}
	if err := c.StopAs(lastToken(m.Subject), req.Query, req.Abort); err != nil {
		reply(m, deploy.Ack{Error: err.Error()})
		return
	}
	reply(m, deploy.Ack{})
}

// StopAs stops a query on behalf of user: its owner or an admin.
func (c *Coordinator) StopAs(user, id string, abort bool) error {
	c.mu.Lock()
	qs := c.queries[id]
	owner := ""
	if qs != nil {
		owner = qs.info.Owner
	}
	c.mu.Unlock()
	if qs != nil && owner != user && !c.isAdmin(user) {
		c.cfg.Log.Warn("stop refused", "query", id, "user", user, "owner", owner)
		return fmt.Errorf("%w: %s may not stop query %s (submitted by %s)", ErrDenied, user, id, owner)
	}
	return c.Stop(id, abort)
}

// onEnough stops a query gracefully when one of its workers has all the
// query needs (a full final LIMIT). Only a worker the query runs on counts.
func (c *Coordinator) onEnough(m *nats.Msg) {
	var e deploy.Enough
	if json.Unmarshal(m.Data, &e) != nil || e.Worker != lastToken(m.Subject) {
		return
	}
	id := deploy.QueryOf(c.cfg.Namespace, m.Subject)
	c.mu.Lock()
	qs := c.queries[id]
	ok := qs != nil && qs.info.Ended.IsZero() && slices.Contains(qs.info.Workers, e.Worker)
	c.mu.Unlock()
	if ok {
		_ = c.Stop(id, false)
	}
}

// linkEnds names the workers at a link's ends from the query's placement.
func linkEnds(p *deploy.Placement) control.Endpoints {
	return func(l relay.LinkID) (string, string) {
		if p == nil || int(l.Edge) >= len(p.Edges) {
			return "", ""
		}
		e := p.Edges[l.Edge]
		return workerOf(p, e.From, int(l.Sender)), workerOf(p, e.To, int(l.Receiver))
	}
}

func workerOf(p *deploy.Placement, op, inst int) string {
	if op < 0 || op >= len(p.Operators) || inst < 0 || inst >= len(p.Operators[op].Workers) {
		return ""
	}
	if w := p.Operators[op].Workers[inst]; w >= 0 && w < len(p.Workers) {
		return p.Workers[w]
	}
	return ""
}

// Stop stops a query: gracefully (its sources end and what is in flight
// drains to the sink) or, with abort, at once.
func (c *Coordinator) Stop(id string, abort bool) error {
	c.mu.Lock()
	qs := c.queries[id]
	c.mu.Unlock()
	if qs == nil {
		return fmt.Errorf("%w: %s", ErrUnknownQuery, id)
	}
	c.mu.Lock()
	qs.stopAsked = &abort
	c.mu.Unlock()
	b, _ := json.Marshal(deploy.StopRequest{Query: id, Abort: abort})
	return c.nc.Publish(deploy.QuerySubject(c.cfg.Namespace, id, "stop"), b)
}

// Close stops serving. Running queries keep running on their workers.
func (c *Coordinator) Close() error {
	for _, s := range c.subs {
		_ = s.Unsubscribe()
	}
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	c.wg.Wait()
	return nil
}

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

// costs (called with c.mu held) prices what a query measured with the infrastructure's link and
// worker prices: bytes between tiers (sender side) per GB, and each worker's
// hourly price for the time the query has held it.
func (c *Coordinator) costs(info *deploy.QueryInfo) {
	inf := c.cfg.Infra
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
		if w := c.workers[name]; w != nil {
			if wt := inf.WorkerType(w.Type); wt != nil {
				info.ComputeCost += hours * wt.Price
			}
		}
	}
}

// discardWriter is the output of the coordinator's compile, which never runs.
type discardWriter struct{}

func (discardWriter) Write(arrow.Record) error { return nil }
func (discardWriter) Close() error             { return nil }
