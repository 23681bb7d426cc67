package bind

import (
	"strings"
	"time"

	"github.com/alecthomas/participle/v2/lexer"
	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/expr"
)

// timestampLayouts are the texts a TIMESTAMP literal, or a string compared
// with a TIMESTAMP, may take: DuckDB's 'YYYY-MM-DD[ HH:MM[:SS[.f]]]', T for
// the space allowed.
var timestampLayouts = []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04", "2006-01-02T15:04", "2006-01-02"}

func parseTimestampText(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	for _, layout := range timestampLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// textAsTime is e as a TIMESTAMP literal when it is a string literal that
// meets a TIMESTAMP (ts >= '2026-01-01', ts BETWEEN '...' AND '...'), as
// DuckDB casts it; e otherwise. A text that is no timestamp is reported at p.
func (b *Binder) textAsTime(e, other expr.Expr, p lexer.Position) expr.Expr {
	l, ok := e.(*expr.Literal)
	if !ok || other == nil || !expr.IsString(l.DataType) || !expr.IsTemporal(other.Type()) {
		return e
	}
	s, _ := l.Value.(string)
	t, ok := parseTimestampText(s)
	if !ok {
		b.errorf(p, ErrBind, "'%s' is compared with a TIMESTAMP but is not one: want 'YYYY-MM-DD[ HH:MM:SS]'", s)
		return nil
	}
	out, _ := expr.NewLiteral(t)
	return out
}

func isComparison(op lang.BinaryOp) bool {
	switch op {
	case lang.OpEq, lang.OpNe, lang.OpLt, lang.OpLe, lang.OpGt, lang.OpGe, "!=":
		return true
	}
	return false
}

// castDate binds x::DATE (CAST, TRY_CAST, DATE 'YYYY-MM-DD'): the day of a
// TIMESTAMP, or of a text, as a TIMESTAMP at midnight. DuckDB's DATE is a
// type of its own; its values, compared, grouped or truncated, are these.
func (b *Binder) castDate(x *lang.CastExpr, v expr.Expr) expr.Expr {
	if l, ok := v.(*expr.Literal); ok && expr.IsString(l.DataType) {
		s, _ := l.Value.(string)
		t, ok := parseTimestampText(s)
		if !ok {
			if x.Try {
				return expr.CastTo(&expr.Literal{Value: nil, DataType: expr.Null}, expr.Timestamp)
			}
			b.errorf(x.Pos, ErrBind, "'%s' is not a date: want 'YYYY-MM-DD'", s)
			return nil
		}
		v, _ = expr.NewLiteral(t)
	}
	if l, ok := v.(*expr.Literal); ok {
		// A day already (DATE '1994-01-01'): the literal itself, so that
		// date '...' + interval '...' folds to a constant and a scan's
		// row-group pruning can read the comparison it bounds.
		if t, ok := l.Value.(time.Time); ok {
			if u := t.UTC(); u.Hour() == 0 && u.Minute() == 0 && u.Second() == 0 && u.Nanosecond() == 0 {
				return v
			}
		}
	}
	if expr.IsString(v.Type()) {
		v = &expr.Cast{Expr: v, To: expr.Timestamp, Try: x.Try}
	}
	if !expr.IsTemporal(v.Type()) && !expr.IsNullType(v.Type()) {
		b.errorf(x.Pos, ErrBind, "cannot cast %s to DATE", expr.TypeName(v.Type()))
		return nil
	}
	unit, _ := expr.NewLiteral("day")
	out, err := b.Funcs.NewCall("date_trunc", unit, v)
	return b.check(x.Pos, out, err)
}

// foldTimeArith computes a constant date or timestamp plus or minus a
// constant interval here, as a TIMESTAMP literal (date '1994-01-01' +
// interval '1' year is TIMESTAMP '1995-01-01'): the comparison it bounds
// then reads a constant, which a scan's row-group pruning can use. nil
// when the operands are not such constants.
func foldTimeArith(op lang.BinaryOp, l, r expr.Expr) expr.Expr {
	if op != lang.OpAdd && op != lang.OpSub {
		return nil
	}
	ll, ok1 := l.(*expr.Literal)
	rl, ok2 := r.(*expr.Literal)
	if !ok1 || !ok2 {
		return nil
	}
	if op == lang.OpAdd {
		if _, ok := ll.Value.(time.Time); !ok {
			ll, rl = rl, ll // interval + time
		}
	}
	t, ok := ll.Value.(time.Time)
	if !ok || !expr.IsTemporal(ll.DataType) {
		return nil
	}
	sign := 1
	if op == lang.OpSub {
		sign = -1
	}
	switch iv := rl.Value.(type) {
	case arrow.MonthDayNanoInterval:
		return &expr.Literal{Value: expr.AddCalendar(t, iv, sign), DataType: expr.Timestamp}
	case time.Duration:
		return &expr.Literal{Value: t.UTC().Add(iv * time.Duration(sign)), DataType: expr.Timestamp}
	}
	return nil
}

// asDateLiteral is e as a DATE literal when other is a DATE and e is a
// TIMESTAMP literal at midnight: the two then compare as days, and a DATE
// column is not cast to TIMESTAMP row by row (o_orderdate < date
// '1995-03-15').
func asDateLiteral(e, other expr.Expr) expr.Expr {
	l, ok := e.(*expr.Literal)
	if !ok || other == nil || other.Type().ID() != arrow.DATE32 || l.DataType.ID() != arrow.TIMESTAMP {
		return e
	}
	t, ok := l.Value.(time.Time)
	if !ok || !t.Equal(t.Truncate(24*time.Hour)) {
		return e
	}
	return &expr.Literal{Value: t.UTC(), DataType: expr.Date}
}
