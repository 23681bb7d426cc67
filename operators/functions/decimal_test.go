package functions

import (
	"errors"
	"math/big"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/compute"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/arrow/scalar"

	"github.com/tierflow/tierflow/planner/expr"
)

func decimals(t *testing.T, mem memory.Allocator, typ arrow.DataType, vals ...*big.Int) arrow.Array {
	t.Helper()
	b := array.NewDecimal128Builder(mem, typ.(*arrow.Decimal128Type))
	defer b.Release()
	for _, v := range vals {
		if v == nil {
			b.AppendNull()
		} else {
			b.Append(decimal128.FromBigInt(v))
		}
	}
	return b.NewArray()
}

func bigs(xs ...int64) []*big.Int {
	out := make([]*big.Int, len(xs))
	for i, x := range xs {
		out[i] = big.NewInt(x)
	}
	return out
}

// The DECIMAL kernels are exact in 64 bits and beyond (a value of more than
// 18 digits takes the 128-bit path), keep NULLs, and fail (never wrap) past
// the result type's 38 digits.
func TestDecimalArithmeticIsExact(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	c := NewCtx(mem)
	big19, _ := new(big.Int).SetString("9999999999999999999", 10) // 20 digits with the scale: 128-bit path
	x := decimals(t, mem, expr.Decimal(22, 2), append(bigs(125, -5, 0), nil, big19)...)
	defer x.Release()
	y := decimals(t, mem, expr.Decimal(22, 2), append(bigs(1, 7, 300, 4), big.NewInt(1))...)
	defer y.Release()
	args := []compute.Datum{compute.NewDatum(x), compute.NewDatum(y)}
	defer args[0].Release()
	defer args[1].Release()
	check := func(name string, a arrow.Array, want ...string) {
		t.Helper()
		defer a.Release()
		d := a.(*array.Decimal128)
		scale := d.DataType().(*arrow.Decimal128Type).Scale
		for i, w := range want {
			got := "NULL"
			if d.IsValid(i) {
				got = expr.DecimalString(d.Value(i), scale)
			}
			if got != w {
				t.Errorf("%s row %d: %s, want %s", name, i, got, w)
			}
		}
	}
	sum, err := addFunc(c, expr.Decimal(23, 2), args, 5)
	if err != nil {
		t.Fatal(err)
	}
	check("+", sum, "1.26", "0.02", "3.00", "NULL", "100000000000000000.00")
	diff, err := subtractFunc(c, expr.Decimal(23, 2), args, 5)
	if err != nil {
		t.Fatal(err)
	}
	check("-", diff, "1.24", "-0.12", "-3.00", "NULL", "99999999999999999.98")
	prod, err := multiplyFunc(c, expr.Decimal(38, 4), args, 5)
	if err != nil {
		t.Fatal(err)
	}
	check("*", prod, "0.0125", "-0.0035", "0.0000", "NULL", "999999999999999.9999")
	// 10^34 (10^36 unscaled) times 100 does not fit DECIMAL(38, 4): an
	// error, not a wrapped value.
	huge := new(big.Int).Exp(big.NewInt(10), big.NewInt(36), nil)
	h := decimals(t, mem, expr.Decimal(38, 2), huge)
	defer h.Release()
	hd := compute.NewDatum(h)
	defer hd.Release()
	s := compute.NewDatum(scalar.NewDecimal128Scalar(decimal128.FromI64(10000), expr.Decimal(38, 2)))
	if _, err := multiplyFunc(c, expr.Decimal(38, 4), []compute.Datum{hd, s}, 1); !errors.Is(err, ErrOverflow) {
		t.Errorf("10^34 * 100 in DECIMAL(38,4): %v", err)
	}
	cmp, err := compareFunc("less")(c, expr.Bool, args, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer cmp.Release()
	for i, want := range []any{false, true, true, nil, false} {
		got := any(nil)
		if cmp.IsValid(i) {
			got = cmp.(*array.Boolean).Value(i)
		}
		if got != want {
			t.Errorf("< row %d: %v, want %v", i, got, want)
		}
	}
}

// A DECIMAL sum is exact past 64 bits: 20 values of 9.2e17 add up to more
// than an int64 holds.
func TestDecimalSumPast64Bits(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	v := big.NewInt(920_000_000_000_000_000)
	vals := make([]*big.Int, 20)
	for i := range vals {
		vals[i] = v
	}
	vals[3] = nil
	a := decimals(t, mem, expr.Decimal(18, 0), vals...)
	defer a.Release()
	acc, err := Builtins().NewAccumulator("sum", false, a.DataType(), expr.Decimal(38, 0))
	if err != nil {
		t.Fatal(err)
	}
	acc.Grow(1)
	acc.Update(make([]uint32, 20), a, 0)
	out := acc.Finish(mem, []uint32{0})
	defer out.Release()
	want := new(big.Int).Mul(v, big.NewInt(19))
	if got := out.(*array.Decimal128).Value(0).BigInt(); got.Cmp(want) != 0 {
		t.Fatalf("sum %s, want %s", got, want)
	}
	avg, _ := Builtins().NewAccumulator("avg", false, a.DataType(), expr.Float64)
	avg.Grow(1)
	avg.Update(make([]uint32, 20), a, 0)
	m := avg.Finish(mem, []uint32{0})
	defer m.Release()
	if got := m.(*array.Float64).Value(0); got != 9.2e17 {
		t.Fatalf("avg %v, want 9.2e17", got)
	}
}
