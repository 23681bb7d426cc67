package coordinator

import (
	"time"

	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/policy"
)

// A coordinator restart does not stop the queries: workers run them and
// exchange their data peer to peer, and clients read their results
// straight from the sinks. A new coordinator learns them back from the
// workers: a worker's heartbeat lists the queries it runs parts of, the
// coordinator asks about those it does not know (Ack.Describe) and the
// next heartbeat describes them (deploy.Part): script, placement,
// generation, owner. From then on the query is the coordinator's again:
// SHOW QUERIES lists it, its owner may stop it, its sinks' commits move
// its epoch, and a lost worker is recovered as usual.

// learnWindow is how long after its start a coordinator adopts queries
// from workers: time for every worker to notice the restart (its
// heartbeat is refused), register again and describe its parts. Later, a
// worker cannot hand the coordinator a query it never deployed.
func (c *Coordinator) learnWindow() time.Duration {
	return 4*c.cfg.Expiry + 4*c.cfg.Heartbeat
}

// learning: the coordinator started recently and may still learn running
// queries back from their workers (a client waiting on one meanwhile is
// told to keep waiting).
func (c *Coordinator) learning() bool { return time.Since(c.startedAt) < c.learnWindow() }

// relearn adopts the parts a heartbeat describes and names the queries it
// lists that the coordinator does not know yet.
func (c *Coordinator) relearn(hb deploy.Heartbeat) []string {
	if !c.learning() {
		return nil
	}
	for _, p := range hb.Parts {
		c.adopt(hb.Name, p)
	}
	var ask []string
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range hb.Queries {
		if c.queries[id] == nil {
			ask = append(ask, id)
		}
	}
	return ask
}

// adopt makes a query a worker runs a part of the coordinator's own again
// (only one of the worker's own). A part not started was deployed by a
// coordinator that went away before it started the generation: in a
// re-deployment (a recovery, a re-plan, a client's resume after an
// outage), whose old generation it had already stopped. Nothing runs the
// query then, and nobody would start it: the new coordinator deploys it
// again, from the epoch that generation was to resume at.
func (c *Coordinator) adopt(worker string, p deploy.Part) {
	if p.Placement.WorkerIndex(worker) < 0 || deploy.ValidName("query", p.Query) != nil || deploy.ValidName("user", p.Owner) != nil {
		return
	}
	replayable := len(c.coreNATSSubjects(p.Script)) == 0
	now := time.Now()
	submitted := p.Submitted
	if submitted.IsZero() {
		submitted = now
	}
	pl := p.Placement
	c.mu.Lock()
	if c.queries[p.Query] != nil {
		c.mu.Unlock()
		return
	}
	s := newSupervisor(c, deploy.SubmitRequest{Query: p.Query, Script: p.Script, Owner: p.Owner},
		deploy.QueryInfo{Query: p.Query, Owner: p.Owner, State: deploy.StateRunning, Submitted: submitted, Started: submitted,
			Generation: p.Generation, Placement: &pl, Workers: pl.Workers, Planner: "learned back from worker " + worker + " after a coordinator restart"})
	s.state, s.planned, s.replayable = genRunning, now, replayable
	if !p.Started {
		s.info.Committed = p.Script.ResumeEpoch
	}
	c.queries[p.Query] = s
	c.order = append(c.order, p.Query)
	c.mu.Unlock()
	c.limitRunTime(s)
	s.attach(&policy.Placed{Query: p.Query, Placement: &pl, Conn: c.nc})
	if !p.Started {
		c.cfg.Log.Warn("query learned back before its generation started: deploying it again", "query", p.Query, "generation", p.Generation)
		go s.recover(control.LostCoordinator, now)
	}
	c.cfg.Log.Warn("query learned back from its workers", "query", p.Query, "owner", p.Owner, "worker", worker, "generation", p.Generation)
}
