// Package coordinator is tierflow's coordinator. The Coordinator is a
// registry and a router: it keeps the registered workers (SHOW WORKERS) and
// expires those that stop heartbeating, routes the control subjects to
// their handlers, admits submissions (per-user limits; the capacity the
// running queries hold, shared.go), places them on the workers actually
// present (place.go, runtime/deploy) and exports metrics. Each query has a
// supervisor (supervisor*.go) with its own lock and explicit generation
// states (deploying, running, cutting over, recovering, ended): it merges
// the workers' statuses (SHOW QUERIES) into live estimates
// (runtime/control), moves the committed epoch, asks the policies about
// the query, and changes its generation for a re-plan or a recovery by the
// same steps: plan next, stop old, deploy next, cut over at the committed
// epoch. The new generation replays its streams to that epoch; the Client
// writes each epoch's results once. Data never passes through the
// coordinator: workers exchange batches peer to peer over the relay.
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
	"runtime/trace"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/deploy"
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
	// ErrNameAlive: a worker registered with the name of a worker still
	// heartbeating.
	ErrNameAlive = errors.New("coordinator: worker name in use")
	// ErrNotStopped: an abort the query's workers did not confirm in
	// time (the query may still run; the error names the workers).
	ErrNotStopped = errors.New("coordinator: query not stopped")
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
	queries map[string]*supervisor
	order   []string // query ids in submission order
	// out is the coordinator's own connection's outages (outage.go).
	out outage
	// startedAt: for a while after it, the coordinator learns running
	// queries back from their workers (relearn.go).
	startedAt time.Time
	// authority is Config.Authority, replaced by SetAuthority.
	authority atomic.Pointer[security.Authority]
	// in is the submissions under way (bounds.go).
	in intake
	// streamsMu: one submission at a time counts a user's JetStream
	// streams and makes one (ensureStreams).
	streamsMu sync.Mutex
}

// Start subscribes the coordinator to the control subjects.
func Start(cfg Config) (*Coordinator, error) {
	if cfg.Conn == nil {
		return nil, errors.New("coordinator: no NATS connection")
	}
	// Every submission is parsed here: build the parser now, not at the
	// first submission.
	go lang.Prepare()
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
	cfg.Bounds.defaults()
	c := &Coordinator{cfg: cfg, nc: cfg.Conn, stop: make(chan struct{}), workers: map[string]*deploy.WorkerInfo{}, queries: map[string]*supervisor{},
		startedAt: time.Now(), in: intake{tokens: map[string]float64{}, refilled: map[string]time.Time{}, users: map[string]*userIntake{},
			slots: make(chan struct{}, cfg.Bounds.Compilers)}}
	c.out.reconnects = c.nc.Stats().Reconnects
	c.authority.Store(cfg.Authority)
	handlers := []struct {
		subject string
		h       nats.MsgHandler
	}{
		{deploy.InNamespace(c.cfg.Namespace, deploy.RegisterSubject("*")), c.onRegister},
		{deploy.InNamespace(c.cfg.Namespace, deploy.HeartbeatSubject("*")), c.onHeartbeat},
		{deploy.InNamespace(c.cfg.Namespace, deploy.SubmitSubject("*")), c.onSubmit},
		{deploy.InNamespace(c.cfg.Namespace, deploy.SubjectWorkers), func(m *nats.Msg) { reply(m, c.WorkersFor("")) }},
		{deploy.InNamespace(c.cfg.Namespace, deploy.WorkersSubject("*")), func(m *nats.Msg) { reply(m, c.WorkersFor(lastToken(m.Subject))) }},
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
	if old := c.workers[wi.Name]; old != nil && now.Sub(old.LastSeen) < c.cfg.Expiry && (wi.DataKey == "" || old.DataKey != wi.DataKey) {
		// A name alive is its worker's: another process taking it would
		// receive that worker's deployments and speak for its parts. The
		// same process (its data key, made at start and kept in memory)
		// may register again; a restarted one waits for the old to expire.
		c.mu.Unlock()
		c.cfg.Log.Warn("registration refused: name alive", "name", wi.Name)
		reply(m, deploy.RegisterReply{Alive: true, Error: fmt.Sprintf("%v: worker %s is alive (last heard %s ago); a worker of that name may register once it has been silent for %s",
			ErrNameAlive, wi.Name, now.Sub(old.LastSeen).Round(time.Millisecond), c.cfg.Expiry)})
		return
	}
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
		w.LastSeen, w.Queries, w.Memory = time.Now(), hb.Queries, hb.Memory
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
		c.prune()
		if c.serverDown() {
			continue // no heartbeat can come: the server is away
		}
		if c.anyExpired() {
			c.settle(c.cfg.Expiry / 4)
		}
		cutoff := time.Now().Add(-c.cfg.Expiry)
		dead := map[string]deploy.WorkerInfo{}
		c.mu.Lock()
		for name, w := range c.workers {
			if w.LastSeen.Before(cutoff) {
				dead[name] = *w
				delete(c.workers, name)
			}
		}
		c.mu.Unlock()
		for name, w := range dead {
			c.cfg.Log.Warn("worker expired", "name", name)
			culprit := w.Memory.Culprit(w.MemoryBytes)
			for _, s := range c.supervisors() {
				if !s.runsOn(name) {
					continue
				}
				if s.id == culprit {
					// A poison query: failed once, with the reason, not
					// placed on the next worker to kill it too.
					s.fail(poisonError(w))
					continue
				}
				s.ask(genRecovering)
				go s.recover(name, w.LastSeen)
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
		out = append(out, c.queries[id].snapshot())
	}
	return out
}

// supervisors are the queries' supervisors in submission order.
func (c *Coordinator) supervisors() []*supervisor {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*supervisor, 0, len(c.order))
	for _, id := range c.order {
		out = append(out, c.queries[id])
	}
	return out
}

// supervisor is query id's supervisor (nil: unknown).
func (c *Coordinator) supervisor(id string) *supervisor {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queries[id]
}

// registry is what a supervisor reads of the registered workers at a
// status report: their names (what a new plan may use) and types (what
// they cost).
type registry struct {
	names []string
	types map[string]string
}

func (c *Coordinator) registry() registry {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := registry{types: make(map[string]string, len(c.workers))}
	for name, w := range c.workers {
		r.names = append(r.names, name)
		r.types[name] = w.Type
	}
	sort.Strings(r.names)
	return r
}

// forget drops workers found gone (no responders) from the registry.
func (c *Coordinator) forget(names []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, name := range names {
		delete(c.workers, name)
	}
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
	s := c.supervisor(id)
	if s == nil {
		return deploy.QueryInfo{}, false
	}
	return s.snapshot(), true
}

// lastToken is the <user> of tierflow.ctl.submit.<user> and the like.
func lastToken(subject string) string { return subject[strings.LastIndexByte(subject, '.')+1:] }

// Submit places a script's query on the registered workers, deploys every
// worker its part and starts the query. It returns once all workers have
// built their part; completion is announced on tierflow.q.<query>.done.
func (c *Coordinator) Submit(ctx context.Context, req deploy.SubmitRequest) (*deploy.Placement, error) {
	defer trace.StartRegion(ctx, "tierflow submit").End()
	trace.Log(ctx, "query", req.Query)
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
	cores := 0
	for _, w := range c.Workers() {
		ws = append(ws, deploy.Worker{Name: w.Name, Tier: w.Tier, Location: w.Location, Type: w.Type, Threads: w.ModelThreads})
		cores += max(w.CPUs, 1)
	}
	c.prune()
	c.mu.Lock()
	if _, dup := c.queries[req.Query]; dup {
		// An ended query keeps its name until it is forgotten (prune).
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: %s", ErrDuplicate, req.Query)
	}
	if err := c.admit(req.Owner, cores); err != nil {
		c.mu.Unlock()
		c.cfg.Log.Warn("submission refused", "query", req.Query, "user", req.Owner, "err", err)
		return nil, err
	}
	s := newSupervisor(c, req, deploy.QueryInfo{Query: req.Query, Owner: req.Owner, State: deploy.StateDeploying, Submitted: time.Now()})
	c.queries[req.Query] = s
	c.order = append(c.order, req.Query)
	c.mu.Unlock()
	p, err := s.deployFirst(ctx, ws)
	if err != nil {
		return nil, err
	}
	c.limitRunTime(s)
	c.cfg.Log.Info("query started", "query", req.Query, "workers", p.Workers)
	return p, nil
}

// onStatus hands a worker's status report to its query's supervisor.
func (c *Coordinator) onStatus(m *nats.Msg) {
	var st deploy.Status
	// A worker speaks for its own name and query only (its name is the
	// subject's last token, which its creds may bind it to).
	if err := json.Unmarshal(m.Data, &st); err != nil || st.Worker != lastToken(m.Subject) || st.Query != deploy.QueryOf(c.cfg.Namespace, m.Subject) {
		return
	}
	if s := c.supervisor(st.Query); s != nil {
		s.onStatus(st, c.registry())
	}
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

// onEnough stops a query gracefully when one of its workers has all the
// query needs (a full final LIMIT). Only a worker the query runs on counts.
func (c *Coordinator) onEnough(m *nats.Msg) {
	var e deploy.Enough
	if json.Unmarshal(m.Data, &e) != nil || e.Worker != lastToken(m.Subject) {
		return
	}
	id := deploy.QueryOf(c.cfg.Namespace, m.Subject)
	if s := c.supervisor(id); s != nil && s.runsOn(e.Worker) {
		_ = c.Stop(id, false)
	}
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
