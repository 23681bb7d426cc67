package expr

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
)

func TestEveryBuiltinIsDocumentedAndItsExamplesTypeCheck(t *testing.T) {
	r := Builtins()
	fns := r.Functions()
	if len(fns) < 40 {
		t.Fatalf("only %d builtins", len(fns))
	}
	for _, f := range fns {
		if f.Doc == "" || len(f.Signatures) == 0 {
			t.Errorf("%s: missing doc or signatures", f.Name)
		}
		if f.Kind != WindowKind && !f.Volatile && len(f.Examples) == 0 {
			t.Errorf("%s: no examples", f.Name)
		}
		for _, e := range f.Examples {
			var types []arrow.DataType
			for _, a := range e.Args {
				v := a
				if col, ok := a.([]any); ok {
					v = nil
					for _, x := range col {
						if x != nil {
							v = x
						}
					}
				}
				l, err := NewLiteral(v)
				if err != nil {
					t.Fatalf("%s: %v", f.Name, err)
				}
				types = append(types, l.Type())
			}
			res, err := f.Resolve(types)
			if err != nil {
				t.Errorf("%s example %s: %v", f.Name, f.ExampleString(e), err)
				continue
			}
			if e.Result != nil {
				want, _ := NewLiteral(e.Result)
				if !arrow.TypeEqual(want.Type(), res.Return) {
					t.Errorf("%s example %s: result literal is %s, signature returns %s", f.Name, f.ExampleString(e), TypeName(want.Type()), TypeName(res.Return))
				}
			}
		}
	}
}

func TestResolveCoercesAndRejects(t *testing.T) {
	r := Builtins()
	i32 := &Column{Index: 0, Name: "a", DataType: arrow.PrimitiveTypes.Int32}
	f32 := &Column{Index: 1, Name: "b", DataType: arrow.PrimitiveTypes.Float32}
	s := &Column{Index: 2, Name: "s", DataType: String}
	c, err := r.NewCall("add", i32, f32)
	if err != nil {
		t.Fatal(err)
	}
	if !arrow.TypeEqual(c.Type(), Float64) || c.String() != "(CAST(a AS DOUBLE) + CAST(b AS DOUBLE))" {
		t.Fatalf("got %s : %s", c, c.Type())
	}
	if _, err := r.NewCall("add", i32, s); !errors.Is(err, ErrNoSignature) {
		t.Fatalf("int + varchar: %v", err)
	}
	if _, err := r.NewCall("nosuch", i32); !errors.Is(err, ErrUnknownFunction) {
		t.Fatalf("unknown: %v", err)
	}
	if _, err := r.NewCall("sum", i32); !errors.Is(err, ErrWrongKind) {
		t.Fatalf("sum as scalar: %v", err)
	}
	agg, err := r.NewAggregate("sum", false, i32)
	if err != nil || !arrow.TypeEqual(agg.Type(), Int64) {
		t.Fatalf("sum(int) = %v, %v", agg, err)
	}
	cnt, err := r.NewAggregate("count", true, s)
	if err != nil || cnt.String() != "count(DISTINCT s)" {
		t.Fatalf("count distinct: %v %v", cnt, err)
	}
	star, _ := r.NewAggregate("count", false)
	if star.String() != "count(*)" {
		t.Fatal(star.String())
	}
	ts := &Column{Index: 3, Name: "ts", DataType: Timestamp}
	lit, _ := NewLiteral(10 * time.Second)
	shifted, err := r.NewCall("add", ts, lit)
	if err != nil || !arrow.TypeEqual(shifted.Type(), Timestamp) {
		t.Fatalf("ts + interval: %v %v", shifted, err)
	}
	diff, err := r.NewCall("subtract", ts, ts)
	if err != nil || !arrow.TypeEqual(diff.Type(), Interval) {
		t.Fatalf("ts - ts: %v %v", diff, err)
	}
	null, _ := NewLiteral(nil)
	co, err := r.NewCall("coalesce", null, i32, f32)
	if err != nil || !arrow.TypeEqual(co.Type(), Float64) {
		t.Fatalf("coalesce: %v %v", co, err)
	}
	if _, ok := co.Args[0].(*Literal); !ok || !arrow.TypeEqual(co.Args[0].Type(), Float64) {
		t.Fatalf("NULL literal not typed: %s", co.Args[0].Type())
	}
}

func TestOperatorsAndSpecialForms(t *testing.T) {
	r := Builtins()
	for _, tc := range []struct {
		sym   string
		arity int
		name  string
	}{{"+", 2, "add"}, {"-", 1, "negate"}, {"-", 2, "subtract"}, {"!=", 2, "not_equal"}, {"||", 2, "string_concat"}, {"//", 2, "integer_divide"}, {">=", 2, "greater_equal"}} {
		f, ok := r.Operator(tc.sym, tc.arity)
		if !ok || f.Name != tc.name {
			t.Errorf("Operator(%q, %d) = %v", tc.sym, tc.arity, f)
		}
	}
	x := &Column{Index: 0, Name: "x", DataType: arrow.PrimitiveTypes.Int32}
	one, _ := NewLiteral(1)
	half, _ := NewLiteral(0.5)
	str, _ := NewLiteral("a")
	in, err := NewIn(x, []Expr{one, half}, true)
	if err != nil || in.String() != "(CAST(x AS DOUBLE) NOT IN (CAST(1 AS DOUBLE), 0.5))" {
		t.Fatalf("%v %v", in, err)
	}
	if _, err := NewIn(x, []Expr{str}, false); !errors.Is(err, ErrNoSignature) {
		t.Fatal(err)
	}
	b, err := NewBetween(x, one, half, false)
	if err != nil || !arrow.TypeEqual(b.Lo.Type(), Float64) {
		t.Fatal(b, err)
	}
	gt, _ := r.NewCall("greater", x, one)
	cs, err := NewCase([]When{{Cond: gt, Then: one}}, half)
	if err != nil || !arrow.TypeEqual(cs.Type(), Float64) || !strings.HasPrefix(cs.String(), "CASE WHEN (CAST(x AS BIGINT) > 1)") {
		t.Fatalf("%v %v", cs, err)
	}
	if _, err := NewCase([]When{{Cond: one, Then: one}}, nil); !errors.Is(err, ErrNoSignature) {
		t.Fatal("non-boolean WHEN accepted")
	}
	and, err := NewLogic(OpAnd, gt, &IsNull{Expr: x})
	if err != nil || and.String() != "((CAST(x AS BIGINT) > 1) AND (x IS NULL))" {
		t.Fatal(and, err)
	}
	if _, err := NewLike(x, str, false, false); !errors.Is(err, ErrNoSignature) {
		t.Fatal("LIKE on int accepted")
	}
	// Transform rewrites bottom-up and leaves the original untouched.
	renamed := Transform(and, func(e Expr) Expr {
		if c, ok := e.(*Column); ok {
			return &Column{Index: c.Index + 1, Name: "y", DataType: c.DataType}
		}
		return e
	})
	if got := Columns(renamed); len(got) != 1 || got[0] != 1 || Columns(and)[0] != 0 {
		t.Fatalf("Transform: %v / %v", renamed, Columns(and))
	}
	agg, _ := r.NewAggregate("max", false, x)
	if !HasAggregate(&Not{Expr: &IsNull{Expr: agg}}) || HasAggregate(and) {
		t.Fatal("HasAggregate")
	}
}

func TestTypeNames(t *testing.T) {
	for _, n := range []string{"int", "BIGINT", "double", "varchar", "timestamp", "boolean", "interval", "float", "date"} {
		dt, err := TypeByName(n)
		if err != nil {
			t.Fatal(err)
		}
		back, err := TypeByName(TypeName(dt))
		if err != nil || !arrow.TypeEqual(back, dt) {
			t.Errorf("%s -> %s -> %v", n, TypeName(dt), back)
		}
	}
	if _, err := TypeByName("blob"); !errors.Is(err, ErrUnknownType) {
		t.Fatal(err)
	}
	w := &Window{Type: Hop, Time: &Column{Name: "ts", DataType: Timestamp}, Slide: 5 * time.Second, Size: time.Minute}
	if w.String() != "HOP(ts, INTERVAL '1' MINUTE, INTERVAL '5' SECOND)" {
		t.Fatal(w.String())
	}
}
