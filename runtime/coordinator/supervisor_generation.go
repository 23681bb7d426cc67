package coordinator

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/planner/physical"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/policy"
)

// A query changes generation for one of two reasons, by the same steps:
// a recovery (a worker, the NATS server or the coordinator was lost) and a
// re-plan (a policy asked for a new plan). Both plan the next generation
// (planNext), stop the old one (stopOld), deploy the next (deployNext) and
// cut over to it at the committed epoch (cutOver): the new parts replay
// their streams to that epoch and the client writes each epoch once, so no
// row is lost or duplicated.

// change is why a query moves to a new generation: the loss of worker lost
// (or of control.LostServer, control.LostCoordinator) at at, a recovery;
// or a policy's decision d taken on generation fromGen at at, a re-plan.
type change struct {
	lost    string
	at      time.Time
	d       *control.Decision
	fromGen int
}

func (ch change) replan() bool { return ch.d != nil }

// current is what a change of generation starts from.
type current struct {
	gen       int
	workers   []string
	placement *deploy.Placement
	variants  map[string]string
	plan      *physical.Plan
	// epoch is where the next generation resumes (the committed epoch,
	// or a client's written one after an outage); req the submission.
	epoch     uint64
	req       deploy.SubmitRequest
	submitted time.Time
	// cons is what the next plan is placed under: what earlier decisions
	// asked of every later plan, then the change's decision.
	cons control.Constraints
}

// deployFirst places the query on ws, has every worker build its part of
// its first generation and starts it: the query runs.
func (s *supervisor) deployFirst(ctx context.Context, ws []deploy.Worker) (*deploy.Placement, error) {
	c := s.c
	req := s.req
	pl, err := c.place(ctx, req, ws, control.Constraints{})
	if err != nil {
		err = scrub(err, req.Script)
		s.fail(err)
		return nil, err
	}
	// The policies see the placement first: one may ask for another
	// first plan (policy.FirstPlanner), placed before anything deploys.
	s.attach(pl.forPolicies(s.id, c.nc, false))
	if next, cons, ok := s.firstPlan(ctx, ws); ok {
		pl = next
		s.mu.Lock()
		s.holds.ClassMix, s.holds.Variants = cons.ClassMix, cons.Variants
		s.mu.Unlock()
		s.attach(pl.forPolicies(s.id, c.nc, false))
	}
	p, script := pl.placement, pl.script
	s.mu.Lock()
	s.info.Placement, s.info.Workers, s.info.Planner, s.info.Estimate, s.info.LatencySLOMs = p, p.Workers, pl.note, pl.estimate, pl.sloMs
	s.info.Priority, s.info.InputRows = script.Priority, pl.inputRows
	s.plan, s.assumed, s.variants = pl.plan, pl.assumed, script.Variants
	s.bound = pl.bound
	submitted := s.info.Submitted
	s.mu.Unlock()

	if _, _, err := c.deployAll(ctx, s.id, req.Owner, submitted, script, p, 0); err != nil {
		if s.endStopped() {
			return nil, fmt.Errorf("%w: query %s was stopped before it started", ErrDeploy, s.id)
		}
		err = scrub(err, req.Script)
		s.fail(err)
		return nil, err
	}
	replayable := len(coreNATSOf(pl.bound)) == 0
	s.mu.Lock()
	ended, why := s.ended(), s.info.Error
	if !ended {
		s.state, s.info.State, s.info.Started = genRunning, deploy.StateRunning, time.Now()
		s.planned, s.replayable = s.info.Started, replayable
	}
	s.mu.Unlock()
	if ended {
		return nil, fmt.Errorf("%w: %s ended while deploying: %s", ErrDeploy, s.id, why)
	}
	if err := c.nc.Publish(deploy.QuerySubject(c.cfg.Namespace, s.id, "start"), nil); err != nil {
		s.fail(err)
		return nil, err
	}
	return p, nil
}

// firstPlan places the query again under what its policies ask of its
// first plan (policy.FirstPlanner), before anything is deployed: ok is
// false when none asks, or the plan they ask for cannot be placed (the
// first one stands; the policies ask again once the query runs).
func (s *supervisor) firstPlan(ctx context.Context, ws []deploy.Worker) (placed, control.Constraints, bool) {
	var cons control.Constraints
	var why []string
	s.mu.Lock()
	for _, a := range s.policies {
		if f, ok := a.state.(policy.FirstPlanner); ok {
			if d := f.FirstPlan(); d != nil {
				cons.Add(d.Constraints)
				why = append(why, d.Reason)
			}
		}
	}
	s.mu.Unlock()
	if len(why) == 0 {
		return placed{}, cons, false
	}
	next, err := s.c.place(ctx, s.req, ws, cons)
	if err != nil {
		s.c.cfg.Log.Warn("first plan kept", "query", s.id, "asked", strings.Join(why, "; "), "err", err)
		return placed{}, cons, false
	}
	s.c.cfg.Log.Info("first plan", "query", s.id, "reason", strings.Join(why, "; "))
	return next, cons, true
}

// ask (taking s.mu) marks a change of generation as asked for: no policy
// runs until it is done.
func (s *supervisor) ask(g genState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started() {
		s.state = g
	}
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
func (s *supervisor) recover(lost string, lostAt time.Time) {
	s.redeploy(change{lost: lost, at: lostAt})
}

// replan cuts a query over to a new plan a policy asked for (decided on
// generation gen): placed again without the excluded workers, deployed as
// the next generation exactly as a recovery is, so the cut-over is at the
// committed epoch and loses or duplicates no row.
func (s *supervisor) replan(d *control.Decision, gen int) {
	s.redeploy(change{at: time.Now(), d: d, fromGen: gen})
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.info.Generation != gen {
		return
	}
	// The plan was kept (no other plan is feasible, or it is the same): a
	// policy that sees the same numbers asks the same again, so it is not
	// asked again for a while, longer each time, until the query moves
	// to another generation.
	if s.kept.gen != gen {
		s.kept = keptBackoff{gen: gen}
	}
	s.kept.wait = min(max(2*s.kept.wait, minKeptBackoff), maxKeptBackoff)
	s.kept.until = time.Now().Add(s.kept.wait)
}

// redeploy places a running query again and deploys it as a new
// generation, for ch.
func (s *supervisor) redeploy(ch change) {
	s.redeploys.Lock()
	defer s.redeploys.Unlock()
	s.ask(stateOf(ch))
	defer func() {
		s.mu.Lock()
		if s.started() {
			s.state = genRunning
		}
		s.mu.Unlock()
	}()
	old, ok := s.begin(ch)
	if !ok {
		return
	}
	ws, ok := s.workersFor(ch, old)
	if !ok {
		return
	}
	next, live, err := s.planNext(old, ws)
	cut := &control.CutOver{Decided: ch.at, PlanMs: msSince(ch.at)}
	if ch.replan() && (err != nil || samePlan(old.placement, next.placement, old.variants, next.script.Variants)) {
		s.keep(ch, old, next, live, err)
		return
	}
	gen, lost, ok := s.openGeneration(ch, old, next, err)
	if !ok {
		return
	}
	if err == nil {
		s.attach(next.forPolicies(s.id, s.c.nc, false))
	}
	if ch.replan() {
		s.c.cfg.Log.Info("re-planning query", "query", s.id, "reason", ch.d.Reason, "generation", gen, "epoch", old.epoch, "plan_ms", cut.PlanMs)
	} else {
		s.c.cfg.Log.Warn("recovering query", "query", s.id, "lost", lost, "generation", gen, "epoch", old.epoch)
	}
	defer s.countLost(old.req.Script, lost)()
	epoch := s.stopOld(ch, old, err == nil, cut)
	if err == nil {
		var again bool
		if again, err = s.deployNext(ch, old, next, gen, epoch, cut); again {
			return
		}
	}
	if err != nil {
		s.fail(fmt.Errorf("re-deploying %s (generation %d): %w", s.id, gen, err))
		return
	}
	s.cutOver(ch, old, next, epoch, cut)
	s.c.cfg.Log.Info("query re-deployed", "query", s.id, "workers", next.placement.Workers, "generation", gen)
}

// stateOf is the state of a query while ch is under way.
func stateOf(ch change) genState {
	if ch.replan() {
		return genCuttingOver
	}
	return genRecovering
}

// begin checks that ch still applies (the query runs; a recovery's worker
// is one of its own; a re-plan's generation still runs) and takes what the
// change starts from. A recovery of a query that had not started fails it.
func (s *supervisor) begin(ch change) (current, bool) {
	s.mu.Lock()
	switch {
	case s.ended():
		s.mu.Unlock()
		return current{}, false
	case !ch.replan() && ch.lost != control.LostServer && ch.lost != control.LostCoordinator && !slices.Contains(s.info.Workers, ch.lost):
		s.mu.Unlock()
		return current{}, false
	case !ch.replan() && s.state == genDeploying:
		s.mu.Unlock()
		s.fail(fmt.Errorf("worker %s stopped heartbeating", ch.lost))
		return current{}, false
	case ch.replan() && (s.info.Generation != ch.fromGen || s.state == genDeploying):
		s.mu.Unlock()
		return current{}, false // something else re-deployed it since
	}
	old := current{gen: s.info.Generation, workers: s.info.Workers, placement: s.info.Placement, variants: s.variants,
		plan: s.plan, epoch: s.info.Committed, req: s.req, submitted: s.info.Submitted}
	if ch.lost == control.LostServer {
		old.epoch = outageEpoch(s, old.epoch)
	}
	var asked control.Constraints
	if ch.d != nil {
		asked = ch.d.Constraints
	}
	old.cons = s.holds.Then(asked)
	s.mu.Unlock()
	return old, true
}

// workersFor are the workers the next generation may run on: the
// registered ones, less the lost worker and those the decision excludes.
// After an outage (or a coordinator's restart) it waits for the query's
// own workers to come back; a recovery waits a few heartbeats for any. A
// recovery with no worker left fails the query.
func (s *supervisor) workersFor(ch change, old current) ([]deploy.Worker, bool) {
	c := s.c
	if ch.lost == control.LostServer || ch.lost == control.LostCoordinator {
		// After an outage (or a restart, which the workers notice at
		// their next heartbeat) the query's own workers come back: wait
		// for them rather than place it on the first to reconnect.
		c.outageWait(old.workers)
	}
	// A loaded machine can delay every worker's heartbeats past the
	// expiry at once; a live worker registers again at its next one, so
	// give the workers a few heartbeats to come back before giving up.
	var ws []deploy.Worker
	for wait := time.Now().Add(2 * c.cfg.Expiry); ; {
		ws = ws[:0]
		for _, w := range c.Workers() {
			if slices.Contains(old.cons.Exclude, w.Name) || w.Name == ch.lost {
				continue
			}
			ws = append(ws, deploy.Worker{Name: w.Name, Tier: w.Tier, Location: w.Location, Type: w.Type, Threads: w.ModelThreads})
		}
		if len(ws) > 0 || ch.replan() || time.Now().After(wait) {
			break
		}
		select {
		case <-c.stop:
			return nil, false
		case <-time.After(c.cfg.Heartbeat / 4):
		}
	}
	if len(ws) == 0 {
		if !ch.replan() {
			s.fail(fmt.Errorf("worker %s stopped heartbeating and no worker is left", ch.lost))
		}
		return nil, false
	}
	return ws, true
}

// planNext places the query again on ws, from the committed epoch, under
// old.cons: every live number the policies measured so far (the
// decision's too; a recovery plans with them as well), and the class mixes
// and pinned variants they asked for. live: it planned with measured
// numbers.
func (s *supervisor) planNext(old current, ws []deploy.Worker) (next placed, live bool, err error) {
	req := old.req
	req.Script.ResumeEpoch = old.epoch
	req.Script.Positions = s.positionsCopy()
	s.mu.Lock()
	// Live numbers stay the query's once measured, whatever comes of
	// this plan.
	s.holds.Live = old.cons.Live
	s.mu.Unlock()
	// The planner gets its own copy of the numbers.
	cons := old.cons
	if cons.Live != nil {
		cons.Live = &control.Overrides{}
		cons.Live.Merge(old.cons.Live)
	}
	next, err = s.c.place(context.Background(), req, ws, cons)
	return next, old.cons.Live != nil, err
}

// keep ends a re-plan that found no other plan: the query keeps running
// as it is. A plan made with live numbers becomes what the drift policy
// compares with, so numbers that stay where they drifted to ask once.
func (s *supervisor) keep(ch change, old current, next placed, withLive bool, err error) {
	if err == nil && withLive {
		s.mu.Lock()
		same := s.info.Generation == old.gen
		if same {
			s.assumed, s.info.Estimate = next.assumed, next.estimate
		}
		s.mu.Unlock()
		if same {
			s.attach(next.forPolicies(s.id, s.c.nc, true))
		}
	}
	s.c.cfg.Log.Info("re-plan kept the plan", "query", s.id, "reason", ch.d.Reason, "err", err)
}

// openGeneration makes the next generation the query's: the old one's
// statuses go to the record, a recovery is pending until rows flow again,
// and (when it was placed) the new placement and plan are the query's.
// lost is the recovery's lost workers, with one lost before rows flowed
// again.
func (s *supervisor) openGeneration(ch change, old current, next placed, placeErr error) (gen int, lost string, ok bool) {
	lost = ch.lost
	gen = old.gen + 1
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended() {
		return 0, "", false
	}
	s.info.Generation, s.failing = gen, false
	s.nextGeneration()
	s.info.ResultRows = 0 // the new generation's, from its first status
	s.live, s.planned = control.NewLive(), time.Now()
	if !ch.replan() {
		if s.pending == nil {
			s.pending = &pendingRecovery{lostAt: ch.at}
		}
		if prev := s.pending.rec.LostWorker; prev != "" && prev != lost {
			lost = prev + "," + lost // a second loss before rows flowed again
		}
		s.pending.rec = control.Recovery{Epoch: old.epoch, LostWorker: lost}
	}
	if placeErr == nil {
		p := next.placement
		s.info.Placement, s.info.Workers, s.info.Planner, s.info.Estimate = p, p.Workers, next.note, next.estimate
		s.plan, s.assumed, s.variants = next.plan, next.assumed, next.script.Variants
		s.bound = next.bound
		s.holds.ClassMix, s.holds.Variants = old.cons.ClassMix, old.cons.Variants
	}
	return gen, lost, true
}

// countLost starts counting what the query's core NATS streams publish
// until the new generation's parts subscribe (they keep nothing while no
// part listens); the function it returns adds the count to the recovery
// and, when the query ended meanwhile, sends its done message with it.
func (s *supervisor) countLost(script deploy.Script, lost string) func() {
	c := s.c
	count := s.takeOutageCount(lost)
	if count == nil {
		count = c.countCoreNATS(script, true)
	}
	s.mu.Lock()
	s.counting = true
	s.mu.Unlock()
	return func() {
		n := count()
		s.mu.Lock()
		s.counting = false
		if n > 0 {
			if s.pending != nil && s.pending.rec.LostWorker == lost {
				s.pending.rec.LostMessages += n
			} else if k := len(s.info.Recoveries); k > 0 && s.info.Recoveries[k-1].LostWorker == lost {
				s.info.Recoveries[k-1].LostMessages += n
			}
		}
		var ended *deploy.QueryInfo
		if s.endHeld {
			s.endHeld = false
			s.info.Dropped = s.info.Dropped.Merge(dataflow.DropCounts{dataflow.DropDisconnected: n})
			cp := s.info
			ended = &cp
		}
		s.mu.Unlock()
		if n > 0 {
			c.cfg.Log.Warn("core NATS messages lost while re-deploying", "query", s.id, "messages", n)
		}
		if ended != nil {
			s.done(*ended)
		}
	}
}

// stopOld stops the old generation and returns the epoch the next one
// resumes from. A re-plan (placed) has every worker of the old generation
// alive, so it waits for its parts to stop and resumes where their sinks
// committed; a recovery aborts what is left of it.
func (s *supervisor) stopOld(ch change, old current, placed bool, cut *control.CutOver) uint64 {
	epoch := old.epoch
	if !ch.replan() || !placed {
		s.publishStop(deploy.StopRequest{Query: s.id, Abort: true, Generation: old.gen, OnlyGeneration: true})
		s.mu.Lock()
		s.closeGeneration(old.gen, nil, epoch)
		s.mu.Unlock()
		return epoch
	}
	stopping := time.Now()
	e, pos, final, ok := s.c.stopGeneration(s.id, old.gen, old.placement)
	cut.StopMs = msSince(stopping)
	s.mu.Lock()
	defer s.mu.Unlock()
	if ok && e > epoch {
		epoch = e
		s.info.Committed = max(s.info.Committed, e)
		s.addPositions(pos)
	}
	// The old parts' answers are their last statuses; the next generation
	// answers the rows from epoch on.
	s.closeGeneration(old.gen, final, epoch)
	return epoch
}

// deployNext has every worker of the next generation build its part,
// resuming at epoch. again: a worker died while a recovery placed the query
// on it, and another recovery, from the same epoch without it, is under
// way.
func (s *supervisor) deployNext(ch change, old current, next placed, gen int, epoch uint64, cut *control.CutOver) (again bool, err error) {
	c := s.c
	script := next.script
	script.ResumeEpoch = epoch
	script.Positions = s.positionsCopy()
	deploying := time.Now()
	gone, slowest, err := c.deployAll(context.Background(), s.id, old.req.Owner, old.submitted, script, next.placement, gen)
	cut.DeployMs, cut.BuildMs = msSince(deploying), slowest.BuildMs
	if err != nil && len(gone) > 0 && !ch.replan() {
		// Another worker died while this recovery placed the query on
		// it: recover again, from the same epoch, without it.
		c.forget(gone)
		c.cfg.Log.Warn("worker lost while recovering", "query", s.id, "workers", gone)
		go s.recover(gone[0], time.Now())
		return true, err
	}
	return false, err
}

// cutOver starts the next generation (its sources begin at the epoch it
// resumed from), says a stop asked for meanwhile again, and puts a
// re-plan in the query's plan history.
func (s *supervisor) cutOver(ch change, old current, next placed, epoch uint64, cut *control.CutOver) {
	c := s.c
	if err := c.nc.Publish(deploy.QuerySubject(c.cfg.Namespace, s.id, "start"), nil); err != nil {
		s.fail(err)
		return
	}
	cut.StartMs = msSince(ch.at)
	s.mu.Lock()
	stop := s.stopAsked
	s.mu.Unlock()
	if stop != nil {
		// Stopped while this generation was deploying: its workers did
		// not know it yet, so say it again now that it runs.
		s.publishStop(deploy.StopRequest{Query: s.id, Abort: *stop})
	}
	if !ch.replan() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	reason := ch.d.Reason
	if moved := variantsMoved(old.plan, next.plan); moved != "" {
		reason += "; " + moved
	}
	s.info.Replans = append(s.info.Replans, control.Replan{Epoch: epoch, Reason: reason,
		Old: choiceOf(old.placement, old.variants), New: choiceOf(next.placement, next.script.Variants), Cut: cut})
	s.cutting = &pendingReplan{index: len(s.info.Replans) - 1, decided: ch.at}
}

// pendingReplan is a cut-over whose result rows do not flow yet: the
// index of its Replan, and when the policy decided it.
type pendingReplan struct {
	index   int
	decided time.Time
}

// closeCutOver (with s.mu held, from commit) closes the pending cut-over
// once every sink passed the epoch it started at (low, when known), or the
// query ended: its Replan gets the seconds since the decision.
func (s *supervisor) closeCutOver(known bool, low uint64) {
	r := s.cutting
	if r == nil || r.index >= len(s.info.Replans) {
		return
	}
	rp := &s.info.Replans[r.index]
	if known && low > rp.Epoch || s.ended() {
		rp.Seconds = time.Since(r.decided).Seconds()
		s.cutting = nil
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func msSince(t time.Time) float64 { return ms(time.Since(t)) }
