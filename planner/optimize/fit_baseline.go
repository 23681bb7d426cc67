package optimize

import (
	"context"
	"time"
)

// fitBaseline is the skeleton both bin-packing baselines of JellyBean 6.1 share:
// the most accurate variants (neither baseline selects models), then for each
// operator in topological order the workers pick chooses, until the demand is
// covered. Only the choice of workers differs between BF and FF.
func fitBaseline(ctx context.Context, p *Problem, o Options, name string,
	pick func(in *instance, s *partial, op, v int, vars []int) []int) (*Plan, error) {
	start := time.Now()
	o = o.withDefaults()
	in, err := newInstance(p, o.CostModel)
	if err != nil {
		return nil, err
	}
	var pl *Plan
	if vars := in.mostAccurate(); vars != nil {
		s := newPartial(in)
		ok := true
		for _, op := range in.ix.topo {
			v := vars[op]
			ws := pick(in, s, op, v, vars)
			if ws == nil || !in.place(op, v, ws, vars, s) {
				ok = false
				break
			}
		}
		if ok {
			pl = in.evaluate(s.sol(vars))
		}
	}
	return finish(ctx, in, pl, name, start, o)
}
