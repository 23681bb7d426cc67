package rewrite

import (
	"fmt"

	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// LiftModelArgsID computes a model call's expression arguments in a
// projection below it.
const LiftModelArgsID RuleID = "lift_model_args"

// LiftModelArgs makes every model call whose argument is an expression
// (recognize(crop_image(s.image, d.x0, d.y0, d.x1, d.y1))) into a
// projection that computes the argument as a hidden column, the call on
// that column, and a projection above that drops it again, so the call's
// schema is what the binder promised. The model operator takes columns;
// the projection is a relational step like any other: it runs where the
// rows are (a crop on the worker that holds the frame, fused with the
// stage before the call), and PruneColumns, which runs after, merges it
// with its neighbours and drops what it has used (the frame) before the
// next link. Constant arguments (a sample rate) stay where they are.
func LiftModelArgs(n logical.Node) logical.Node {
	return logical.Transform(n, func(x logical.Node) logical.Node {
		lm, ok := x.(*logical.LateralModel)
		if !ok {
			return x
		}
		return liftArgs(lm)
	})
}

func liftArgs(lm *logical.LateralModel) logical.Node {
	var lifted []int
	for i, a := range lm.Args {
		switch a.(type) {
		case *expr.Column, *expr.Literal:
		default:
			lifted = append(lifted, i)
		}
	}
	if len(lifted) == 0 {
		return lm
	}
	in := lm.Input
	fs := in.Schema().Fields()
	taken := map[string]bool{}
	var exprs []expr.Expr
	var names []string
	for i, f := range fs {
		exprs = append(exprs, &expr.Column{Index: i, Name: f.Name, DataType: f.Type})
		names = append(names, f.Name)
		taken[f.Name] = true
	}
	args := append([]expr.Expr(nil), lm.Args...)
	for _, i := range lifted {
		// A name no query can write: the model binds its input by name.
		name := fmt.Sprintf("$%s.arg%d", lm.Name, i+1)
		for k := 2; taken[name]; k++ {
			name = fmt.Sprintf("$%s.arg%d_%d", lm.Name, i+1, k)
		}
		taken[name] = true
		args[i] = &expr.Column{Index: len(exprs), Name: name, DataType: lm.Args[i].Type()}
		exprs = append(exprs, lm.Args[i])
		names = append(names, name)
	}
	below := logical.NewProject(in, exprs, names, lm.Pos)
	call := logical.NewLateralModel(below, lm.Model, lm.Name, args, lm.Alias, lm.Out, lm.Pos)
	call.Batch = lm.Batch
	// Above: the input's columns and the model's, as before.
	var keep []expr.Expr
	var keepNames []string
	out := call.Schema().Fields()
	for i, f := range out {
		if i >= len(fs) && i < len(exprs) {
			continue // a lifted argument
		}
		keep = append(keep, &expr.Column{Index: i, Name: f.Name, DataType: f.Type})
		keepNames = append(keepNames, f.Name)
	}
	return logical.NewProject(call, keep, keepNames, lm.Pos)
}
