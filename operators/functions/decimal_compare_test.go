package functions

import (
	"cmp"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
)

// randomDecimals are values of either width: most fit in 64 bits, some do not
// (DECIMAL(38,s) sums), some are equal to the constant.
func randomDecimals(n int, r *rand.Rand) []decimal128.Num {
	out := make([]decimal128.Num, n)
	for i := range out {
		switch r.IntN(10) {
		case 0:
			out[i] = decimal128.New(r.Int64N(4)-2, r.Uint64())
		case 1:
			out[i] = decimal128.FromI64(2400)
		default:
			out[i] = decimal128.FromI64(r.Int64N(10000) - 5000)
		}
	}
	return out
}

// Every comparison, a column against a constant on either side (both
// widths of constant) and two columns, gives CompareDecimal's answer.
func TestCompareDecimalsMatchesRowByRow(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const n = 1003 // not whole bytes: the tail rows too
	col, col2 := randomDecimals(n, r), randomDecimals(n, r)
	consts := []decimal128.Num{decimal128.FromI64(2400), decimal128.FromI64(-7), decimal128.New(1, 5), decimal128.New(-1, 5)}
	want := map[string]func(int) bool{
		"less": func(c int) bool { return c < 0 }, "less_equal": func(c int) bool { return c <= 0 },
		"equal": func(c int) bool { return c == 0 }, "not_equal": func(c int) bool { return c != 0 },
		"greater": func(c int) bool { return c > 0 }, "greater_equal": func(c int) bool { return c >= 0 },
	}
	check := func(name string, x, y decArg) {
		for op, test := range want {
			out := make([]byte, bitutil.BytesForBits(n))
			for i := range out {
				out[i] = 0xff // compareDecimals clears what it is given
			}
			compareDecimals(out, cmpMask[op], x, y, n)
			for i := range n {
				if got, w := bitutil.BitIsSet(out, i), test(CompareDecimal(x.at(i), y.at(i))); got != w {
					t.Fatalf("%s %s row %d (%s vs %s): %v, want %v", name, op, i, x.at(i).BigInt(), y.at(i).BigInt(), got, w)
				}
			}
		}
	}
	for _, c := range consts {
		k := decArg{vals: []decimal128.Num{c}, const_: true}
		check("column-constant", decArg{vals: col}, k)
		check("constant-column", k, decArg{vals: col})
	}
	check("columns", decArg{vals: col}, decArg{vals: col2})
}

// BenchmarkDecimalCompare: l_quantity < 24 and l_discount BETWEEN 0.05
// AND 0.07 (its two halves) over a 64K-row DECIMAL(15,2) column of
// TPC-H's values (quantities 1-50, discounts 0.00-0.10 at random): the
// closure per row it was at first (baseline), the int64 loop with a
// branch per row that replaced it (loop) and compareColumnConst, the
// branch-free eight rows a byte (now), alternating; ratio is now's time
// over the baseline's, ratio-loop now's over the loop's.
func BenchmarkDecimalCompare(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	qty, disc := make([]decimal128.Num, 1<<16), make([]decimal128.Num, 1<<16)
	for i := range qty {
		qty[i] = decimal128.FromI64((r.Int64N(50) + 1) * 100)
		disc[i] = decimal128.FromI64(r.Int64N(11))
	}
	cases := []struct {
		col  []decimal128.Num
		op   string
		k    int64
		test func(int) bool
	}{
		{qty, "less", 2400, func(c int) bool { return c < 0 }},
		{disc, "greater_equal", 5, func(c int) bool { return c >= 0 }},
		{disc, "less_equal", 7, func(c int) bool { return c <= 0 }},
	}
	out := make([]byte, bitutil.BytesForBits(int64(len(qty))))
	var base, loop, now time.Duration
	for range b.N {
		for _, c := range cases {
			x, y := decArg{vals: c.col}, decArg{vals: []decimal128.Num{decimal128.FromI64(c.k)}, const_: true}
			t0 := time.Now()
			for i := range c.col {
				bitutil.SetBitTo(out, i, c.test(CompareDecimal(x.at(i), y.at(i))))
			}
			t1 := time.Now()
			compareColumnConstLoop(out, cmpMask[c.op], c.col, y.vals[0])
			t2 := time.Now()
			compareDecimals(out, cmpMask[c.op], x, y, len(c.col))
			base, loop, now = base+t1.Sub(t0), loop+t2.Sub(t1), now+time.Since(t2)
		}
	}
	b.ReportMetric(float64(now)/float64(base), "ratio")
	b.ReportMetric(float64(now)/float64(loop), "ratio-loop")
	b.ReportMetric(float64(base.Microseconds())/float64(b.N), "baseline-µs/op")
	b.ReportMetric(float64(loop.Microseconds())/float64(b.N), "loop-µs/op")
	b.ReportMetric(float64(now.Microseconds())/float64(b.N), "now-µs/op")
}

// compareColumnConstLoop is the column-against-constant loop as it was
// before compareColumnConst (the benchmark's middle baseline).
func compareColumnConstLoop(out []byte, mask uint, vals []decimal128.Num, k decimal128.Num) {
	clear(out)
	c := int64(k.LowBits())
	for i, v := range vals {
		var r int
		if fits64(v) {
			r = cmp.Compare(int64(v.LowBits()), c)
		} else {
			r = v.Cmp(k)
		}
		out[i>>3] |= byte(mask>>uint(r+1)&1) << uint(i&7)
	}
}
