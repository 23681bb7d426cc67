package coordinator

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tierflow/tierflow/planner/physical"
)

// variantsMoved says which ML operators a new plan runs with another
// variant than the old one ("classify: mlp-small -> cnn"); "" when none
// (or either plan is unknown). A re-plan that changes only variants, on
// the same workers, is still a new plan: a data-aware policy asks for
// exactly that when the class mix shifts.
func variantsMoved(old, cur *physical.Plan) string {
	if old == nil || cur == nil {
		return ""
	}
	var out []string
	for _, op := range cur.Operators {
		if op.Variant == "" {
			continue
		}
		if o := old.Operator(op.Name); o != nil && o.Variant != "" && o.Variant != op.Variant {
			out = append(out, fmt.Sprintf("%s: %s -> %s", op.Name, o.Variant, op.Variant))
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
