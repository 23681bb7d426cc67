package ml

import (
	"errors"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

type labelledSession struct{ fakeSession }

func (*labelledSession) Metadata(key string) (string, bool) {
	if key == LabelsKey {
		return "a,b,c", true
	}
	return "", false
}

func TestPlanHeadsFromQueryColumns(t *testing.T) {
	cols := []arrow.Field{
		{Name: "cls", Type: arrow.BinaryTypes.String},
		{Name: "p", Type: arrow.PrimitiveTypes.Float32},
		TensorField("vec", []int64{2}),
	}
	s := &labelledSession{}
	heads, err := PlanHeads(s, cols)
	if err != nil {
		t.Fatal(err)
	}
	if len(heads) != 2 || heads[0].Kind != Classify || heads[0].Output != "probs" || len(heads[0].Labels) != 3 ||
		heads[1].Kind != Embed || heads[1].Output != "emb" || heads[1].Columns[0] != "vec" {
		t.Fatalf("heads %+v", heads)
	}
	// The planned heads bind, and the output schema is input + the query's
	// columns, with no error column when asked.
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	m, err := Bind(s, inputSchema(), Config{Input: "x", Heads: heads, NoErrorColumn: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := fieldNames(m.OutputSchema()); got != "id, x, cls, p, vec" {
		t.Fatalf("schema %s", got)
	}
	in := inputRecord(t, mem, 0, 4, map[int]bool{2: true}, nil)
	defer in.Release()
	out, err := m.Infer(mem, in)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	if cls := out.Column(2).(*array.String); cls.Value(1) != "b" || !cls.IsNull(2) {
		t.Errorf("labels %v", cls)
	}
	if n, last := m.Failed(); n != 1 || last == "" {
		t.Errorf("failed %d %q", n, last)
	}
}

func TestPlanHeadsErrors(t *testing.T) {
	cases := map[string][]arrow.Field{
		"string labels without metadata": {{Name: "l", Type: arrow.BinaryTypes.String}, {Name: "s", Type: arrow.PrimitiveTypes.Float32}},
		"no scalar output":               {{Name: "f", Type: arrow.PrimitiveTypes.Float32}},
		"tensor of the wrong size":       {TensorField("v", []int64{7})},
		"unsupported type":               {{Name: "b", Type: arrow.FixedWidthTypes.Boolean}},
	}
	for name, cols := range cases {
		if _, err := PlanHeads(&fakeSession{}, cols); !errors.Is(err, ErrSchema) {
			t.Errorf("%s: want ErrSchema, got %v", name, err)
		}
	}
	heads, err := PlanHeads(&fakeSession{}, []arrow.Field{{Name: "l", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.PrimitiveTypes.Float32}})
	if err != nil || heads[0].Labels != nil {
		t.Errorf("int labels: %+v %v", heads, err)
	}
}
