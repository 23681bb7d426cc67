package deploy

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/inference/sched"
)

// The control protocol between workers, the coordinator and clients: JSON
// messages on core NATS subjects. Requests (R) expect a reply on the
// message's reply subject; the rest are plain publishes.
//
//	tierflow.ctl.register.<name>     R worker -> coordinator  WorkerInfo -> RegisterReply
//	tierflow.ctl.heartbeat.<name>      worker -> coordinator  Heartbeat
//	tierflow.ctl.submit.<user>       R client -> coordinator  SubmitRequest -> SubmitReply
//	tierflow.ctl.workers.<user>      R client -> coordinator  {} -> []WorkerInfo      (SHOW WORKERS: the user's
//	                                                          own queries on each; an admin's: all. The bare
//	                                                          tierflow.ctl.workers: no query names)
//	tierflow.ctl.queries.<user>      R client -> coordinator  {} -> []QueryInfo       (SHOW QUERIES: the user's own; an admin's: all)
//	tierflow.ctl.stop.<user>         R client -> coordinator  StopRequest -> Ack      (STOP QUERY)
//	tierflow.ctl.query               R client -> coordinator  StopRequest -> Ack      (is the query known: a
//	                                                          waiting client's liveness check)
//	tierflow.q.<query>.deploy.<name> R coordinator -> worker  DeployRequest -> Ack (the worker built its part)
//	tierflow.q.<query>.start           coordinator -> workers (every worker built: sources may start)
//	tierflow.q.<query>.stop            coordinator -> workers StopRequest
//	tierflow.q.<query>.status.<name>   worker -> coordinator  Status (while running, and once at the end)
//	tierflow.q.<query>.enough.<name>   worker -> coordinator  Enough (a final LIMIT is full: stop gracefully)
//	tierflow.u.<user>.<query>.results  sink worker -> client  Arrow IPC streams, one batch per message with
//	                                                          its epoch, commit markers per sink instance
//	                                                          (HeaderFrontier); an empty message with
//	                                                          header Tierflow-End ends them
//	tierflow.u.<user>.<query>.done     coordinator -> client  QueryInfo (finished, failed or stopped)
//
// <user> is the client's identity (natsserver.Auth.Identity: its NATS user
// name, or "anonymous" without credentials). The coordinator takes the
// submitter of a query from the subject it arrived on and trusts the NATS
// server's permissions to let each client publish only on its own
// (runtime/security spells those permissions per role). A worker's <name>
// on its subjects must be the name it registers with; a worker with creds of
// its own (nats-setup --worker NAME) may use only its own name, so it cannot
// pose as another worker nor read another's deployments. A client can stop
// only its own queries (or any, if it is one of the coordinator's admins),
// and read only its own results, under tierflow.u.<user>.
//
// Data between workers does not pass through the coordinator: it flows on
// the relay's own subjects (relay/natsrelay), worker to worker.
const (
	SubjectRegister  = "tierflow.ctl.register"  // .<name>
	SubjectHeartbeat = "tierflow.ctl.heartbeat" // .<name>
	SubjectSubmit    = "tierflow.ctl.submit"    // .<user>
	SubjectWorkers   = "tierflow.ctl.workers"
	SubjectQueries   = "tierflow.ctl.queries" // .<user>
	SubjectStop      = "tierflow.ctl.stop"    // .<user>
	SubjectQuery     = "tierflow.ctl.query"
	// HeaderEnd marks the last message on a results subject; its value is
	// the number of rows sent.
	HeaderEnd = "Tierflow-End"
	// Every results message names the deployment generation that sent it
	// (HeaderGen: 0 first, one more after each recovery), the sink
	// instance (HeaderSink, "worker/instance") and how many sink instances
	// and sink workers that generation has (HeaderSinks, HeaderSinkWorkers);
	// a batch carries its epoch (HeaderEpoch) and a commit marker, an empty
	// message, the instance's input frontier (HeaderFrontier): every row of
	// an earlier epoch has been sent. The client writes an epoch once every
	// sink instance of the newest generation has passed it, and never
	// writes an epoch twice (runtime/coordinator's Client).
	HeaderGen         = "Tierflow-Gen"
	HeaderSink        = "Tierflow-Sink"
	HeaderSinks       = "Tierflow-Sinks"
	HeaderSinkWorkers = "Tierflow-Sink-Workers"
	HeaderEpoch       = "Tierflow-Epoch"
	HeaderFrontier    = "Tierflow-Frontier"
)

// ErrName: a worker or query name is not usable as a subject token.
var ErrName = errors.New("deploy: bad name")

// InNamespace is subject s (one of the tierflow.* subjects above) in
// namespace ns: tierflow.<ns>.ctl.submit for tierflow.ctl.submit. A
// coordinator, its workers and clients share one namespace and see nothing
// of another's, so several deployments (two `tierflow run`s) can share a
// NATS server. "" is the default namespace, the subjects as listed.
func InNamespace(ns, s string) string {
	if ns == "" {
		return s
	}
	return "tierflow." + ns + strings.TrimPrefix(s, "tierflow")
}

// QuerySubject is tierflow[.<ns>].q.<query>.<what>.
func QuerySubject(ns, query, what string) string {
	return InNamespace(ns, "tierflow.q."+query+"."+what)
}

// QueryOf is the query of a subject QuerySubject(ns, query, ...) made
// ("" if it is not one).
func QueryOf(ns, subject string) string {
	rest, ok := strings.CutPrefix(subject, InNamespace(ns, "tierflow.q."))
	if !ok {
		return ""
	}
	q, _, _ := strings.Cut(rest, ".")
	return q
}

// RegisterSubject is where worker name registers.
func RegisterSubject(name string) string { return SubjectRegister + "." + name }

// HeartbeatSubject is where worker name heartbeats.
func HeartbeatSubject(name string) string { return SubjectHeartbeat + "." + name }

// SubmitSubject is where client user submits queries.
func SubmitSubject(user string) string { return SubjectSubmit + "." + user }

// WorkersSubject is where client user lists the workers (SHOW WORKERS:
// the queries each runs cut to the user's own; an admin's: all).
func WorkersSubject(user string) string { return SubjectWorkers + "." + user }

// QueriesSubject is where client user lists its queries.
func QueriesSubject(user string) string { return SubjectQueries + "." + user }

// StopSubject is where client user stops queries.
func StopSubject(user string) string { return SubjectStop + "." + user }

// UserSubject is tierflow.u.<user>.<query>.<what>: what a query sends its
// submitter (results, done), readable by that user only.
func UserSubject(user, query, what string) string {
	return "tierflow.u." + user + "." + query + "." + what
}

// DeploySubject is where worker name receives its part of query.
func DeploySubject(ns, query, name string) string {
	return QuerySubject(ns, query, "deploy") + "." + name
}

// reserved are the protocol's own second tokens (tierflow.ctl..., .q.,
// .u., .relay.). No name may be one: the roles' permissions match any
// namespace with a wildcard (tierflow.*.ctl.submit.<user>), which would
// otherwise also match a default-namespace subject whose query, user or
// namespace is such a name (tierflow.q.ctl.deploy.w1 for a query "ctl").
var reserved = map[string]bool{"ctl": true, "q": true, "u": true, "relay": true}

// ValidName checks a worker, query, user or namespace name: letters,
// digits, '-' and '_' (a NATS subject token and a relay query id), at most
// 64 bytes, and not one of the protocol's own tokens (ctl, q, u, relay).
func ValidName(kind, s string) error {
	if s == "" || len(s) > 64 {
		return fmt.Errorf("%w: %s name %q must have 1 to 64 bytes", ErrName, kind, s)
	}
	if reserved[s] {
		return fmt.Errorf("%w: %s name %q is reserved for tierflow's subjects (ctl, q, u, relay)", ErrName, kind, s)
	}
	for i, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return fmt.Errorf("%w: %s name %q has %q at byte %d (want letters, digits, '-' or '_')", ErrName, kind, s, r, i)
		}
	}
	return nil
}

// WorkerInfo is what a worker tells the coordinator about itself, and what
// SHOW WORKERS lists.
type WorkerInfo struct {
	Name        string   `json:"name"`
	Tier        string   `json:"tier"`
	Location    string   `json:"location,omitempty"`
	Type        string   `json:"type,omitempty"`
	CPUs        int      `json:"cpus"`
	GPUs        []string `json:"gpus,omitempty"`
	MemoryBytes uint64   `json:"memory_bytes,omitempty"`
	// Metrics is the worker's Prometheus endpoint, if it serves one.
	Metrics string `json:"metrics,omitempty"`
	// Sched is the policy of the worker's inference scheduler (naive,
	// deepquery): whether its best-effort work yields to real-time work.
	Sched string `json:"sched,omitempty"`
	// DataKey is the public half of an nkey user key the worker made at
	// start and keeps in memory: the coordinator mints each of the
	// worker's query parts a data user on it (Access.JWT), which only this
	// worker can then connect as.
	DataKey string `json:"data_key,omitempty"`
	// ModelThreads is the intra-op threads its model sessions run with
	// (its share of the machine's cores): the planner takes the variants'
	// latency profiles of that thread count.
	ModelThreads int `json:"model_threads,omitempty"`
	// Set by the coordinator.
	Registered time.Time `json:"registered"`
	LastSeen   time.Time `json:"last_seen"`
	Queries    []string  `json:"queries,omitempty"`
	// Memory is the worker's memory as of its last heartbeat.
	Memory *WorkerMemory `json:"memory,omitempty"`
}

// RegisterReply accepts a worker and says how often to heartbeat.
type RegisterReply struct {
	HeartbeatMs int64  `json:"heartbeat_ms"`
	Error       string `json:"error,omitempty"`
	// Alive: refused because a worker of that name still heartbeats (a
	// restarted worker registers once its old self has expired).
	Alive bool `json:"alive,omitempty"`
}

// Heartbeat says a worker is alive and what it runs.
type Heartbeat struct {
	Name    string   `json:"name"`
	Queries []string `json:"queries,omitempty"`
	// Parts describe the queries the coordinator asked about (Ack.Describe):
	// a restarted coordinator learns its running queries back from them.
	Parts []Part `json:"parts,omitempty"`
	// Memory is what the worker and its queries hold now.
	Memory *WorkerMemory `json:"memory,omitempty"`
}

// SubmitRequest asks the coordinator to plan and deploy a script's query.
type SubmitRequest struct {
	// Query names the query; the client picks it so that it can subscribe
	// to the results before anything runs.
	Query  string `json:"query"`
	Script Script `json:"script"`
	// Owner is who submitted the query: the coordinator sets it from the
	// subject the request came on, whatever the client wrote here.
	Owner string `json:"owner,omitempty"`
}

// SubmitReply says where the query runs, or why it does not.
type SubmitReply struct {
	Query     string     `json:"query"`
	Placement *Placement `json:"placement,omitempty"`
	Error     string     `json:"error,omitempty"`
	ErrorKind string     `json:"error_kind,omitempty"` // KindInput, KindLimit, KindQuery or ""
}

// DeployRequest gives one worker its part of a query.
type DeployRequest struct {
	Query     string    `json:"query"`
	Script    Script    `json:"script"`
	Placement Placement `json:"placement"`
	// Generation counts the query's deployments: 0 at submission, one more
	// each time the coordinator re-deploys it (a lost worker). A worker
	// drops its part of an older generation before it builds a newer one,
	// and the relay subjects of each generation are its own.
	Generation int `json:"generation,omitempty"`
	// Results is the subject the sink sends the client its rows on.
	Results string `json:"results"`
	// Limits the worker enforces on its part (memory, rows in flight).
	Limits Limits `json:"limits,omitzero"`
	// Owner submitted the query at Submitted: the worker keeps both for a
	// restarted coordinator (Part).
	Owner     string    `json:"owner,omitempty"`
	Submitted time.Time `json:"submitted,omitzero"`
	// Access is the owner's authority over data subjects: the worker
	// builds the part's NATS streams and sinks with it, never with its own.
	Access Access `json:"access,omitzero"`
}

// ExecPart is what a worker's executor hooks (the model runtime) know of the
// query part they complete: the query, the plan's variants, its scheduling
// class and latency bound, and the worker's inference scheduler, which
// every query on the worker shares (nil: each model call runs as it comes).
type ExecPart struct {
	Query     string
	Variants  map[string]string
	Priority  string
	LatencyMs float64
	Scheduler *sched.Scheduler
}

// Enough is a worker's request to stop a query gracefully because what it
// runs has all it needs (a full final LIMIT).
type Enough struct {
	Query  string `json:"query"`
	Worker string `json:"worker"`
}

// StopRequest stops a query: gracefully (sources end, the rest drains and
// the results so far are complete) or, with Abort, at once.
type StopRequest struct {
	Query string `json:"query"`
	Abort bool   `json:"abort,omitempty"`
	// Generation, when set (OnlyGeneration), stops only that generation's
	// parts: a recovery aborts the old deployment without touching the new.
	Generation     int  `json:"generation,omitempty"`
	OnlyGeneration bool `json:"only_generation,omitempty"`
}

// Ack answers a request that returns nothing else.
type Ack struct {
	Error     string `json:"error,omitempty"`
	ErrorKind string `json:"error_kind,omitempty"`
	// Said, in the answer to a stop, is what became of the query (aborted
	// on which workers, had already ended, still draining).
	Said string `json:"said,omitempty"`
	// Describe, in the answer to a heartbeat, names queries the worker
	// runs that the coordinator does not know (it was restarted): the
	// next heartbeat describes them (Heartbeat.Parts).
	Describe []string `json:"describe,omitempty"`
	// StopWaitMs and BuildMs, in the answer to a deployment, are how long
	// the worker waited for the query's older generation to stop and then
	// built its part (compile, model sessions, relay, dataflow): the
	// coordinator's breakdown of a cut-over (control.CutOver).
	StopWaitMs float64 `json:"stop_wait_ms,omitempty"`
	BuildMs    float64 `json:"build_ms,omitempty"`
}

// Query and worker states.
const (
	StateDeploying = "deploying"
	StateRunning   = "running"
	StateFinished  = "finished"
	StateFailed    = "failed"
	StateStopped   = "stopped"
)

// Status is a worker's report on its part of a query.
type Status struct {
	Query     string                   `json:"query"`
	Worker    string                   `json:"worker"`
	State     string                   `json:"state"`
	Error     string                   `json:"error,omitempty"`
	ErrorKind string                   `json:"error_kind,omitempty"`
	Operators []dataflow.InstanceStats `json:"operators,omitempty"`
	Links     []relay.LinkStats        `json:"links,omitempty"`
	// ResultRows counts the rows this worker's sink sent to the client.
	ResultRows int64 `json:"result_rows,omitempty"`
	// LateRows were dropped by this worker's windows (behind the
	// watermark); BadRows skipped by its sources (--on-error skip), the
	// first few with where and why in Problems.
	LateRows int64    `json:"late_rows,omitempty"`
	BadRows  int64    `json:"bad_rows,omitempty"`
	Problems []string `json:"problems,omitempty"`
	// Dropped is everything this worker's part dropped, by reason
	// (dataflow.DropReasons).
	Dropped dataflow.DropCounts `json:"dropped,omitempty"`
	// DroppedAt, in a part's last status (not running), is what of
	// Dropped it dropped of rows whose epoch is known, by epoch: a
	// re-plan's cut-over takes off what the part dropped at epochs the
	// next generation replays (dataflow.Drops).
	DroppedAt map[dataflow.Epoch]dataflow.DropCounts `json:"dropped_at,omitempty"`
	// RTTNs is the worker's round trip to its NATS server, measured at
	// this report: the coordinator adds a link's two ends for its RTT.
	RTTNs int64 `json:"rtt_ns,omitempty"`
	// Generation is the deployment the report is about (DeployRequest).
	Generation int `json:"generation,omitempty"`
	// SinkFrontier, on a worker that holds sink instances, is the smallest
	// input frontier among them: every result row of an earlier epoch has
	// been sent (HasSinkFrontier says it is known).
	SinkFrontier    uint64 `json:"sink_frontier,omitempty"`
	HasSinkFrontier bool   `json:"has_sink_frontier,omitempty"`
	// Positions are where this worker's JetStream sources stood (by
	// stream) as they took batches since its last report: the
	// coordinator keeps them for a recovery (Script.Positions).
	Positions map[string]sources.Positions `json:"positions,omitempty"`
	// Sched is what the worker's inference scheduler gave the query: its
	// model batches' busy share of the worker, rows, waits (nil: no model
	// call ran here).
	Sched *sched.QueryStats `json:"sched,omitempty"`
}

// QueryInfo is the coordinator's view of a query: SHOW QUERIES and the done
// message.
type QueryInfo struct {
	Query string `json:"query"`
	// Owner submitted the query (its NATS identity).
	Owner     string    `json:"owner,omitempty"`
	State     string    `json:"state"`
	Error     string    `json:"error,omitempty"`
	ErrorKind string    `json:"error_kind,omitempty"` // KindInput: the query's input is to blame; KindLimit: it went past a limit; KindQuery: its own computation failed
	Submitted time.Time `json:"submitted"`
	// Started is when every worker had built its part and the sources were
	// let go; Ended when the last worker finished (the run's window is
	// between the two).
	Started time.Time `json:"started,omitzero"`
	Ended   time.Time `json:"ended,omitzero"`
	// Workers runs the query's instances (dataflow worker i is Workers[i]).
	Workers   []string   `json:"workers"`
	Placement *Placement `json:"placement,omitempty"`
	// Planner says how the query was placed: by the optimizer (with its
	// estimates) or by the default rules (and why not the optimizer).
	Planner string `json:"planner,omitempty"`
	// Estimate is the optimizer's plan in measurable units (nil when the
	// default rules placed the query).
	Estimate  *Estimate                `json:"estimate,omitempty"`
	Operators []dataflow.InstanceStats `json:"operators,omitempty"`
	Links     []relay.LinkStats        `json:"links,omitempty"`
	// WorkerStates by worker name.
	WorkerStates map[string]string `json:"worker_states,omitempty"`
	ResultRows   int64             `json:"result_rows"`
	// LateRows, BadRows, Problems and Dropped add up the workers' (Status).
	LateRows int64               `json:"late_rows,omitempty"`
	BadRows  int64               `json:"bad_rows,omitempty"`
	Problems []string            `json:"problems,omitempty"`
	Dropped  dataflow.DropCounts `json:"dropped,omitempty"`
	// Earlier holds what the query's ended generations (before a re-plan
	// or recovery) measured at their sinks; Operators are the running
	// generation's. Dropped already counts every generation.
	Earlier *Earlier `json:"earlier,omitempty"`
	// NetworkCost is the metered bytes between tiers times the link prices
	// of the infrastructure (per GB of 2^30 bytes, as the planner's KB x
	// 3600 / 1024^2 prices an estimate); ComputeCost the hours the query held
	// its workers times their hourly prices. Both need the coordinator's
	// --infra; they are the measured side of a plan's estimates.
	NetworkCost float64 `json:"network_cost"`
	ComputeCost float64 `json:"compute_cost"`
	// LatencySLOMs is the query's LATENCY bound (0: none): the sinks count
	// the rows over it.
	LatencySLOMs float64 `json:"latency_slo_ms,omitempty"`
	// Priority is the query's WITH (PRIORITY ...): REALTIME, BEST_EFFORT
	// or "" (scheduled as any other).
	Priority string `json:"priority,omitempty"`
	// Sched is, per worker, what its inference scheduler gave the query
	// (busy share of the worker, rows, waits, best-effort progress).
	Sched map[string]sched.QueryStats `json:"sched,omitempty"`
	// InputRows, for a BEST_EFFORT query over files, is the rows its scans
	// will read; Progress the share read so far and ETASeconds the time
	// left at the rate so far (best-effort work yields to real-time work,
	// so it is the one to ask "when").
	InputRows  int64   `json:"input_rows,omitempty"`
	Progress   float64 `json:"progress,omitempty"`
	ETASeconds float64 `json:"eta_s,omitempty"`
	// Estimates are the coordinator's live, smoothed measurements
	// (runtime/control), updated as workers report.
	Estimates *control.Estimates `json:"estimates,omitempty"`
	// Generation counts the query's re-deployments; Committed is the
	// epoch every sink instance has passed (all results before it sent);
	// Recoveries lists the workers lost while it ran and how it resumed.
	Generation int                `json:"generation,omitempty"`
	Committed  uint64             `json:"committed_epoch,omitempty"`
	Recoveries []control.Recovery `json:"recoveries,omitempty"`
	// ResumeSeq is, by JetStream stream, the stream sequence a recovery
	// from Committed would start at (ResumeSeqs): it trails Committed by
	// up to a status interval, as sources report their positions with
	// their workers' status; a stream not in it would replay from its
	// start.
	ResumeSeq map[string]uint64 `json:"resume_seq,omitempty"`
	// Replans is the plan history: each cut-over to a new plan a policy
	// asked for (runtime/control).
	Replans []control.Replan `json:"replans,omitempty"`
	// SLOTimeline, for a query the latency-SLO policy adapts, is each
	// source's bandwidth (estimated and shaped) and the variants run, a
	// sample a second.
	SLOTimeline []control.SLOSample `json:"slo_timeline,omitempty"`
}

// EndToEnd is the query's end-to-end latency over every row its sinks
// wrote, and how many of them were over LATENCY.
func (q *QueryInfo) EndToEnd() (dataflow.Histogram, int64) { return control.EndToEnd(q.Operators) }

// Summary is the run's summary (`--stats`).
func (q *QueryInfo) Summary() control.Summary {
	var elapsed time.Duration
	if !q.Ended.IsZero() {
		elapsed = q.Ended.Sub(q.Submitted)
	}
	run := control.Run{Operators: q.Operators, ResultRows: q.ResultRows, Dropped: q.Dropped,
		LatencySLO: time.Duration(q.LatencySLOMs * float64(time.Millisecond)), Elapsed: elapsed}
	if q.Earlier != nil {
		run.EarlierEndToEnd, run.EarlierSLOMissRows = q.Earlier.EndToEnd, q.Earlier.SLOMissRows
	}
	s := control.Summarize(run)
	s.Recoveries = append(s.Recoveries, q.Recoveries...)
	s.Replans = append(s.Replans, q.Replans...)
	s.SLOTimeline = q.SLOTimeline
	return s
}

// Earlier is the end-to-end latency and the rows over the LATENCY bound
// that a query's ended generations' sinks measured.
type Earlier struct {
	EndToEnd    dataflow.Histogram `json:"end_to_end"`
	SLOMissRows int64              `json:"slo_miss_rows"`
	// Sides are the rows their source-side adaptations sent at each side
	// (the side_<n> counters of operators/ml's Adapt) and the rows their
	// model calls ran on each variant (ran_<variant>, when rows of a
	// smaller side ran on the variant of that side), as last reported.
	Sides map[string]int64 `json:"sides,omitempty"`
}

// AddSides adds the side_<n> and ran_<variant> counters of ops to e.Sides.
func (e *Earlier) AddSides(ops []dataflow.InstanceStats) {
	for _, op := range ops {
		for k, v := range op.Counters {
			if strings.HasPrefix(k, "side_") || strings.HasPrefix(k, "ran_") {
				if e.Sides == nil {
					e.Sides = map[string]int64{}
				}
				e.Sides[k] += v
			}
		}
	}
}

// Sides are the rows the query's source-side adaptations sent at each
// side over all its generations (keys side_<n>; empty for a query
// without a LATENCY bound or smaller input sizes), and the rows its model
// calls ran on each variant where rows ran on the variant of their side
// (keys ran_<variant>).
func (q *QueryInfo) Sides() map[string]int64 {
	e := &Earlier{}
	if q.Earlier != nil {
		e.AddSides([]dataflow.InstanceStats{{Counters: q.Earlier.Sides}})
	}
	e.AddSides(q.Operators)
	return e.Sides
}

// TierBytes sums the bytes the query's links carried between tiers, keyed
// "from->to" (sender side of each link, so every byte counts once).
func (q *QueryInfo) TierBytes() map[string]uint64 {
	out := map[string]uint64{}
	if q.Placement == nil {
		return out
	}
	for _, l := range q.Links {
		if l.Direction != relay.Send || int(l.Link.Edge) >= len(q.Placement.Edges) {
			continue
		}
		from, to := q.Placement.endTiers(int(l.Link.Edge))
		out[from+"->"+to] += l.Bytes
	}
	return out
}
