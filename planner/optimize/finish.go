package optimize

import (
	"context"
	"time"
)

// finish stamps a strategy's plan, or explains why there is none.
func finish(ctx context.Context, in *instance, pl *Plan, name string, start time.Time, o Options) (*Plan, error) {
	if pl == nil || !pl.Feasible {
		var note string
		var gave bool
		if pl != nil {
			note, gave = pl.Note, pl.GaveUp
		}
		r, err := explain(ctx, in, o, start)
		if err != nil {
			return nil, err
		}
		pl = r
		if n := reservedNote(in.p.Reserved); n != "" && pl.Reason != "" {
			pl.Reason += " (" + n + ")"
		}
		pl.GaveUp = gave
		if note != "" {
			pl.Note = note
		}
	}
	pl.Strategy = name
	pl.OptimizerMs = sinceMs(start)
	return pl, nil
}
