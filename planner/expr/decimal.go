package expr

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
)

// DECIMAL(p, s) is an exact number of p digits, s of them after the point,
// stored as its unscaled integer (1.25 in DECIMAL(15,2) is 125) in Arrow's
// 128-bit decimal. Arithmetic on decimals is exact, as DuckDB's: a literal
// with a point (0.06) is a DECIMAL, so 0.06 - 0.01 is 0.05 exactly, where
// binary doubles give 0.049999999999999996.

// MaxDecimalPrecision is the most digits a DECIMAL holds (128 bits).
const MaxDecimalPrecision = 38

// Decimal is the type DECIMAL(p, s).
func Decimal(p, s int32) arrow.DataType { return &arrow.Decimal128Type{Precision: p, Scale: s} }

// IsDecimal reports whether t is a DECIMAL.
func IsDecimal(t arrow.DataType) bool { return t != nil && t.ID() == arrow.DECIMAL128 }

// DecimalOf is t as a DECIMAL's precision and scale: a DECIMAL's own, an
// integer type's digits with scale 0 (BIGINT is DECIMAL(19,0)). ok is false
// for other types.
func DecimalOf(t arrow.DataType) (p, s int32, ok bool) {
	switch t.ID() {
	case arrow.DECIMAL128:
		d := t.(*arrow.Decimal128Type)
		return d.Precision, d.Scale, true
	case arrow.INT8, arrow.UINT8:
		return 3, 0, true
	case arrow.INT16, arrow.UINT16:
		return 5, 0, true
	case arrow.INT32, arrow.UINT32:
		return 10, 0, true
	case arrow.INT64:
		return 19, 0, true
	case arrow.UINT64:
		return 20, 0, true
	}
	return 0, 0, false
}

// commonDecimal is the DECIMAL both a and b (integers or decimals) fit: the
// larger scale and the larger count of integer digits, at most 38 digits.
func commonDecimal(a, b arrow.DataType) arrow.DataType {
	pa, sa, _ := DecimalOf(a)
	pb, sb, _ := DecimalOf(b)
	s := max(sa, sb)
	return Decimal(min(max(pa-sa, pb-sb)+s, MaxDecimalPrecision), s)
}

// ParseDecimal reads a numeric literal with a point ("0.06", "12.", ".5")
// as a DECIMAL: its digits are the precision, those after the point the
// scale. ok is false for an exponent form (1e3 is a DOUBLE, as in DuckDB)
// and for more than 38 digits.
func ParseDecimal(text string) (v decimal128.Num, t arrow.DataType, ok bool) {
	if strings.ContainsAny(text, "eE") {
		return v, nil, false
	}
	ip, fp, found := strings.Cut(text, ".")
	if !found {
		return v, nil, false
	}
	ip = strings.TrimLeft(ip, "0")
	digits := ip + fp
	if digits == "" {
		digits = "0"
	}
	p := int32(max(len(ip), 1) + len(fp))
	if p > MaxDecimalPrecision {
		return v, nil, false
	}
	bi, good := new(big.Int).SetString(digits, 10)
	if !good {
		return v, nil, false
	}
	return decimal128.FromBigInt(bi), Decimal(p, int32(len(fp))), true
}

// pow10f are the powers of ten a float64 holds exactly.
var pow10f = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// DecimalFloat64 is the double nearest to v / 10^scale: one correctly
// rounded division when both fit a double exactly, else the decimal text
// read back (so 0.1 in DECIMAL(2,1) is the double 0.1 parses to).
func DecimalFloat64(v decimal128.Num, scale int32) float64 {
	if hi := v.HighBits(); (hi == 0 && v.LowBits() < 1<<53) || (hi == -1 && v.LowBits() > math.MaxUint64-1<<53) {
		if scale >= 0 && int(scale) < len(pow10f) {
			return float64(int64(v.LowBits())) / pow10f[scale]
		}
	}
	f, _ := strconv.ParseFloat(DecimalString(v, scale), 64)
	return f
}

// DecimalString is v / 10^scale in plain digits: -1.50, 0.05, 12.
func DecimalString(v decimal128.Num, scale int32) string {
	neg := v.Sign() < 0
	if neg {
		v = v.Negate()
	}
	s := v.BigInt().String()
	if scale > 0 {
		if len(s) <= int(scale) {
			s = strings.Repeat("0", int(scale)-len(s)+1) + s
		}
		s = s[:len(s)-int(scale)] + "." + s[len(s)-int(scale):]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// DecimalFromFloat is x as a DECIMAL of the scale, rounded half away from
// zero; ok is false when it does not fit 38 digits (or is NaN or infinite).
func DecimalFromFloat(x float64, scale int32) (decimal128.Num, bool) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return decimal128.Num{}, false
	}
	r := new(big.Rat).SetFloat64(x)
	if r == nil {
		return decimal128.Num{}, false
	}
	r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
	return ratToDecimal(r)
}

// DecimalFromRat is r as a DECIMAL of the scale, rounded half away from
// zero; ok is false when it does not fit 38 digits.
func DecimalFromRat(r *big.Rat, scale int32) (decimal128.Num, bool) {
	r = new(big.Rat).Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(bigTen, big.NewInt(int64(scale)), nil)))
	return ratToDecimal(r)
}

// ratToDecimal rounds r half away from zero to an integer that fits 38
// digits.
func ratToDecimal(r *big.Rat) (decimal128.Num, bool) {
	num, den := new(big.Int).Set(r.Num()), r.Denom()
	neg := num.Sign() < 0
	num.Abs(num)
	q, m := new(big.Int).QuoRem(num, den, new(big.Int))
	if m.Lsh(m, 1).Cmp(den) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if neg {
		q.Neg(q)
	}
	if !FitsDecimal(q, MaxDecimalPrecision) {
		return decimal128.Num{}, false
	}
	return decimal128.FromBigInt(q), true
}

var bigTen = big.NewInt(10)

// FitsDecimal reports whether the unscaled integer v has at most p digits.
func FitsDecimal(v *big.Int, p int32) bool {
	lim := new(big.Int).Exp(bigTen, big.NewInt(int64(p)), nil)
	return new(big.Int).Abs(v).Cmp(lim) < 0
}

// DecimalRat is v / 10^scale as an exact rational.
func DecimalRat(v decimal128.Num, scale int32) *big.Rat {
	den := new(big.Int).Exp(bigTen, big.NewInt(int64(scale)), nil)
	return new(big.Rat).SetFrac(v.BigInt(), den)
}

// RescaleDecimal is v (of scale from) at scale to, rounded half away from
// zero when digits are dropped; ok is false when it does not fit p digits.
func RescaleDecimal(v decimal128.Num, from, to, p int32) (decimal128.Num, bool) {
	if from == to {
		return v, FitsDecimal(v.BigInt(), p)
	}
	r := DecimalRat(v, from)
	r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(bigTen, big.NewInt(int64(to)), nil)))
	out, ok := ratToDecimal(r)
	return out, ok && FitsDecimal(out.BigInt(), p)
}

func decimalTypeName(t *arrow.Decimal128Type) string {
	return fmt.Sprintf("DECIMAL(%d,%d)", t.Precision, t.Scale)
}

// parseDecimalType reads DECIMAL, DECIMAL(p) and DECIMAL(p, s) (NUMERIC the
// same); DECIMAL alone is DECIMAL(18,3), as DuckDB's.
func parseDecimalType(name string) (arrow.DataType, bool, error) {
	n := strings.ToUpper(strings.Join(strings.Fields(name), ""))
	var rest string
	switch {
	case strings.HasPrefix(n, "DECIMAL"):
		rest = n[len("DECIMAL"):]
	case strings.HasPrefix(n, "NUMERIC"):
		rest = n[len("NUMERIC"):]
	default:
		return nil, false, nil
	}
	if rest == "" {
		return Decimal(18, 3), true, nil
	}
	if !strings.HasPrefix(rest, "(") || !strings.HasSuffix(rest, ")") {
		return nil, true, fmt.Errorf("%w %q: want DECIMAL(precision, scale)", ErrUnknownType, name)
	}
	ps := strings.Split(rest[1:len(rest)-1], ",")
	if len(ps) > 2 {
		return nil, true, fmt.Errorf("%w %q: want DECIMAL(precision, scale)", ErrUnknownType, name)
	}
	p, err := strconv.Atoi(ps[0])
	s := 0
	if err == nil && len(ps) == 2 {
		s, err = strconv.Atoi(ps[1])
	}
	if err != nil || p < 1 || p > MaxDecimalPrecision || s < 0 || s > p {
		return nil, true, fmt.Errorf("%w %q: a DECIMAL has 1 to %d digits and a scale from 0 to its precision", ErrUnknownType, name, MaxDecimalPrecision)
	}
	return Decimal(int32(p), int32(s)), true, nil
}
