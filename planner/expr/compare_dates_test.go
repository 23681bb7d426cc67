package expr

import (
	"testing"
	"time"
)

// A DATE compared with a TIMESTAMP constant at midnight (what DATE '...' +
// INTERVAL folds to) is compared with a DATE constant, on either side, for
// every comparison: no cast of the column per row. A constant within a
// day, or a TIMESTAMP column, keeps the TIMESTAMP comparison.
func TestDateComparedWithMidnightStaysADate(t *testing.T) {
	r := Builtins()
	d := &Column{Index: 0, Name: "d", DataType: Date}
	ts := &Column{Index: 1, Name: "ts", DataType: Timestamp}
	midnight := &Literal{Value: time.Date(1995, 1, 1, 0, 0, 0, 0, time.UTC), DataType: Timestamp}
	noon := &Literal{Value: time.Date(1995, 1, 1, 12, 0, 0, 0, time.UTC), DataType: Timestamp}
	for _, op := range []string{"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"} {
		for _, args := range [][]Expr{{d, midnight}, {midnight, d}} {
			c, err := r.NewCall(op, args...)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range c.Args {
				if a.Type().ID() != Date.ID() {
					t.Errorf("%s: argument %s is %s, want DATE", c, a, TypeName(a.Type()))
				}
				if _, cast := a.(*Cast); cast {
					t.Errorf("%s: %s is cast", c, a)
				}
			}
		}
	}
	for _, args := range [][]Expr{{d, noon}, {ts, midnight}} {
		c, err := r.NewCall("less", args...)
		if err != nil {
			t.Fatal(err)
		}
		if c.Args[0].Type().ID() != Timestamp.ID() || c.Args[1].Type().ID() != Timestamp.ID() {
			t.Errorf("%s: compared as %s and %s, want TIMESTAMPs", c, TypeName(c.Args[0].Type()), TypeName(c.Args[1].Type()))
		}
	}
}
