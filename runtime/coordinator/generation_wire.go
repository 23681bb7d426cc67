package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// What the coordinator says to a query's workers about its generations:
// build your part (deployAll), stop (stopGeneration), and what it counts
// of a query's core NATS streams while no generation listens.

// deployAll has every worker of a placement build its part of generation
// gen. The query starts only when all have, so no source runs into a worker
// that could still fail to build.
//
// gone lists the workers nobody answered for (no responders): lost since
// the placement. slowest has the longest stop wait and build the workers
// answered with.
func (c *Coordinator) deployAll(ctx context.Context, id, owner string, submitted time.Time, script deploy.Script, p *deploy.Placement, gen int) (gone []string, slowest deploy.Ack, err error) {
	errs := make([]error, len(p.Workers))
	acks := make([]deploy.Ack, len(p.Workers))
	var wg sync.WaitGroup
	req := deploy.DeployRequest{Query: id, Script: script, Placement: *p, Generation: gen,
		Results: deploy.InNamespace(c.cfg.Namespace, deploy.UserSubject(owner, id, "results")), Limits: c.cfg.Limits,
		Owner: owner, Submitted: submitted, Access: c.access(owner)}
	// Only the parts that hold a sink instance may publish the results.
	sinkHere := map[int]bool{}
	for _, op := range p.Operators {
		if op.Name == "sink" {
			for _, wi := range op.Workers {
				sinkHere[wi] = true
			}
		}
	}
	for i, name := range p.Workers {
		// Each part's data user is its own: minted on its worker's key.
		r := req
		results := ""
		if sinkHere[i] {
			results = req.Results
		}
		jwt, err := c.mint(id, owner, name, results, gen)
		if err != nil {
			errs[i] = fmt.Errorf("worker %s: %w", name, err)
			continue
		}
		r.Access.JWT = jwt
		if jwt != "" {
			r.Access.Streams = c.streamsOf(id)
		}
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

// stopGeneration aborts generation gen of query id, placed as p, and waits
// (up to stopWait) for each of p's workers to say its part stopped. ok
// when every sink worker answered with its sinks' frontier: low is the
// smallest, the epoch every sink of the generation committed (fresher than
// the last status reports', up to half a second old, so a cut-over sends
// fewer frames again), pos the positions its sources reached, and final
// each answering worker's last status of its part.
func (c *Coordinator) stopGeneration(id string, gen int, p *deploy.Placement) (low uint64, pos map[string]sources.Positions, final map[string]deploy.Status, ok bool) {
	b, _ := json.Marshal(deploy.StopRequest{Query: id, Abort: true, Generation: gen, OnlyGeneration: true})
	subj := deploy.QuerySubject(c.cfg.Namespace, id, "stop")
	inbox := c.nc.NewInbox()
	sub, err := c.nc.SubscribeSync(inbox)
	if err != nil || p == nil {
		_ = c.nc.Publish(subj, b)
		return 0, nil, nil, false
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := c.nc.PublishRequest(subj, inbox, b); err != nil {
		_ = c.nc.Publish(subj, b)
		return 0, nil, nil, false
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
				return 0, nil, got, false
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
	return low, pos, got, !first
}

// stopWait bounds how long a re-plan waits for the old generation's parts
// to say they stopped before it resumes from the committed epoch it knows.
const stopWait = 2 * time.Second

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
	return coreNATSOf(bound)
}

// coreNATSOf are the core NATS subjects a bound query reads: a placed
// query's, from the plan its placement bound (the script is not parsed
// again between the workers' builds and the query's start).
func coreNATSOf(bound *logical.Plan) []string {
	if bound == nil {
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
