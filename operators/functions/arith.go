package functions

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/compute"
	"github.com/apache/arrow/go/v17/arrow/scalar"

	"github.com/tierflow/tierflow/planner/expr"
)

// ErrOverflow: an integer result does not fit its type. SQL engines (DuckDB,
// PostgreSQL) fail the statement rather than wrap around as Go does, so +, -,
// *, unary minus and abs run arrow's checked kernels.
var ErrOverflow = errors.New("integer overflow")

// computeArith calls an arrow compute kernel; the checked arithmetic kernels'
// overflow comes back as ErrOverflow.
func computeArith(kernel string) ScalarFunc {
	return func(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
		d, err := compute.CallFunction(c.Context(), kernel, nil, args...)
		if err != nil {
			if errors.Is(err, arrow.ErrInvalid) && strings.Contains(err.Error(), "overflow") {
				return nil, fmt.Errorf("%w: the result does not fit %s", ErrOverflow, expr.TypeName(ret))
			}
			return nil, err
		}
		return toArray(c, d, n)
	}
}

// nullPropagating returns NULLs of ret when an argument is of the NULL type
// (the literal NULL): arrow has no kernels over it, and SQL's answer is NULL
// whatever the other argument is (NULL = NULL is NULL, 1 + NULL is NULL).
func nullPropagating(f ScalarFunc) ScalarFunc {
	return func(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
		for _, a := range args {
			if typeID(a) == arrow.NULL {
				return array.MakeArrayOfNull(c.Mem, ret, n), nil
			}
		}
		return f(c, ret, args, n)
	}
}

// temporalArith runs an int64 kernel over the microsecond values of temporal
// arguments and gives the result type ret.
func temporalArith(kernel string, c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	ia := make([]compute.Datum, len(args))
	for i, a := range args {
		ia[i] = asInt64(a)
	}
	defer func() {
		for i, a := range ia {
			if a != args[i] {
				a.Release()
			}
		}
	}()
	a, err := computeArith(kernel)(c, arrow.PrimitiveTypes.Int64, ia, n)
	if err != nil {
		return nil, err
	}
	return retype(a, ret), nil
}

func isTemporal(id arrow.Type) bool { return id == arrow.TIMESTAMP || id == arrow.DURATION }

func addFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	if isDecimal(args[0]) {
		return decArith(c, ret, args, n, decOpAdd)
	}
	if typeID(args[0]) == arrow.INTERVAL_MONTH_DAY_NANO || typeID(args[1]) == arrow.INTERVAL_MONTH_DAY_NANO {
		return calendarArith(c, ret, args, n, 1)
	}
	if isTemporal(typeID(args[0])) {
		return temporalArith("add", c, ret, args, n)
	}
	return computeArith("add")(c, ret, args, n)
}

func subtractFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	if isDecimal(args[0]) {
		return decArith(c, ret, args, n, decOpSub)
	}
	if typeID(args[1]) == arrow.INTERVAL_MONTH_DAY_NANO {
		return calendarArith(c, ret, args, n, -1)
	}
	if isTemporal(typeID(args[0])) {
		return temporalArith("subtract", c, ret, args, n)
	}
	return computeArith("subtract")(c, ret, args, n)
}

func negateFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	if isDecimal(args[0]) {
		return decUnary(c, ret, args, n, false)
	}
	if typeID(args[0]) == arrow.INTERVAL_MONTH_DAY_NANO {
		zero := compute.NewDatum(scalar.NewMonthDayNanoIntervalScalar(arrow.MonthDayNanoInterval{}))
		return calendarArith(c, ret, []compute.Datum{zero, args[0]}, n, -1)
	}
	if isTemporal(typeID(args[0])) {
		return temporalArith("negate", c, ret, args, n)
	}
	return computeArith("negate")(c, ret, args, n)
}

func absFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	if isDecimal(args[0]) {
		return decUnary(c, ret, args, n, true)
	}
	return computeArith("abs")(c, ret, args, n)
}

func multiplyFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	if isDecimal(args[0]) {
		return decArith(c, ret, args, n, decOpMul)
	}
	return computeArith("multiply")(c, ret, args, n)
}

// divideFunc is a loop, not the compute kernel: SQL here wants NULL on a zero
// divisor where the kernel fails the whole batch (ints) or gives Inf (floats).
// divideFunc is /: a DOUBLE quotient of integers too, and IEEE at zero
// (+-Inf, NaN for 0/0), as DuckDB.
func divideFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	if isFloat(args[0]) {
		return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
			o.f64(v[0].float64(i) / v[1].float64(i))
		})
	}
	return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
		o.f64(float64(v[0].int64(i)) / float64(v[1].int64(i)))
	})
}

// intDivideFunc is //: integers truncate toward zero; DOUBLEs divide plainly
// (DuckDB's 7.5 // 2 is 3.75); either by zero is NULL.
func intDivideFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	if isFloat(args[0]) {
		return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
			y := v[1].float64(i)
			if y == 0 {
				o.null()
				return
			}
			o.f64(v[0].float64(i) / y)
		})
	}
	// The one integer quotient that overflows: the type's minimum / -1.
	least := int64(math.MinInt64)
	if fw, ok := ret.(arrow.FixedWidthDataType); ok && fw.BitWidth() < 64 {
		least = -1 << (fw.BitWidth() - 1)
	}
	overflow := false
	a, err := rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
		y := v[1].int64(i)
		if y == 0 {
			o.null()
			return
		}
		x := v[0].int64(i)
		if y == -1 && x == least {
			overflow = true
			o.null()
			return
		}
		o.i64(x / y)
	})
	if err == nil && overflow {
		a.Release()
		return nil, fmt.Errorf("%w: the result does not fit %s", ErrOverflow, expr.TypeName(ret))
	}
	return a, err
}

func moduloFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	if isFloat(args[0]) {
		return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
			// By zero: NaN, as DuckDB (math.Mod's answer too).
			o.f64(math.Mod(v[0].float64(i), v[1].float64(i)))
		})
	}
	return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
		y := v[1].int64(i)
		if y == 0 {
			o.null()
			return
		}
		o.i64(v[0].int64(i) % y)
	})
}

func compareFunc(kernel string) ScalarFunc {
	return func(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
		if isDecimal(args[0]) {
			return decCompare(c, kernel, args, n)
		}
		if typeID(args[0]) == arrow.DURATION {
			ia := []compute.Datum{asInt64(args[0]), asInt64(args[1])}
			defer ia[0].Release()
			defer ia[1].Release()
			args = ia
		}
		return computeArith(kernel)(c, ret, args, n)
	}
}

// roundHalfAway rounds half away from zero (SQL's ROUND), not half to even.
func roundFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	if !isFloat(args[0]) {
		if len(args) == 1 {
			return computeArith("add_unchecked")(c, ret, []compute.Datum{args[0], compute.NewDatum(int64(0))}, n)
		}
		return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
			o.f64(roundTo(float64(v[0].int64(i)), v[1].int64(i)))
		})
	}
	return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
		d := int64(0)
		if len(v) > 1 {
			d = v[1].int64(i)
		}
		o.f64(roundTo(v[0].float64(i), d))
	})
}

func roundTo(x float64, d int64) float64 {
	if d == 0 {
		return math.Round(x)
	}
	p := math.Pow(10, float64(d))
	return math.Round(x*p) / p
}

func floorCeil(ceil bool) ScalarFunc {
	return func(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
		if !isFloat(args[0]) {
			return computeArith("add_unchecked")(c, ret, []compute.Datum{args[0], compute.NewDatum(int64(0))}, n)
		}
		return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
			if ceil {
				o.f64(math.Ceil(v[0].float64(i)))
			} else {
				o.f64(math.Floor(v[0].float64(i)))
			}
		})
	}
}

type f64Op func(float64) (float64, bool)

func sqrtOp(x float64) (float64, bool)  { return math.Sqrt(x), x >= 0 }
func lnOp(x float64) (float64, bool)    { return math.Log(x), x > 0 }
func log10Op(x float64) (float64, bool) { return math.Log10(x), x > 0 }
func expOp(x float64) (float64, bool)   { return math.Exp(x), true }

// f64Func applies op to a numeric argument (BIGINT or DOUBLE) giving DOUBLE;
// ok = false (a domain error) gives NULL.
func f64Func(op f64Op) ScalarFunc {
	return func(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
		fl := isFloat(args[0])
		return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
			var x float64
			if fl {
				x = v[0].float64(i)
			} else {
				x = float64(v[0].int64(i))
			}
			if r, ok := op(x); ok {
				o.f64(r)
			} else {
				o.null()
			}
		})
	}
}

func powerFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	fl := []bool{isFloat(args[0]), isFloat(args[1])}
	return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
		var xy [2]float64
		for k := 0; k < 2; k++ {
			if fl[k] {
				xy[k] = v[k].float64(i)
			} else {
				xy[k] = float64(v[k].int64(i))
			}
		}
		r := math.Pow(xy[0], xy[1])
		if math.IsNaN(r) {
			o.null()
			return
		}
		o.f64(r)
	})
}

// signFunc is sign(x): -1, 0 or 1 (0 for -0.0 and NaN).
func signFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	fl := isFloat(args[0])
	return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
		var x float64
		if fl {
			x = v[0].float64(i)
		} else {
			x = float64(v[0].int64(i))
		}
		switch {
		case x > 0:
			o.i64(1)
		case x < 0:
			o.i64(-1)
		default:
			o.i64(0)
		}
	})
}

// truncFunc is trunc(x [, d]): x rounded toward zero (to d decimal places).
func truncFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	if !isFloat(args[0]) && len(args) == 1 {
		return computeArith("add_unchecked")(c, ret, []compute.Datum{args[0], compute.NewDatum(int64(0))}, n)
	}
	fl := isFloat(args[0])
	return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
		var x float64
		if fl {
			x = v[0].float64(i)
		} else {
			x = float64(v[0].int64(i))
		}
		d := int64(0)
		if len(v) > 1 {
			d = v[1].int64(i)
		}
		if d == 0 {
			x = math.Trunc(x)
		} else {
			p := math.Pow(10, float64(d))
			x = math.Trunc(x*p) / p
		}
		if o.i64 != nil {
			o.i64(int64(x))
			return
		}
		o.f64(x)
	})
}

// logFunc is log(x), base 10 as DuckDB's, or log(b, x), base b.
func logFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	fl := make([]bool, len(args))
	for k := range args {
		fl[k] = isFloat(args[k])
	}
	return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
		xs := make([]float64, len(v))
		for k := range v {
			if fl[k] {
				xs[k] = v[k].float64(i)
			} else {
				xs[k] = float64(v[k].int64(i))
			}
		}
		if len(xs) == 1 {
			if xs[0] <= 0 {
				o.null()
				return
			}
			o.f64(math.Log10(xs[0]))
			return
		}
		b, x := xs[0], xs[1]
		if b <= 0 || b == 1 || x <= 0 {
			o.null()
			return
		}
		o.f64(math.Log(x) / math.Log(b))
	})
}

func log2Op(x float64) (float64, bool) { return math.Log2(x), x > 0 }
func cbrtOp(x float64) (float64, bool) { return math.Cbrt(x), true }

func piFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	o := newOut(c.Mem, ret, n)
	for i := 0; i < n; i++ {
		o.f64(math.Pi)
	}
	return o.finish(), nil
}
