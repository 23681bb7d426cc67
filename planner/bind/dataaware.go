package bind

import (
	"fmt"

	"github.com/tierflow/tierflow/planner/logical"
)

// checkDataAware refuses ACCURACY ... DATA AWARE on a query none of whose
// models has a per-class profile: the data-aware accuracy would silently be
// the profiled one. It is reported at the objective.
func (b *Binder) checkDataAware(root logical.Node, at logical.Pos) {
	var models []string
	profiled := false
	var walk func(n logical.Node)
	walk = func(n logical.Node) {
		if lm, ok := n.(*logical.LateralModel); ok && lm.Model != nil {
			models = append(models, lm.Model.Name)
			for _, v := range lm.Model.Variants {
				if len(v.Classes) > 0 {
					profiled = true
				}
			}
		}
		for _, c := range n.Children() {
			walk(c)
		}
	}
	walk(root)
	switch {
	case len(models) == 0:
		b.errs = append(b.errs, &Error{Pos: at, Kind: ErrBind, Msg: "DATA AWARE accuracy needs a model call: the query calls none"})
	case !profiled:
		b.errs = append(b.errs, &Error{Pos: at, Kind: ErrBind, Msg: fmt.Sprintf("DATA AWARE accuracy needs per-class recall (classes:) in the catalog for model %s; measure it with tierflow profile --data FILE", models[0])})
	}
}
