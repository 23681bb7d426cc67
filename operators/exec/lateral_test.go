package exec

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// TestLateralModelUsesTheInjectedRuntime plans a model call over a table and
// runs it with a fake model that labels every row "x".
func TestLateralModelUsesTheInjectedRuntime(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := filepath.Join("..", "..", "examples", "streaming")
	table := &catalog.Table{Name: "sensors", Path: filepath.Join(dir, "sensors.csv"), Format: "csv",
		Columns: []catalog.Column{{Name: "sensor", Type: "INT"}, {Name: "site", Type: "VARCHAR"}}}
	scan, err := logical.NewScan(nil, table, "s", nil, logical.Pos{})
	if err != nil {
		t.Fatal(err)
	}
	model := &catalog.Model{Name: "m"}
	lat := logical.NewLateralModel(scan, model, "m", []expr.Expr{&expr.Column{Index: 1, Name: "site", DataType: expr.String}}, "c",
		[]arrow.Field{{Name: "label", Type: expr.String}}, logical.Pos{})
	plan := &logical.Plan{Root: &logical.Sink{Input: lat}}
	if _, err := Build(plan, Options{Allocator: mem}); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("without a runtime: %v", err)
	}
	out := &collect{}
	lateral := func(n *logical.LateralModel, in *arrow.Schema) (func() (dataflow.Operator, error), *arrow.Schema, error) {
		schema := arrow.NewSchema(append(append([]arrow.Field{}, in.Fields()...), n.Out...), nil)
		return func() (dataflow.Operator, error) {
			return builtin.NewMap(func(ctx *dataflow.Context, _ dataflow.Epoch, rec arrow.Record) (arrow.Record, error) {
				defer rec.Release()
				b := array.NewStringBuilder(ctx.Allocator())
				defer b.Release()
				for i := 0; i < int(rec.NumRows()); i++ {
					b.Append("x")
				}
				labels := b.NewArray()
				defer labels.Release()
				return array.NewRecord(schema, append(rec.Columns(), labels), rec.NumRows()), nil
			}), nil
		}, schema, nil
	}
	q, err := Build(plan, Options{Allocator: mem, Output: out, Lateral: lateral})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(out.rows) != 6 || out.rows[0][2] != "x" || out.rows[5][1] != "east" {
		t.Fatalf("rows %v", out.rows)
	}
}
