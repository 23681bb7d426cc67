package coordinator

import (
	"errors"
	"slices"
	"time"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/inference/sched"
)

// blames: a part's failure of this kind is the query's own fault (its
// input, or a limit it went past): it fails once and is not recovered.
func blames(kind string) bool {
	return kind == deploy.KindInput || kind == deploy.KindLimit || kind == deploy.KindQuery
}

// maxProblems bounds the bad-row messages a query's info keeps.
const maxProblems = 10

// onStatus merges a worker's status report of the current generation into
// the query's info (rows, drops, operators, links, the state of every
// part), ends the query when every part has, moves the committed epoch,
// folds the report into the live estimates and asks the policies (decide).
// reg is the coordinator's registry as of the report.
func (s *supervisor) onStatus(st deploy.Status, reg registry) {
	c := s.c
	s.mu.Lock()
	if s.ended() || st.Generation != s.info.Generation || !slices.Contains(s.info.Workers, st.Worker) {
		// An aborted generation's last words are not the query's, nor is
		// a worker's that the generation was not deployed to (its name is
		// the subject's, which its creds bind it to: it cannot speak for
		// another's part, and it has none of its own here).
		s.mu.Unlock()
		return
	}
	s.status[st.Worker] = st
	if st.HasSinkFrontier {
		s.front[st.Worker] = st.SinkFrontier
	}
	s.addPositions(st.Positions)
	info := &s.info
	info.Operators, info.Links, info.ResultRows = nil, nil, 0
	info.LateRows, info.BadRows, info.Problems = 0, 0, nil
	info.Dropped = dataflow.DropCounts(nil).Merge(s.droppedBefore) // a copy: Merge adds in place
	info.WorkerStates = map[string]string{}
	terminal, failed, failedKind, stopped := 0, "", "", false
	for _, name := range info.Workers {
		ws, ok := s.status[name]
		if !ok {
			continue
		}
		info.WorkerStates[name] = ws.State
		if ws.Sched != nil {
			if info.Sched == nil {
				info.Sched = map[string]sched.QueryStats{}
			}
			info.Sched[name] = *ws.Sched
		}
		info.Operators = append(info.Operators, ws.Operators...)
		info.Links = append(info.Links, ws.Links...)
		info.ResultRows += ws.ResultRows
		info.LateRows += ws.LateRows
		info.BadRows += ws.BadRows
		info.Dropped = info.Dropped.Merge(ws.Dropped)
		if len(info.Problems) < maxProblems {
			info.Problems = append(info.Problems, ws.Problems[:min(len(ws.Problems), maxProblems-len(info.Problems))]...)
		}
		switch ws.State {
		case deploy.StateFinished:
			terminal++
		case deploy.StateStopped:
			terminal++
			stopped = true
		case deploy.StateFailed:
			terminal++
			// The query's own fault (its input, a limit) is the reason
			// whichever worker reported it: another part failing only
			// because that one closed its links (relay.ErrPeerClosed)
			// may come first, in the order of the workers or of the
			// reports, which travel on different connections.
			if failed == "" || blames(ws.ErrorKind) && !blames(failedKind) {
				failed, failedKind = ws.Worker+": "+ws.Error, ws.ErrorKind
			}
		}
	}
	switch {
	case failed != "" && blames(failedKind):
		// The query is to blame (its input, or a limit it went past: a
		// poison query): it fails once, with the reason, and is not
		// recovered onto other workers.
		s.end(deploy.StateFailed, failed, failedKind)
	case failed != "":
		// A part that fails because a peer died (its relay link broke)
		// is recovered with the rest once the peer's heartbeats are
		// missed; fail only if no worker is lost by then.
		if !s.failing {
			s.failing = true
			gen, msg, kind := info.Generation, failed, failedKind
			time.AfterFunc(c.cfg.Expiry+c.cfg.Heartbeat, func() { s.failGeneration(gen, msg, kind) })
		}
	case terminal == len(info.Workers) && s.started():
		state := deploy.StateFinished
		if stopped {
			state = deploy.StateStopped
		}
		s.end(state, "", "")
	}
	s.commit()
	info.Dropped = info.Dropped.Merge(disconnected(info.Recoveries))
	costs(c.cfg.Infra, info, reg.types)
	progress(info, time.Now())
	if st.RTTNs > 0 {
		s.rtt[st.Worker] = time.Duration(st.RTTNs)
	}
	s.live.Observe(time.Now(), info.Operators, info.Links, s.rtt, linkEnds(info.Placement))
	est := s.live.Estimates()
	info.Estimates = &est
	s.decide(time.Now(), reg.names)
	var ended *deploy.QueryInfo
	if s.ended() {
		cp := *info
		ended = &cp
	}
	held := ended != nil && s.counting
	s.endHeld = s.endHeld || held
	s.mu.Unlock()
	if ended == nil {
		return
	}
	if ended.State == deploy.StateFailed {
		s.publishStop(deploy.StopRequest{Query: ended.Query, Abort: true})
	}
	if held {
		// A recovery is still counting what it lost: it sends the done
		// message with the count.
		return
	}
	s.done(*ended)
}

// nextGeneration (with s.mu held) sets the ending generation's statuses
// aside (closeGeneration counts them once its parts have stopped) and
// starts the next one's.
func (s *supervisor) nextGeneration() {
	s.closing = s.status
	s.status, s.front = map[string]deploy.Status{}, map[string]uint64{}
}

// closeGeneration (with s.mu held) keeps in the query's record what
// generation gen (set aside by nextGeneration) dropped and measured, once
// its parts have stopped. A part's answer to the stop (final, by worker:
// stopGeneration) is its last status: what it dropped and measured after
// its last report (up to half a second of rows) counts too; an answer
// without the part's statistics leaves its last report. The next
// generation resumes at epoch resume and answers the rows from there, so
// what the part dropped of them (its answer's DroppedAt) is not counted:
// each row is answered, or counted dropped, once.
func (s *supervisor) closeGeneration(gen int, final map[string]deploy.Status, resume uint64) {
	if s.closing == nil {
		s.closing = map[string]deploy.Status{}
	}
	for w, st := range final {
		if st.Generation == gen && len(st.Operators) > 0 {
			s.closing[w] = st
		}
	}
	// A new Earlier, not the old one changed: copies of the query's info
	// handed out before share its pointer.
	e := &deploy.Earlier{}
	if old := s.info.Earlier; old != nil {
		e.EndToEnd.Add(old.EndToEnd)
		e.SLOMissRows = old.SLOMissRows
		e.AddSides([]dataflow.InstanceStats{{Counters: old.Sides}})
	}
	for _, st := range s.closing {
		s.droppedBefore = s.droppedBefore.Merge(st.Dropped.Less(dataflow.DropsSince(st.DroppedAt, dataflow.Epoch(resume))))
		for _, op := range st.Operators {
			e.EndToEnd.Add(op.EndToEnd)
			e.SLOMissRows += op.SLOMissRows
		}
		e.AddSides(st.Operators)
	}
	if e.EndToEnd.Count > 0 || e.SLOMissRows > 0 || len(e.Sides) > 0 {
		s.info.Earlier = e
	}
	s.closing = nil
}

// commit (with s.mu held) moves the query's committed epoch to the
// smallest sink frontier of its generation, and closes a pending recovery
// once rows flow past the epoch it resumed from (or the query ended).
func (s *supervisor) commit() {
	info := &s.info
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
				f, ok := s.front[name]
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
	if known && low > info.Committed && info.Generation >= s.unseenBelow {
		info.Committed = low
	}
	info.ResumeSeq = deploy.ResumeSeqs(s.bound, info.Committed, s.positions)
	s.closeCutOver(known, low)
	// Rows flow again once the new generation's sinks pass the epoch it
	// resumed from or write anything; a query stopped or finished before
	// keeps the recovery in its record too.
	if r := s.pending; r != nil && (known && low > r.rec.Epoch || info.ResultRows > 0 || s.ended() && info.State != deploy.StateFailed) {
		r.rec.Seconds = time.Since(r.lostAt).Seconds()
		info.Recoveries = append(info.Recoveries, r.rec)
		s.pending = nil
	}
}

// failGeneration fails the query with a worker's error unless a recovery
// has replaced that generation since.
func (s *supervisor) failGeneration(gen int, msg, kind string) {
	c := s.c
	s.mu.Lock()
	stale := s.info.Generation != gen || s.ended()
	planned := s.planned
	s.mu.Unlock()
	if stale {
		return
	}
	if c.outageSince(planned) {
		// The NATS server went away under this generation: its relay
		// links lost what was in flight. Run it again instead.
		down, _ := c.lastOutage()
		s.ask(genRecovering)
		go s.recover(control.LostServer, down)
		return
	}
	err := errors.New(msg)
	if kind == deploy.KindInput || kind == deploy.KindLimit {
		err = deploy.RemoteError(msg, kind)
	}
	s.fail(err)
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
