package deploy

import (
	"fmt"

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
	samestage := len(in) == 1 && pl.stages[pl.nodes[pl.g.Edges[in[0]].From.Op]] == st
	if samestage {
		up := pl.p.Operators[pl.g.Edges[in[0]].From.Op]
		pl.p.Operators[i] = OperatorPlan{Name: name, Workers: up.Workers, Tier: up.Tier}
		pl.p.Edges[in[0]] = EdgePlan{Kind: "pipeline"}
		if len(up.Workers) > 1 && acrossRows(pl.nodes[i]) {
			// A stage of several instances (the plan spreads it over
			// workers, or its source is a partitioned stream) has each
			// see a share of the rows: an operator fused into it that
			// keeps state across rows (an aggregate, a Top-N, an OVER,
			// a sort) must see every row of its keys, so its instances
			// exchange by those keys (or it runs once), or each would
			// answer for its share alone: partial counts of one group,
			// a top row per partition. (A join's operators run
			// together over the join's two inputs, its own stage.)
			if keys := keyColumns(pl.nodes[i]); keys != nil {
				pl.p.Edges[in[0]] = EdgePlan{Kind: "exchange", Keys: keys}
			} else {
				pl.p.Operators[i].Workers = up.Workers[:1]
			}
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
	pl.place(i, po.Workers[0].Tier, ws)
	for _, e := range in {
		switch keys := keyColumns(pl.nodes[i]); {
		case len(ws) == 1:
			pl.p.Edges[e] = EdgePlan{Kind: "pipeline"}
		case keys != nil:
			pl.p.Edges[e] = EdgePlan{Kind: "exchange", Keys: keys}
		default:
			pl.p.Edges[e] = EdgePlan{Kind: "balance", Shares: shares}
		}
	}
	return true, nil
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
