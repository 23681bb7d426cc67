package coordinator

import (
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/planner/physical"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// genState is where a query's supervisor stands with its generations.
type genState int

const (
	// genDeploying: the first generation is being placed and built; the
	// query has not started (a lost worker fails it, nothing re-plans it).
	genDeploying genState = iota
	// genRunning: a generation runs; the policies are asked about it.
	genRunning
	// genCuttingOver: a policy asked for a new plan and the next
	// generation is being planned, deployed and cut over to.
	genCuttingOver
	// genRecovering: a worker, the NATS server or the coordinator was
	// lost, and the next generation is being planned, deployed and cut
	// over to, from the committed epoch.
	genRecovering
	// genEnded: the query finished, stopped or failed; its record stays.
	genEnded
)

func (g genState) String() string {
	return [...]string{"deploying", "running", "cutting over", "recovering", "ended"}[g]
}

// supervisor runs one query: it merges its workers' statuses, moves its
// committed epoch, asks the policies about it, and changes its generation
// (a re-plan or a recovery: supervisor_generation.go). It has its own lock,
// so one query's work never waits on another's.
//
// Lock order: a coordinator's mu may be held while a supervisor's mu is
// taken (the registry reads its queries), never the other way round: a
// supervisor asks the coordinator for workers or placements with its own
// mu released.
type supervisor struct {
	c *Coordinator
	// id is the query's name (info.Query, read without the lock).
	id string
	// redeploys serialises the query's changes of generation.
	redeploys sync.Mutex

	mu    sync.Mutex
	state genState
	info  deploy.QueryInfo
	// status is each worker's last status in the current generation.
	status map[string]deploy.Status
	// closing are the ending generation's last statuses, from the start
	// of a change of generation until its parts have stopped
	// (closeGeneration).
	closing map[string]deploy.Status
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
	// replayable: every stream of the query replays (files, JetStream),
	// so a re-plan loses nothing; planned is when the current generation
	// was deployed and decided when the policy last ran.
	replayable bool
	planned    time.Time
	// policies are the per-query policies attached to the query, each
	// with its own state (supervisor_decide.go); kept backs them off
	// after a re-plan that kept the plan.
	policies []attachment
	kept     keptBackoff
	// plan is the optimizer's plan while the query deploys or runs: the
	// capacity it holds on its workers, which later queries plan around.
	plan *physical.Plan
	// assumed is what plan assumed of the live estimates (the drift
	// policy's other side; nil when placed by rules); variants are the
	// variants the current generation runs.
	assumed  *control.Assumed
	variants map[string]string
	// holds is what the policies' decisions asked of every later plan:
	// the live numbers measured so far (merged: every re-plan plans with
	// all of them), class mixes and pinned variants. cutting is the
	// re-plan whose rows do not flow yet (its cut-over time is not known).
	holds   control.Constraints
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
	// unseenBelow: generations below it sent results their client did not
	// get (it asked to resume after an outage). Their sinks' frontiers say
	// what the sinks sent, not what the client wrote, so they no longer
	// move the committed epoch (outageEpoch).
	unseenBelow int
	// jetstream are the subjects of the query's JetStream streams and
	// sinks: its parts' data users may create streams over them (mint).
	jetstream []string
	// streams: the stream each JetStream subject is in (ensureStreams).
	streams map[string]string
	// over is closed when the query ends (a stop waits on it).
	over chan struct{}
}

// pendingRecovery is a recovery whose rows do not flow yet.
type pendingRecovery struct {
	rec    control.Recovery
	lostAt time.Time
}

// newSupervisor is the supervisor of a query submitted as req, deploying.
func newSupervisor(c *Coordinator, req deploy.SubmitRequest, info deploy.QueryInfo) *supervisor {
	return &supervisor{c: c, id: info.Query, info: info, status: map[string]deploy.Status{}, live: control.NewLive(),
		rtt: map[string]time.Duration{}, req: req, front: map[string]uint64{}, over: make(chan struct{})}
}

// started: the query's first generation started and it has not ended
// (with s.mu held).
func (s *supervisor) started() bool {
	return s.state != genDeploying && s.state != genEnded
}

// ended: the query finished, stopped or failed (with s.mu held).
func (s *supervisor) ended() bool { return s.state == genEnded }

// end (with s.mu held) ends the query in state (deploy.StateFinished,
// StateStopped or StateFailed), with the error that failed it.
func (s *supervisor) end(state, err, kind string) {
	s.info.State, s.info.Ended = state, time.Now()
	if state == deploy.StateFailed {
		s.info.Error, s.info.ErrorKind = err, kind
	}
	if s.state != genEnded && s.over != nil {
		close(s.over)
	}
	s.state = genEnded
}

// snapshot is a copy of the query's info.
func (s *supervisor) snapshot() deploy.QueryInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.info
}

// isEnded is ended, taking the lock.
func (s *supervisor) isEnded() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended()
}

// fail ends the query as failed, stops what runs of it and tells the client.
func (s *supervisor) fail(err error) {
	s.mu.Lock()
	if s.ended() {
		s.mu.Unlock()
		return
	}
	s.end(deploy.StateFailed, err.Error(), deploy.KindOf(err))
	info := s.info
	s.mu.Unlock()
	s.publishStop(deploy.StopRequest{Query: s.id, Abort: true})
	s.done(info)
}

// endStopped ends, as stopped, a query a stop reached before it started
// (its parts' builds end at the stop, and their deployment fails for
// it): false when no stop was asked or it had ended.
func (s *supervisor) endStopped() bool {
	s.mu.Lock()
	if s.ended() || s.stopAsked == nil {
		s.mu.Unlock()
		return false
	}
	s.end(deploy.StateStopped, "", "")
	info := s.info
	s.mu.Unlock()
	s.publishStop(deploy.StopRequest{Query: s.id, Abort: true})
	s.done(info)
	return true
}

// done tells the client the query ended.
func (s *supervisor) done(info deploy.QueryInfo) {
	s.dropOutageCount()
	s.detach()
	c := s.c
	b, _ := json.Marshal(info)
	_ = c.nc.Publish(deploy.InNamespace(c.cfg.Namespace, deploy.UserSubject(info.Owner, info.Query, "done")), b)
	_ = c.nc.Flush()
	c.cfg.Log.Info("query ended", "query", info.Query, "state", info.State, "error", info.Error)
}

// publishStop tells the query's workers to stop (what req names of it).
func (s *supervisor) publishStop(req deploy.StopRequest) {
	b, _ := json.Marshal(req)
	_ = s.c.nc.Publish(deploy.QuerySubject(s.c.cfg.Namespace, s.id, "stop"), b)
}

// stop asks the query's workers to stop it, gracefully or (abort) at once,
// and remembers it for a generation deploying meanwhile.
func (s *supervisor) stop(abort bool) error {
	s.mu.Lock()
	s.stopAsked = &abort
	s.mu.Unlock()
	b, _ := json.Marshal(deploy.StopRequest{Query: s.id, Abort: abort})
	return s.c.nc.Publish(deploy.QuerySubject(s.c.cfg.Namespace, s.id, "stop"), b)
}

// runsOn: the query has not ended and worker runs a part of it.
func (s *supervisor) runsOn(worker string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.ended() && slices.Contains(s.info.Workers, worker)
}

// positionsCopy is a copy of the positions the query's sources reached.
func (s *supervisor) positionsCopy() map[string]sources.Positions {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.positions) == 0 {
		return nil
	}
	out := make(map[string]sources.Positions, len(s.positions))
	for k, v := range s.positions {
		out[k] = slices.Clone(v)
	}
	return out
}

// addPositions (with s.mu held) adds where sources stood to the query's
// positions.
func (s *supervisor) addPositions(pos map[string]sources.Positions) {
	for name, ps := range pos {
		if s.positions == nil {
			s.positions = map[string]sources.Positions{}
		}
		for _, p := range ps {
			s.positions[name] = s.positions[name].Add(p)
		}
	}
}
