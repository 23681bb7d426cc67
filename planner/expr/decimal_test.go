package expr

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
)

func TestParseDecimalLiterals(t *testing.T) {
	for _, c := range []struct {
		text string
		p, s int32
		want string
	}{
		{"0.06", 3, 2, "0.06"}, {"12.50", 4, 2, "12.50"}, {".5", 2, 1, "0.5"}, {"7.", 1, 0, "7"}, {"100.000", 6, 3, "100.000"},
	} {
		v, typ, ok := ParseDecimal(c.text)
		if !ok || !arrow.TypeEqual(typ, Decimal(c.p, c.s)) || DecimalString(v, c.s) != c.want {
			t.Errorf("%s: %v %v %s", c.text, ok, typ, DecimalString(v, c.s))
		}
	}
	for _, text := range []string{"1e3", "1.5e2", "12", "1234567890123456789012345678901234567890.5"} {
		if _, _, ok := ParseDecimal(text); ok {
			t.Errorf("%s read as a DECIMAL", text)
		}
	}
}

func TestDecimalFloat64IsTheNearestDouble(t *testing.T) {
	for _, text := range []string{"0.1", "0.06", "-123.456", "99999999999999.99", "0.3", "1234567890123456789.123"} {
		v, typ, _ := ParseDecimal(text)
		got := DecimalFloat64(v, typ.(*arrow.Decimal128Type).Scale)
		var want float64
		if _, err := fmtSscan(text, &want); err != nil || got != want {
			t.Errorf("%s: %v, want %v", text, got, want)
		}
	}
}

func TestCommonTypeOfDecimals(t *testing.T) {
	for _, c := range []struct {
		a, b, want arrow.DataType
	}{
		{Decimal(15, 2), Int64, Decimal(21, 2)},
		{Decimal(15, 2), arrow.PrimitiveTypes.Int32, Decimal(15, 2)},
		{Decimal(15, 2), Decimal(4, 3), Decimal(16, 3)},
		{Decimal(15, 2), Float64, Float64},
		{Decimal(38, 0), Decimal(10, 10), Decimal(38, 10)},
		{Date, Date, Date},
		{Date, Timestamp, Timestamp},
	} {
		if got, ok := CommonType(c.a, c.b); !ok || !arrow.TypeEqual(got, c.want) {
			t.Errorf("%s, %s: %v, want %s", TypeName(c.a), TypeName(c.b), got, TypeName(c.want))
		}
	}
}

// The arithmetic signatures type DECIMALs as DuckDB: + aligns the scales
// and adds a digit, * adds precisions and scales; / is a DOUBLE; a function
// that does not compute on DECIMALs takes a DOUBLE.
func TestDecimalSignatures(t *testing.T) {
	r := Builtins()
	for _, c := range []struct {
		fn   string
		args []arrow.DataType
		ret  arrow.DataType
	}{
		{"add", []arrow.DataType{Decimal(15, 2), Decimal(4, 3)}, Decimal(17, 3)},
		{"subtract", []arrow.DataType{Int64, Decimal(15, 2)}, Decimal(22, 2)},
		{"multiply", []arrow.DataType{Decimal(15, 2), Decimal(15, 2)}, Decimal(30, 4)},
		{"multiply", []arrow.DataType{Decimal(15, 2), Int64}, Decimal(34, 2)},
		{"divide", []arrow.DataType{Decimal(15, 2), Decimal(15, 2)}, Float64},
		{"sum", []arrow.DataType{Decimal(15, 2)}, Decimal(38, 2)},
		{"avg", []arrow.DataType{Decimal(15, 2)}, Float64},
		{"max", []arrow.DataType{Decimal(15, 2)}, Decimal(15, 2)},
		{"sqrt", []arrow.DataType{Decimal(15, 2)}, Float64},
		{"add", []arrow.DataType{Timestamp, Calendar}, Timestamp},
		{"subtract", []arrow.DataType{Date, Calendar}, Timestamp},
	} {
		res, err := r.Resolve(c.fn, c.args)
		if err != nil || !arrow.TypeEqual(res.Return, c.ret) {
			t.Errorf("%s%v: %v %v, want %s", c.fn, c.args, res.Return, err, TypeName(c.ret))
		}
	}
	res, _ := r.Resolve("sqrt", []arrow.DataType{Decimal(15, 2)})
	if res.Args[0].ID() != arrow.FLOAT64 {
		t.Errorf("sqrt of a DECIMAL takes %s, want DOUBLE", TypeName(res.Args[0]))
	}
}

func TestCastFoldsDecimalLiterals(t *testing.T) {
	lit := &Literal{Value: decimal128.FromI64(5), DataType: Decimal(2, 2)} // 0.05
	if l, ok := CastTo(lit, Decimal(15, 4)).(*Literal); !ok || DecimalString(l.Value.(decimal128.Num), 4) != "0.0500" {
		t.Errorf("0.05 as DECIMAL(15,4): %v", CastTo(lit, Decimal(15, 4)))
	}
	if l, ok := CastTo(lit, Float64).(*Literal); !ok || l.Value != 0.05 {
		t.Errorf("0.05 as DOUBLE: %v", CastTo(lit, Float64))
	}
	if _, ok := CastTo(lit, Decimal(3, 1)).(*Cast); !ok {
		t.Error("a cast that rounds was folded")
	}
	i, _ := NewLiteral(int64(24))
	if l, ok := CastTo(i, Decimal(21, 2)).(*Literal); !ok || DecimalString(l.Value.(decimal128.Num), 2) != "24.00" {
		t.Errorf("24 as DECIMAL(21,2): %v", CastTo(i, Decimal(21, 2)))
	}
}

func TestAddCalendarKeepsTheDayOrTheMonthsLast(t *testing.T) {
	d := func(y int, m time.Month, day int) time.Time { return time.Date(y, m, day, 0, 0, 0, 0, time.UTC) }
	for _, c := range []struct {
		t    time.Time
		iv   arrow.MonthDayNanoInterval
		sign int
		want time.Time
	}{
		{d(1994, 1, 31), arrow.MonthDayNanoInterval{Months: 1}, 1, d(1994, 2, 28)},
		{d(1996, 1, 31), arrow.MonthDayNanoInterval{Months: 1}, 1, d(1996, 2, 29)},
		{d(1996, 2, 29), arrow.MonthDayNanoInterval{Months: 12}, 1, d(1997, 2, 28)},
		{d(1995, 3, 31), arrow.MonthDayNanoInterval{Months: 1}, -1, d(1995, 2, 28)},
		{d(1995, 1, 15), arrow.MonthDayNanoInterval{Months: 13}, -1, d(1993, 12, 15)},
		{d(1994, 1, 1), arrow.MonthDayNanoInterval{Months: 3, Days: 2, Nanoseconds: int64(time.Hour)}, 1, d(1994, 4, 3).Add(time.Hour)},
	} {
		if got := AddCalendar(c.t, c.iv, c.sign); !got.Equal(c.want) {
			t.Errorf("%s %+d x %+v: %s, want %s", c.t.Format("2006-01-02"), c.sign, c.iv, got, c.want)
		}
	}
}

func fmtSscan(s string, f *float64) (int, error) { return fmt.Sscan(s, f) }
