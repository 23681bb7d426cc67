package dataaware

import (
	"sort"

	"github.com/tierflow/tierflow/planner/catalog"
)

// ClassRecalls is a variant's recall (percent) on every true class of a
// labelled set, with the class's support, from its predictions: the row of
// the confusion matrix divided by its sum, kept on the diagonal (SneakPeek
// eq. 8-9). Classes come sorted by name so a catalog rewrite is stable.
func ClassRecalls(pred, truth []string) []catalog.ClassRecall {
	support := map[string]int{}
	hit := map[string]int{}
	for i := range truth {
		if i >= len(pred) {
			break
		}
		support[truth[i]]++
		if pred[i] == truth[i] {
			hit[truth[i]]++
		}
	}
	out := make([]catalog.ClassRecall, 0, len(support))
	for c, n := range support {
		r := 100 * float64(hit[c]) / float64(n)
		out = append(out, catalog.ClassRecall{Class: c, Recall: float64(int64(r*100+0.5)) / 100, Support: n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Class < out[j].Class })
	return out
}
