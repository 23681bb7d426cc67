package functions

import (
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
	const n = 1000
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

// BenchmarkDecimalCompare: l_quantity < 24 over a 64K-row DECIMAL(15,2)
// column, the closure per row it was (baseline) and the int64 loop
// alternating; ratio is the loop's time over the baseline's.
func BenchmarkDecimalCompare(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	col := make([]decimal128.Num, 1<<16)
	for i := range col {
		col[i] = decimal128.FromI64(r.Int64N(5000) + 100)
	}
	x, y := decArg{vals: col}, decArg{vals: []decimal128.Num{decimal128.FromI64(2400)}, const_: true}
	out := make([]byte, bitutil.BytesForBits(int64(len(col))))
	var base, now time.Duration
	for range b.N {
		t0 := time.Now()
		test := map[string]func(int) bool{"less": func(c int) bool { return c < 0 }}["less"]
		for i := range col {
			bitutil.SetBitTo(out, i, test(CompareDecimal(x.at(i), y.at(i))))
		}
		t1 := time.Now()
		compareDecimals(out, cmpMask["less"], x, y, len(col))
		base, now = base+t1.Sub(t0), now+time.Since(t1)
	}
	b.ReportMetric(float64(now)/float64(base), "ratio")
	b.ReportMetric(float64(base.Microseconds())/float64(b.N), "baseline-µs/op")
	b.ReportMetric(float64(now.Microseconds())/float64(b.N), "loop-µs/op")
}
