package eval

import (
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

// A projection that passes on a STRING column which came as dictionary
// codes (a Parquet scan's, for a GROUP BY) keeps the codes, and its
// record's schema says so; computed columns are as before. Nothing leaks.
func TestProjectionPassesCodesOn(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	in := arrow.NewSchema([]arrow.Field{{Name: "n", Type: expr.Int64, Nullable: true}, {Name: "s", Type: expr.String, Nullable: true}}, nil)
	dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	db := array.NewStringBuilder(mem)
	db.AppendValues([]string{"MAIL", "SHIP"}, nil)
	dict := db.NewArray()
	db.Release()
	ib := array.NewInt32Builder(mem)
	ib.AppendValues([]int32{1, 0, 1}, nil)
	idx := ib.NewArray()
	ib.Release()
	codes := array.NewDictionaryArray(dt, idx, dict)
	idx.Release()
	dict.Release()
	nb := array.NewInt64Builder(mem)
	nb.AppendValues([]int64{1, 2, 3}, nil)
	n := nb.NewArray()
	nb.Release()
	rec := array.NewRecord(arrow.NewSchema([]arrow.Field{in.Field(0), {Name: "s", Type: dt, Nullable: true}}, nil), []arrow.Array{n, codes}, 3)
	n.Release()
	codes.Release()
	defer rec.Release()
	plus, err := expr.Builtins().NewCall("add", &expr.Column{Index: 0, Name: "n", DataType: expr.Int64}, &expr.Literal{Value: int64(1), DataType: expr.Int64})
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProjection([]expr.Expr{&expr.Column{Index: 1, Name: "s", DataType: expr.String}, plus}, []string{"s", "m"}, in, functions.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Apply(functions.NewCtx(mem), rec)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	if out.Column(0) != rec.Column(1) || !arrow.TypeEqual(out.Schema().Field(0).Type, dt) {
		t.Fatalf("codes not passed on: %s", out.Schema())
	}
	if p.Schema().Field(0).Type.ID() != arrow.STRING || out.Column(1).(*array.Int64).Value(2) != 4 {
		t.Fatalf("projection schema %s, computed %v", p.Schema(), out.Column(1))
	}
}
