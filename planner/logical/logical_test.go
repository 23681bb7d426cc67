package logical

import (
	"testing"
	"time"

	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/expr"
)

func TestNodesAreImmutable(t *testing.T) {
	st := &catalog.Stream{Name: "s", Columns: []catalog.Column{{Name: "a", Type: "INT"}, {Name: "img", Type: "TENSOR(FLOAT, 2, 2)"}}}
	scan, err := NewScan(st, nil, "s", nil, Pos{})
	if err != nil {
		t.Fatal(err)
	}
	m := &catalog.Model{Name: "m", Variants: []*catalog.Variant{{Name: "v"}}}
	col := &expr.Column{Index: 1, Name: "img", DataType: scan.Schema().Field(1).Type}
	lm := NewLateralModel(scan, m, "m", []expr.Expr{col}, "x", nil, Pos{})
	pred, _ := expr.NewLiteral(true)
	f := &Filter{Input: lm, Pred: pred}
	scan2, _ := NewScan(st, nil, "s", []int{1}, Pos{})
	f2 := f.WithChildren(lm.WithChildren(scan2))
	if f.Input != lm || lm.Input != scan {
		t.Fatal("WithChildren changed the original")
	}
	if got := len(f2.Schema().Fields()); got != 1 {
		t.Fatalf("rebuilt filter has %d columns, want 1", got)
	}
	if v, _ := scan.Schema().Field(1).Metadata.GetValue(catalog.ShapeKey); v != "2,2" {
		t.Fatalf("tensor shape metadata %q", v)
	}
	// An identity transform returns the very same tree.
	if Transform(f, func(n Node) Node { return n }) != Node(f) {
		t.Fatal("identity Transform rebuilt the tree")
	}
}

func TestSelectivity(t *testing.T) {
	reg := expr.Builtins()
	a := &expr.Column{Index: 0, Name: "a", DataType: expr.Int64}
	one, _ := expr.NewLiteral(int64(1))
	eq, _ := reg.NewCall("equal", a, one)
	lt, _ := reg.NewCall("less", a, one)
	and, _ := expr.NewLogic(expr.OpAnd, eq, lt)
	or, _ := expr.NewLogic(expr.OpOr, eq, lt)
	not, _ := expr.NewNot(eq)
	for _, c := range []struct {
		e    expr.Expr
		want float64
	}{{eq, 0.1}, {lt, 1.0 / 3}, {and, 0.1 / 3}, {or, 0.1 + 1.0/3 - 0.1/3}, {not, 0.9}} {
		if got := Selectivity(c.e); got < c.want-1e-12 || got > c.want+1e-12 {
			t.Errorf("Selectivity(%s) = %v, want %v", c.e, got, c.want)
		}
	}
}

// A rebuilt window join is still windowed: rewrites go through WithChildren.
func TestWindowJoinKeepsWindow(t *testing.T) {
	mk := func(name string) *Scan {
		st := &catalog.Stream{Name: name, Columns: []catalog.Column{{Name: "k", Type: "INT"}, {Name: "ts", Type: "TIMESTAMP"}}}
		s, err := NewScan(st, nil, name, nil, Pos{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	l, r := mk("l"), mk("r")
	w := &JoinWindow{Kind: Tumble, Size: 10 * time.Second,
		LeftTime:  &expr.Column{Index: 1, Name: "ts", DataType: expr.Timestamp},
		RightTime: &expr.Column{Index: 3, Name: "ts", DataType: expr.Timestamp}}
	j := NewWindowJoin(InnerJoin, l, r, nil, w, Pos{})
	j2 := j.WithChildren(mk("l"), mk("r")).(*Join)
	if j2.Window != w || j2.Kind != InnerJoin {
		t.Fatalf("WithChildren lost the window: %+v", j2)
	}
	if got, want := j2.Describe(), "Inner Join WINDOW TUMBLE(ts | ts, 10s)"; got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}
	if NewJoin(InnerJoin, l, r, nil, Pos{}).Window != nil {
		t.Error("a plain join has a window")
	}
}
