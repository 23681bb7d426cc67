package lang

import (
	"os"
	"reflect"
	"testing"

	"github.com/alecthomas/participle/v2/lexer"
)

// TestEveryNodeHasAPosition walks the AST of every example and fails on any
// node whose position is unset or names another file: the binder's errors
// point at these positions.
func TestEveryNodeHasAPosition(t *testing.T) {
	for _, f := range exampleFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Parse(f, string(b))
		if err != nil {
			t.Fatal(err)
		}
		nodes := 0
		var walk func(v reflect.Value, path string)
		walk = func(v reflect.Value, path string) {
			switch v.Kind() {
			case reflect.Ptr, reflect.Interface:
				if !v.IsNil() {
					walk(v.Elem(), path)
				}
			case reflect.Slice:
				for i := 0; i < v.Len(); i++ {
					walk(v.Index(i), path)
				}
			case reflect.Struct:
				if v.Type() == positionType {
					return
				}
				if pf := v.FieldByName("Pos"); pf.IsValid() {
					nodes++
					p := pf.Interface().(lexer.Position)
					if p.Line < 1 || p.Column < 1 || p.Filename != f {
						t.Errorf("%s: %s %s has position %v", f, path, v.Type().Name(), p)
					}
				}
				for i := 0; i < v.NumField(); i++ {
					if v.Type().Field(i).IsExported() {
						walk(v.Field(i), path+"."+v.Type().Field(i).Name)
					}
				}
			}
		}
		walk(reflect.ValueOf(s), "Script")
		if nodes < 10 {
			t.Errorf("%s: only %d nodes walked", f, nodes)
		}
	}
}

func TestParseExprAndStatement(t *testing.T) {
	e, err := ParseExpr("e", "a.b[1] + -2 * f(x)")
	if err != nil {
		t.Fatal(err)
	}
	bin, ok := e.(*BinaryExpr)
	if !ok || bin.Op != OpAdd || bin.Pos.Column != 1 || bin.OpPos.Column != 8 {
		t.Fatalf("ParseExpr = %#v", e)
	}
	if got := Print(e); got != "a.b[1] + -2 * f(x)" {
		t.Errorf("Print = %q", got)
	}
	if _, err := ParseExpr("e", "a +"); err == nil {
		t.Error("ParseExpr(a +) succeeded")
	} else if pe := err.(*Error); pe.Pos.Column != 4 {
		t.Errorf("error at column %d, want 4: %v", pe.Pos.Column, err)
	}
	st, err := ParseStatement("s", "show models;")
	if err != nil {
		t.Fatal(err)
	}
	if sh, ok := st.(*Show); !ok || sh.What != ShowModels {
		t.Errorf("ParseStatement = %#v", st)
	}
	if _, err := ParseStatement("s", "show models; show tiers"); err == nil {
		t.Error("ParseStatement accepted two statements")
	}
}

func TestNormalisedWords(t *testing.T) {
	s, err := Parse("q", `create stream s (a integer, b text, c bool, d bytes, e real) from jetstream 'x' format csv rate 5 per minute;
		select a from s left outer join t on a != b cross join lateral f(a) g with (latency <= 5 milliseconds, priority best_effort)`)
	if err != nil {
		t.Fatal(err)
	}
	cs := s.Statements[0].(*CreateStream)
	var types []TypeName
	for _, c := range cs.Columns {
		types = append(types, c.Type.Name)
	}
	if want := []TypeName{TypeInt, TypeVarchar, TypeBoolean, TypeBlob, TypeFloat}; !reflect.DeepEqual(types, want) {
		t.Errorf("types = %v, want %v", types, want)
	}
	if cs.Source != SourceJetStream || cs.Format != FormatCSV || cs.Rate.Per != Minute {
		t.Errorf("stream = %+v", cs)
	}
	q := s.Statements[1].(*Query)
	joins := q.Select.From[0].Joins
	if joins[0].Kind != JoinLeft || joins[1].Kind != JoinCross || joins[1].Lateral.Alias != "g" {
		t.Errorf("joins = %+v %+v", joins[0], joins[1])
	}
	if on := joins[0].On.(*BinaryExpr); on.Op != OpNe {
		t.Errorf("!= parsed as %q", on.Op)
	}
	lat := q.Objectives[0].(*LatencyObjective)
	pri := q.Objectives[1].(*PriorityObjective)
	if lat.Unit != Millisecond || lat.Max.Value != "5" || pri.Class != PriorityBestEffort {
		t.Errorf("objectives = %+v %+v", lat, pri)
	}
}
