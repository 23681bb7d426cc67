package rel

import (
	"slices"

	"github.com/apache/arrow/go/v17/arrow"
)

// emitLeftResidual is a LEFT JOIN's output when ON holds more than
// equalities (a.k = b.k AND b.t > a.t, or a comparison alone): the pairs
// (li, ri) of rec's rows that pass the residual, then each row of rec
// that no pair of its passed, once, with NULLs for the build side (rows
// with no build row of their key among them: ri -1). Every pair of a
// probe row is in li: ProbeEach slices a batch by its rows, never a
// row's pairs.
func (j *HashJoin) emitLeftResidual(rec arrow.Record, li, ri []int32, emit func(arrow.Record) error) error {
	n := int(rec.NumRows())
	hit := slices.Grow(j.hit[:0], n)[:n]
	clear(hit)
	j.hit = hit
	var kl, kr []int32
	for from := 0; from < len(li); from += maxJoinOut {
		if from > 0 {
			if err := j.pauseNow(); err != nil {
				return err
			}
		}
		to := min(from+maxJoinOut, len(li))
		pl, pr := li[from:to], ri[from:to]
		if slices.Contains(pr, -1) {
			// A row of a key no build row has: unmatched, judged below.
			pl, pr = slices.Clone(pl), slices.Clone(pr)
			keep := 0
			for k := range pl {
				if pr[k] >= 0 {
					pl[keep], pr[keep] = pl[k], pr[k]
					keep++
				}
			}
			pl, pr = pl[:keep], pr[:keep]
		}
		if len(pl) == 0 {
			continue
		}
		sel, all, err := j.passing(rec, pl, pr)
		if err != nil {
			return err
		}
		kl, kr = kl[:0], kr[:0]
		if all {
			kl, kr = append(kl, pl...), append(kr, pr...)
		} else {
			for _, k := range sel {
				kl, kr = append(kl, pl[k]), append(kr, pr[k])
			}
		}
		for _, l := range kl {
			hit[l] = true
		}
		if len(kl) == 0 {
			continue
		}
		out, err := gatherJoin(j.fctx, j.schema, rec.Columns(), j.tab.right, kl, kr, false)
		if err != nil {
			return err
		}
		if err := emit(out); err != nil {
			return err
		}
	}
	kl, kr = kl[:0], kr[:0]
	flush := func() error {
		if len(kl) == 0 {
			return nil
		}
		out, err := gatherJoin(j.fctx, j.schema, rec.Columns(), j.tab.right, kl, kr, len(kl) == n)
		kl, kr = kl[:0], kr[:0]
		if err != nil {
			return err
		}
		return emit(out)
	}
	for i, h := range hit {
		if h {
			continue
		}
		kl, kr = append(kl, int32(i)), append(kr, -1)
		if len(kl) == maxJoinOut {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}
