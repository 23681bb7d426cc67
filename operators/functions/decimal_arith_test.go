package functions

import (
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/compute"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/arrow/scalar"

	"github.com/tierflow/tierflow/planner/expr"
)

// decBinary is the DECIMAL arithmetic loop before decArith (the
// benchmark's baseline): a Go slice of results copied into the Arrow
// buffer after, and a closure call per row. It applies op to every row; op reports false when the result does
// not fit 128 bits or the type's digits.
func decBinary(c *Ctx, ret arrow.DataType, args []compute.Datum, n int, op func(x, y decimal128.Num) (decimal128.Num, bool)) (arrow.Array, error) {
	x, y, err := decOperands(args)
	if err != nil {
		return nil, err
	}
	defer x.release()
	defer y.release()
	valid, nulls, allNull := validity(c.Mem, n, x, y)
	if allNull {
		return array.MakeArrayOfNull(c.Mem, ret, n), nil
	}
	out := make([]decimal128.Num, n)
	for i := range out {
		if valid != nil && !bitutil.BitIsSet(valid.Bytes(), i) {
			continue
		}
		r, ok := op(x.at(i), y.at(i))
		if !ok {
			if valid != nil {
				valid.Release()
			}
			return nil, fmt.Errorf("%w %s: %s", ErrDecimalOverflow, expr.TypeName(ret), decOpText(x.at(i), y.at(i), args))
		}
		out[i] = r
	}
	return decimalResult(c.Mem, ret, out, valid, nulls), nil
}

// decArithOperand draws DECIMAL(p,2) operands: mostly small, some near the
// type's bound, some past 64 bits when the type holds them, some NULL.
func decArithOperand(r *rand.Rand, p int32, n int, mem memory.Allocator) arrow.Array {
	b := array.NewDecimal128Builder(mem, &arrow.Decimal128Type{Precision: p, Scale: 2})
	defer b.Release()
	bound := decimal128.GetScaleMultiplier(int(p)).BigInt()
	for range n {
		switch r.IntN(12) {
		case 0:
			b.AppendNull()
		case 1: // near the bound, either sign
			v := new(big.Int).Sub(bound, big.NewInt(r.Int64N(1000)+1))
			if r.IntN(2) == 0 {
				v.Neg(v)
			}
			b.Append(decimal128.FromBigInt(v))
		case 2:
			b.Append(decimal128.FromI64(0))
		default:
			b.Append(decimal128.FromI64(r.Int64N(2_000_000) - 1_000_000))
		}
	}
	return b.NewArray()
}

// decArith gives, row by row, the exact result of +, - and * in big
// integers, NULL where an operand is, and an overflow error exactly when
// some row's result has more digits than the result type: for result
// precisions of at most 18 digits (the int64 loop's own bound) and beyond
// (operands past 64 bits), with a constant on either side, and into a
// result type too narrow for some rows.
func TestDecArithMatchesBigIntegers(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	c := NewCtx(mem)
	r := rand.New(rand.NewPCG(5, 6))
	ops := []struct {
		op   decOp
		name string
		f    func(z, x, y *big.Int) *big.Int
	}{{decOpAdd, "+", (*big.Int).Add}, {decOpSub, "-", (*big.Int).Sub}, {decOpMul, "*", (*big.Int).Mul}}
	for _, p := range []int32{9, 15, 18, 30} {
		for _, o := range ops {
			for _, shape := range []string{"columns", "constant-left", "constant-right", "columns into a tight type"} {
				const n = 300
				xa, ya := decArithOperand(r, p, n, mem), decArithOperand(r, p, n, mem)
				ret := expr.Decimal(p+1, 2)
				if o.op == decOpMul {
					ret = expr.Decimal(min(2*p, 38), 4)
				}
				if shape == "columns into a tight type" { // results past the type's digits
					ret = expr.Decimal(p, 2)
					if o.op == decOpMul {
						ret = expr.Decimal(p, 4)
					}
				}
				args := []compute.Datum{compute.NewDatum(xa), compute.NewDatum(ya)}
				k := r.IntN(n)
				for k < n && !xa.IsValid(k) || !ya.IsValid(k) {
					k = (k + 1) % n
				}
				switch shape {
				case "constant-left":
					args[0].Release()
					args[0] = compute.NewDatum(scalar.NewDecimal128Scalar(xa.(*array.Decimal128).Value(k), xa.DataType()))
				case "constant-right":
					args[1].Release()
					args[1] = compute.NewDatum(scalar.NewDecimal128Scalar(ya.(*array.Decimal128).Value(k), ya.DataType()))
				}
				at := func(i, j int) (*big.Int, bool) {
					a := args[j]
					if s, ok := a.(*compute.ScalarDatum); ok {
						return s.Value.(*scalar.Decimal128).Value.BigInt(), true
					}
					arr := []arrow.Array{xa, ya}[j].(*array.Decimal128)
					return arr.Value(i).BigInt(), arr.IsValid(i)
				}
				prec := ret.(*arrow.Decimal128Type).Precision
				wantErr := false
				want := make([]*big.Int, n)
				for i := range n {
					a, okA := at(i, 0)
					b, okB := at(i, 1)
					if !okA || !okB {
						continue
					}
					want[i] = o.f(new(big.Int), a, b)
					wantErr = wantErr || !expr.FitsDecimal(want[i], prec)
				}
				got, err := decArith(c, ret, args, n, o.op)
				name := shape + " " + o.name + " DECIMAL(" + big.NewInt(int64(p)).String() + ",2)"
				switch {
				case wantErr:
					if !errors.Is(err, ErrDecimalOverflow) {
						t.Errorf("%s: %v, want an overflow error", name, err)
					}
				case err != nil:
					t.Errorf("%s: %v", name, err)
				default:
					d := got.(*array.Decimal128)
					for i := range n {
						if (want[i] == nil) != d.IsNull(i) {
							t.Fatalf("%s row %d: null %v, want %v", name, i, d.IsNull(i), want[i] == nil)
						}
						if want[i] != nil && d.Value(i).BigInt().Cmp(want[i]) != 0 {
							t.Fatalf("%s row %d: %s, want %s", name, i, d.Value(i).BigInt(), want[i])
						}
					}
					got.Release()
				}
				args[0].Release()
				args[1].Release()
				xa.Release()
				ya.Release()
			}
		}
	}
}

// BenchmarkDecimalArith: l_extendedprice * (1 - l_discount) over a 64K-row
// batch of DECIMAL(15,2) values (TPC-H Q1's sum_disc_price), the closure
// per row into a Go slice it was (decBinary, baseline) and decArith's
// loops into the Arrow buffer, alternating in each iteration; ratio is
// decArith's time over the baseline's.
func BenchmarkDecimalArith(b *testing.B) {
	mem := memory.NewGoAllocator()
	c := NewCtx(mem)
	r := rand.New(rand.NewPCG(7, 8))
	const n = 1 << 16
	pb := array.NewDecimal128Builder(mem, &arrow.Decimal128Type{Precision: 15, Scale: 2})
	db := array.NewDecimal128Builder(mem, &arrow.Decimal128Type{Precision: 15, Scale: 2})
	for range n {
		pb.Append(decimal128.FromI64(r.Int64N(10_000_000) + 90_000))
		db.Append(decimal128.FromI64(r.Int64N(11)))
	}
	price, disc := pb.NewArray(), db.NewArray()
	one := compute.NewDatum(scalar.NewDecimal128Scalar(decimal128.FromI64(100), &arrow.Decimal128Type{Precision: 15, Scale: 2}))
	subT, mulT := expr.Decimal(16, 2), expr.Decimal(31, 4)
	run := func(arith func(ret arrow.DataType, args []compute.Datum, op decOp) (arrow.Array, error)) {
		d, err := arith(subT, []compute.Datum{one, compute.NewDatum(disc)}, decOpSub)
		if err != nil {
			b.Fatal(err)
		}
		m, err := arith(mulT, []compute.Datum{compute.NewDatum(price), compute.NewDatum(d)}, decOpMul)
		if err != nil {
			b.Fatal(err)
		}
		d.Release()
		m.Release()
	}
	old := func(ret arrow.DataType, args []compute.Datum, op decOp) (arrow.Array, error) {
		return decBinary(c, ret, args, n, op.slow(ret))
	}
	now := func(ret arrow.DataType, args []compute.Datum, op decOp) (arrow.Array, error) {
		return decArith(c, ret, args, n, op)
	}
	var base, loop time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		run(old)
		t1 := time.Now()
		run(now)
		base, loop = base+t1.Sub(t0), loop+time.Since(t1)
	}
	b.ReportMetric(float64(loop)/float64(base), "ratio")
	b.ReportMetric(float64(base.Microseconds())/float64(b.N), "baseline-µs/op")
	b.ReportMetric(float64(loop.Microseconds())/float64(b.N), "loop-µs/op")
}
