package rel

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/eval"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

// TestFilterThenProjectStreamsTheReferenceRows runs WHERE v > 10 AND s <> 'a'
// then SELECT k, v * 2 + 1, upper(s) through the dataflow, concurrently.
func TestFilterThenProjectStreamsTheReferenceRows(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewSource(8))
	rows, batches, epochs := streamRows(rng, 5000, 128, 20_000)
	var in []dataflow.Batch
	for i, b := range batches {
		in = append(in, dataflow.Batch{Epoch: EpochOf(epochs[i]), Record: makeRecord(t, mem, streamSchema, b)})
	}
	reg := expr.Builtins()
	must := func(e expr.Expr, err error) expr.Expr {
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	lit := func(v any) expr.Expr { l, _ := expr.NewLiteral(v); return l }
	cond := must(expr.NewLogic(expr.OpAnd, must(reg.NewCall("greater", colV, lit(int64(10)))), must(reg.NewCall("not_equal", colS, lit("a")))))
	pred, err := eval.NewPredicate(cond, streamSchema, functions.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	proj, err := eval.NewProjection([]expr.Expr{colK, must(reg.NewCall("add", must(reg.NewCall("multiply", colV, lit(int64(2)))), lit(int64(1)))), must(reg.NewCall("upper", colS))},
		[]string{"k", "v2", "su"}, streamSchema, functions.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	g := &dataflow.Graph{Query: "fp"}
	src := g.AddOperator(dataflow.OperatorSpec{Name: "src", Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) { return sliceSource(in), nil }})
	fil := g.AddOperator(dataflow.OperatorSpec{Name: "filter", Inputs: 1, Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) { return NewFilter(pred, nil), nil }})
	pro := g.AddOperator(dataflow.OperatorSpec{Name: "project", Inputs: 1, Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) { return NewProject(proj), nil }})
	capt := newCaptured()
	sink := g.AddOperator(dataflow.OperatorSpec{Name: "sink", Inputs: 1, New: func(in dataflow.Instance) (dataflow.Operator, error) { return capture(capt, in.Index), nil }})
	g.Connect(src, 0, fil, 0)
	g.Connect(fil, 0, pro, 0)
	g.Connect(pro, 0, sink, 0)
	err = dataflow.Run(t.Context(), g, dataflow.Config{Allocator: mem})
	defer capt.Release()
	if err != nil {
		t.Fatal(err)
	}
	var want [][]any
	for _, r := range rows {
		// WHERE keeps TRUE only: NULL v or NULL s drop the row.
		if r[1] == nil || r[3] == nil || r[1].(int64) <= 10 || r[3] == "a" {
			continue
		}
		want = append(want, []any{r[0], r[1].(int64)*2 + 1, strings.ToUpper(r[3].(string))})
	}
	if len(want) < 100 {
		t.Fatalf("reference keeps only %d rows", len(want))
	}
	sameRows(t, "filter+project", recordRows(capturedRecords(capt)), want)
}
