package deploy

import (
	"fmt"

	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/planner/lower"
)

// stageIndex maps every logical node to the optimizer stage that runs it.
func stageIndex(lo *lower.Result) map[logical.Node]*lower.Stage {
	m := map[logical.Node]*lower.Stage{}
	for _, s := range lo.Stages {
		if s.Node != nil {
			m[s.Node] = s
		}
		for _, f := range s.Fused {
			m[f] = s
		}
	}
	return m
}

// fromPlan places operator i where the physical plan put its stage: a source
// once on its tier, an operator on the plan's workers. The edge entering a
// stage is a Balance by the plan's traffic shares (an Exchange for a keyed
// aggregate); edges inside a stage are pipelines, so fused operators never
// cross the network. It reports false for operators outside every stage
// (the sink), which the default rules place.
func (pl *placer) fromPlan(i int, in []int) (bool, error) {
	st := pl.stages[pl.nodes[i]]
	if st == nil {
		return false, nil
	}
	name := pl.g.Operators[i].Name
	samestage := len(in) == 1 && (pl.stages[pl.nodes[pl.g.Edges[in[0]].From.Op]] == st || pl.readsCommon(i, pl.g.Edges[in[0]].From.Op, st))
	if samestage {
		upOp := pl.g.Edges[in[0]].From.Op
		up := pl.p.Operators[upOp]
		node := pl.nodes[i]
		pl.p.Operators[i] = OperatorPlan{Name: name, Workers: up.Workers, Tier: up.Tier}
		pl.p.Edges[in[0]] = EdgePlan{Kind: "pipeline"}
		if pl.phase(i, upOp, in[0]) {
			return true, nil
		}
		if len(up.Workers) > 1 && acrossRows(node) {
			// A stage of several instances (the plan spreads it over
			// workers, its source is a partitioned stream, or it is a
			// partitioned join's) has each see a share of the rows: an
			// operator fused into it that keeps state across rows (an
			// aggregate, a Top-N, an OVER, a sort) must see every row of
			// its keys, so its instances exchange by those keys (or it
			// runs once), or each would answer for its share alone:
			// partial counts of one group, a top row per partition. Rows
			// already split by columns its keys hold (a join's keys
			// among a GROUP BY's) stay where they are.
			switch keys := keyColumns(node); {
			case keys != nil && splitCovers(pl.split[upOp], keys):
				pl.split[i] = splitAfter(pl.split[upOp], node)
			case keys != nil:
				pl.p.Edges[in[0]] = EdgePlan{Kind: "exchange", Keys: keys, KeyNames: inputNames(node, 0, keys)}
				if a, ok := node.(*logical.Aggregate); ok {
					pl.split[i] = [][]int{seq(len(a.Group))}
				}
			default:
				pl.p.Operators[i].Workers = up.Workers[:1]
			}
		} else if _, sink := node.(*logical.Sink); sink && len(up.Workers) > 1 {
			// The result leaves from one place (a partitioned join's
			// stage ends in the query's sink).
			pl.p.Operators[i].Workers = up.Workers[:1]
		} else if len(up.Workers) > 1 {
			pl.split[i] = splitAfter(pl.split[upOp], node)
		}
		return true, nil
	}
	if st.Kind == "source" {
		src := pl.o.Physical.Source(st.Name)
		tier := pl.o.SourceTier
		if src != nil && src.Tier != "" {
			tier = src.Tier
		}
		t, err := pl.tierFrom(max(pl.tierIndex(tier), 0), +1)
		if err != nil {
			return false, err
		}
		pl.placeScan(i, t)
		return true, nil
	}
	po := pl.o.Physical.Operator(st.Name)
	if po == nil || len(po.Workers) == 0 {
		return false, nil
	}
	var ws []Worker
	var shares []float64
	for _, pw := range po.Workers {
		found := false
		for _, w := range pl.workers {
			if w.Name == pw.Name {
				ws, shares, found = append(ws, w), append(shares, pw.Share), true
				break
			}
		}
		if !found {
			return false, fmt.Errorf("%w: the plan puts %s on worker %s, which is not registered", ErrNoWorkers, st.Name, pw.Name)
		}
	}
	if j, ok := pl.nodes[i].(*logical.Join); ok && len(in) == 2 {
		// A join's stage of its own: a join of two streams (a join with
		// a table runs fused with its stream's stage).
		pl.placeJoin(i, j, in, ws)
		return true, nil
	}
	pl.place(i, po.Workers[0].Tier, ws)
	for _, e := range in {
		switch keys := keyColumns(pl.nodes[i]); {
		case len(ws) == 1:
			pl.p.Edges[e] = EdgePlan{Kind: "pipeline"}
		case keys != nil:
			pl.p.Edges[e] = EdgePlan{Kind: "exchange", Keys: keys, KeyNames: inputNames(pl.nodes[i], 0, keys)}
		default:
			pl.p.Edges[e] = EdgePlan{Kind: "balance", Shares: shares}
		}
	}
	return true, nil
}

// readsCommon reports whether operator i, of stage st, reads operator up
// in place of its own input, an aggregation equal to up's
// (logical.SubtreeKey) that operators/exec built once: its input is then
// of its stage, as if built for it, and it runs fused on up's instances
// (q5's CountBids projection after the HOP count it shares with
// AuctionBids), not as a stage's source.
func (pl *placer) readsCommon(i, up int, st *lower.Stage) bool {
	ch := pl.nodes[i].Children()
	if len(ch) != 1 || ch[0] == pl.nodes[up] || pl.stages[ch[0]] != st {
		return false
	}
	mine, ok := logical.SubtreeKey(ch[0])
	if !ok {
		return false
	}
	theirs, ok := logical.SubtreeKey(pl.nodes[up])
	return ok && mine == theirs
}

// seq is 0, 1, ..., n-1.
func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// acrossRows reports whether n keeps state across its input's rows (one
// input; a join has its own stage).
func acrossRows(n logical.Node) bool {
	switch n.(type) {
	case *logical.Aggregate, *logical.WindowFuncs, *logical.Sort, *logical.Limit:
		return true
	}
	return false
}

// phase places operator i when it is a phase of an aggregation split in two
// (operators/exec windowPhases), fused after operator up over edge in,
// already placed on up's instances with a pipeline; false for any other.
// The partial aggregation stays on its input's instances: each folds the
// rows it has. The final one combines the partial rows of a key (the
// aggregation's keys, window_start, window_end: plain columns of the
// partial rows) in one instance, so over several instances it takes the
// keys whose hash falls to it. The projection that finishes it answers
// each row alone and keeps the keys in place.
func (pl *placer) phase(i, up, in int) bool {
	a, ok := pl.nodes[i].(*logical.Aggregate)
	if !ok {
		return false
	}
	switch pl.g.Operators[i].Name {
	case PartialAggregate:
		return true
	case FinalAggregate:
		switch {
		case len(pl.p.Operators[up].Workers) < 2:
		case a.Window == nil && !exec.ClosesByTimeAlone(a):
			// A GROUP BY's final phase without window columns: once.
			pl.p.Operators[i].Workers = pl.p.Operators[up].Workers[:1]
		default:
			// A window's, or a closing GROUP BY's by its time keys
			// (operators/exec closingPhases): by the keys.
			names := append([]string(nil), a.GroupNames...)
			if a.Window != nil {
				names = append(names, "window_start", "window_end")
			}
			keys := seq(len(names))
			pl.p.Edges[in] = EdgePlan{Kind: "exchange", Keys: keys, KeyNames: names}
			pl.split[i] = [][]int{keys}
		}
		return true
	case "project":
		// The projection that finishes a final or a spilling aggregation
		// stays on its instances, with its keys.
		if n := pl.g.Operators[up].Name; n == FinalAggregate || n == exec.SpillingAggregate {
			pl.split[i] = pl.split[up]
			return true
		}
	}
	return false
}
