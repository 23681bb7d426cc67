package expr

import (
	"math"
	"sync"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
)

// Builtins returns a fresh registry of tierflow's built-in functions. Each call
// builds a new registry, so a caller adding functions never affects another;
// the functions themselves, never changed once made, are made once per
// process: every submission binds its script on the coordinator and each
// worker, and making them (their examples encode an image) cost a small
// query more than planning it did.
func Builtins() *Registry {
	return NewRegistry(builtinList()...)
}

var builtinList = sync.OnceValue(builtinFunctions)

func ret(t arrow.DataType) func([]arrow.DataType) arrow.DataType {
	return func([]arrow.DataType) arrow.DataType { return t }
}

func retArg(i int) func([]arrow.DataType) arrow.DataType {
	return func(a []arrow.DataType) arrow.DataType { return a[i] }
}

// sumType is sum's result: DECIMAL(38, s) for DECIMAL(p, s), else the
// argument's canonical type.
func sumType(a []arrow.DataType) arrow.DataType {
	if _, s, ok := DecimalOf(a[0]); ok && IsDecimal(a[0]) {
		return Decimal(MaxDecimalPrecision, s)
	}
	return a[0]
}

func p(name string, c Class) Param  { return Param{Name: name, Class: c} }
func pu(name string, c Class) Param { return Param{Name: name, Class: c, Unify: true} }

func sig(r func([]arrow.DataType) arrow.DataType, doc string, params ...Param) Signature {
	return Signature{Params: params, Return: r, ReturnDoc: doc}
}

func variadic(s Signature) Signature { s.Variadic = true; return s }

func ex(result any, args ...any) Example { return Example{Args: args, Result: result} }

var (
	num = NumericClass
	ts0 = time.Date(2024, 3, 1, 12, 34, 56, 789000000, time.UTC)
)

func arith(name, op, doc string, examples ...Example) *Function {
	return &Function{Name: name, Kind: Scalar, Operator: op, Doc: doc, Examples: examples,
		Signatures: []Signature{sig(retArg(0), "common numeric type", pu("x", num), pu("y", num))}}
}

func compare(name, op, doc string, examples ...Example) *Function {
	return &Function{Name: name, Kind: Scalar, Operator: op, Doc: doc, Examples: examples,
		Signatures: []Signature{decimals(sig(ret(Bool), "BOOLEAN", pu("x", AnyClass), pu("y", AnyClass)))}}
}

// decimals marks a signature whose implementation computes on DECIMALs.
func decimals(s Signature) Signature { s.Decimal = true; return s }

// decimalArith is the DECIMAL signature of x + y, x - y (mul false) and
// x * y (mul true), for two exact numbers of which at least one is a
// DECIMAL, as DuckDB types them: + and - align the scales and add a digit,
// * adds the scales and the precisions (at most 38 digits).
func decimalArith(mul bool) Signature {
	doc := "exact DECIMAL"
	return Signature{Params: []Param{p("x", num), p("y", num)}, ReturnDoc: doc, Decimal: true,
		Resolve: func(args []arrow.DataType) ([]arrow.DataType, arrow.DataType, bool) {
			if len(args) != 2 || !(IsDecimal(args[0]) || IsDecimal(args[1])) {
				return nil, nil, false
			}
			a, b := args[0], args[1]
			if IsNullType(a) {
				a = b
			}
			if IsNullType(b) {
				b = a
			}
			pa, sa, oka := DecimalOf(a)
			pb, sb, okb := DecimalOf(b)
			if !oka || !okb {
				return nil, nil, false
			}
			if mul {
				if sa+sb > MaxDecimalPrecision {
					return nil, nil, false
				}
				return []arrow.DataType{Decimal(pa, sa), Decimal(pb, sb)}, Decimal(min(pa+pb, MaxDecimalPrecision), sa+sb), true
			}
			sc := max(sa, sb)
			at := func(p, s int32) arrow.DataType { return Decimal(min(p-s+sc, MaxDecimalPrecision), sc) }
			return []arrow.DataType{at(pa, sa), at(pb, sb)}, Decimal(min(max(pa-sa, pb-sb)+sc+1, MaxDecimalPrecision), sc), true
		}}
}

func unaryDouble(name, doc string, examples ...Example) *Function {
	return &Function{Name: name, Kind: Scalar, Doc: doc, Examples: examples,
		Signatures: []Signature{sig(ret(Float64), "DOUBLE", p("x", num))}}
}

func unaryString(name, doc string, examples ...Example) *Function {
	return &Function{Name: name, Kind: Scalar, Doc: doc, Examples: examples,
		Signatures: []Signature{sig(ret(String), "VARCHAR", p("s", StringClass))}}
}

func stat(name, doc string, examples ...Example) *Function {
	return &Function{Name: name, Kind: AggregateKind, Doc: doc, Examples: examples,
		Signatures: []Signature{sig(ret(Float64), "DOUBLE", p("x", num))}}
}

func builtinFunctions() []*Function {
	add := arith("add", "+", "Sum of x and y; TIMESTAMP + INTERVAL shifts a timestamp. NULL if either is NULL.",
		ex(int64(3), int64(1), int64(2)), ex(3.5, 1.5, int64(2)), ex(nil, nil, int64(1)),
		ex(ts0.Add(10*time.Second), ts0, 10*time.Second))
	add.Signatures = append([]Signature{decimalArith(false)}, add.Signatures...)
	add.Signatures = append(add.Signatures,
		sig(ret(Timestamp), "TIMESTAMP", p("t", TimestampClass), p("i", CalendarClass)),
		sig(ret(Timestamp), "TIMESTAMP", p("i", CalendarClass), p("t", TimestampClass)),
		sig(ret(Calendar), "INTERVAL", p("a", CalendarClass), p("b", CalendarClass)),
		sig(ret(Timestamp), "TIMESTAMP", p("t", TimestampClass), p("i", IntervalClass)),
		sig(ret(Timestamp), "TIMESTAMP", p("i", IntervalClass), p("t", TimestampClass)),
		sig(ret(Interval), "INTERVAL", p("a", IntervalClass), p("b", IntervalClass)))
	add.Examples = append(add.Examples, ex(ts0.Add(time.Hour), time.Hour, ts0))
	sub := arith("subtract", "-", "Difference x - y; TIMESTAMP - INTERVAL and TIMESTAMP - TIMESTAMP (an INTERVAL) work too.",
		ex(int64(-1), int64(1), int64(2)), ex(0.5, 2.5, int64(2)),
		ex(ts0.Add(-time.Minute), ts0, time.Minute), ex(time.Hour, ts0.Add(time.Hour), ts0))
	sub.Signatures = append([]Signature{decimalArith(false)}, sub.Signatures...)
	sub.Signatures = append(sub.Signatures,
		sig(ret(Timestamp), "TIMESTAMP", p("t", TimestampClass), p("i", CalendarClass)),
		sig(ret(Calendar), "INTERVAL", p("a", CalendarClass), p("b", CalendarClass)),
		sig(ret(Timestamp), "TIMESTAMP", p("t", TimestampClass), p("i", IntervalClass)),
		sig(ret(Interval), "INTERVAL", pu("a", TimestampClass), pu("b", TimestampClass)),
		sig(ret(Interval), "INTERVAL", p("a", IntervalClass), p("b", IntervalClass)))
	neg := &Function{Name: "negate", Kind: Scalar, Operator: "-", Doc: "Arithmetic negation.",
		Signatures: []Signature{decimals(sig(retArg(0), "same as x", p("x", num))), sig(ret(Interval), "INTERVAL", p("x", IntervalClass)),
			sig(ret(Calendar), "INTERVAL", p("x", CalendarClass))},
		Examples: []Example{ex(int64(-5), int64(5)), ex(2.5, -2.5), ex(nil, nil)}}

	multiply := arith("multiply", "*", "Product of x and y; of DECIMALs exact.", ex(int64(6), int64(2), int64(3)), ex(7.5, 2.5, int64(3)))
	multiply.Signatures = append([]Signature{decimalArith(true)}, multiply.Signatures...)

	count := &Function{Name: "count", Kind: AggregateKind,
		Doc: "count(*) counts rows; count(x) counts rows where x is not NULL; count(DISTINCT x) counts distinct non-NULL values.",
		Signatures: []Signature{
			sig(ret(Int64), "BIGINT"),
			decimals(sig(ret(Int64), "BIGINT", p("x", AnyClass))),
		},
		Examples: []Example{ex(int64(2), []any{int64(1), nil, int64(3)}), ex(int64(0), []any{nil})}}

	fns := []*Function{
		add, sub, neg,
		multiply,
		// As DuckDB: / is a DOUBLE quotient even of integers, IEEE at zero
		// (1/0 is Infinity, 0/0 NaN); // is the integer quotient.
		{Name: "divide", Kind: Scalar, Operator: "/", Doc: "Quotient x / y as a DOUBLE, integers too (as DuckDB); division by zero gives Infinity, or NaN for 0 / 0.",
			Signatures: []Signature{sig(ret(Float64), "DOUBLE", pu("x", num), pu("y", num))},
			Examples:   []Example{ex(3.5, int64(7), int64(2)), ex(3.5, 7.0, int64(2)), ex(math.Inf(1), int64(1), int64(0)), ex(nil, nil, int64(2))}},
		arith("integer_divide", "//", "Integer quotient x // y, truncated toward zero; of DOUBLEs the plain quotient (as DuckDB). Division by zero gives NULL.",
			ex(int64(3), int64(7), int64(2)), ex(int64(-3), int64(-7), int64(2)), ex(3.5, 7.0, int64(2)), ex(nil, int64(1), int64(0))),
		arith("modulo", "%", "Remainder of x / y with the sign of x; modulo by zero gives NULL for integers, NaN for DOUBLEs (as DuckDB).",
			ex(int64(1), int64(7), int64(3)), ex(int64(-1), int64(-7), int64(3)), ex(int64(1), int64(7), int64(-3)), ex(-1.5, -7.5, int64(2)), ex(nil, int64(7), int64(0))),
		// MOD(x, y) is Flink's and DuckDB's spelling of %: ported queries
		// (Nexmark's q2, q22) use it.
		arith("mod", "", "Same as x % y: the remainder with the sign of x (Flink's and DuckDB's MOD).",
			ex(int64(1), int64(7), int64(3)), ex(int64(-1), int64(-7), int64(3)), ex(-1.5, -7.5, int64(2)), ex(nil, int64(7), int64(0))),

		compare("equal", "=", "TRUE when x equals y; NULL if either is NULL.", ex(true, int64(1), 1.0), ex(nil, nil, int64(1)), ex(false, "a", "b")),
		compare("not_equal", "<>", "TRUE when x differs from y (also spelled !=).", ex(true, int64(1), int64(2)), ex(false, "a", "a")),
		compare("less", "<", "TRUE when x < y.", ex(true, int64(1), int64(2)), ex(false, "b", "a")),
		compare("less_equal", "<=", "TRUE when x <= y.", ex(true, int64(2), int64(2)), ex(nil, nil, int64(2))),
		compare("greater", ">", "TRUE when x > y.", ex(true, 2.5, int64(2)), ex(false, ts0, ts0.Add(time.Second))),
		compare("greater_equal", ">=", "TRUE when x >= y.", ex(true, "b", "a"), ex(false, int64(1), int64(2))),

		{Name: "abs", Kind: Scalar, Doc: "Absolute value.", Signatures: []Signature{decimals(sig(retArg(0), "same as x", p("x", num)))},
			Examples: []Example{ex(int64(3), int64(-3)), ex(1.5, -1.5)}},
		{Name: "round", Kind: Scalar, Doc: "Rounds half away from zero, to d decimal places when d is given.",
			Signatures: []Signature{sig(retArg(0), "same as x", p("x", num)), sig(ret(Float64), "DOUBLE", p("x", num), p("d", IntegerClass))},
			Examples:   []Example{ex(3.0, 2.5), ex(-3.0, -2.5), ex(1.23, 1.234, int64(2)), ex(int64(4), int64(4))}},
		{Name: "floor", Kind: Scalar, Doc: "Largest integral value not greater than x.", Signatures: []Signature{sig(retArg(0), "same as x", p("x", num))},
			Examples: []Example{ex(1.0, 1.7), ex(-2.0, -1.2)}},
		{Name: "ceil", Kind: Scalar, Doc: "Smallest integral value not less than x.", Signatures: []Signature{sig(retArg(0), "same as x", p("x", num))},
			Examples: []Example{ex(2.0, 1.2), ex(-1.0, -1.7)}},
		unaryDouble("sqrt", "Square root; NULL for negative x.", ex(3.0, int64(9)), ex(nil, -1.0)),
		unaryDouble("ln", "Natural logarithm; NULL for x <= 0.", ex(0.0, 1.0), ex(nil, 0.0)),
		unaryDouble("log10", "Base-10 logarithm; NULL for x <= 0.", ex(2.0, int64(100))),
		unaryDouble("exp", "e raised to x.", ex(1.0, 0.0)),
		{Name: "power", Kind: Scalar, Doc: "x raised to the power y.", Signatures: []Signature{sig(ret(Float64), "DOUBLE", p("x", num), p("y", num))},
			Examples: []Example{ex(8.0, int64(2), int64(3)), ex(0.5, 2.0, int64(-1))}},
		{Name: "ceiling", Kind: Scalar, Doc: "Same as ceil.", Signatures: []Signature{sig(retArg(0), "same as x", p("x", num))},
			Examples: []Example{ex(2.0, 1.2)}},
		{Name: "trunc", Kind: Scalar, Doc: "x rounded toward zero, to d decimal places when d is given.",
			Signatures: []Signature{sig(retArg(0), "same as x", p("x", num)), sig(ret(Float64), "DOUBLE", p("x", num), p("d", IntegerClass))},
			Examples:   []Example{ex(-1.0, -1.7), ex(int64(4), int64(4)), ex(1.23, 1.239, int64(2))}},
		{Name: "sign", Kind: Scalar, Doc: "-1, 0 or 1 by the sign of x.", Signatures: []Signature{sig(ret(Int64), "BIGINT", p("x", num))},
			Examples: []Example{ex(int64(-1), -2.5), ex(int64(0), int64(0)), ex(int64(1), int64(7))}},
		{Name: "log", Kind: Scalar, Doc: "Base-10 logarithm of x (as DuckDB), or log(b, x): base b; NULL outside the domain.",
			Signatures: []Signature{sig(ret(Float64), "DOUBLE", p("x", num)), sig(ret(Float64), "DOUBLE", p("b", num), p("x", num))},
			Examples:   []Example{ex(3.0, int64(1000)), ex(3.0, int64(2), int64(8)), ex(nil, int64(0))}},
		unaryDouble("log2", "Base-2 logarithm; NULL for x <= 0.", ex(3.0, int64(8))),
		unaryDouble("cbrt", "Cube root.", ex(-2.0, int64(-8))),
		{Name: "pi", Kind: Scalar, Doc: "π.", Signatures: []Signature{sig(ret(Float64), "DOUBLE")}, Examples: []Example{ex(math.Pi)}},
		{Name: "pow", Kind: Scalar, Doc: "Same as power.", Signatures: []Signature{sig(ret(Float64), "DOUBLE", p("x", num), p("y", num))},
			Examples: []Example{ex(9.0, int64(3), int64(2))}},
		{Name: "greatest", Kind: Scalar, Doc: "Largest non-NULL argument; NULL only if all are NULL.",
			Signatures: []Signature{decimals(variadic(sig(retArg(0), "common type", pu("x", AnyClass))))},
			Examples:   []Example{ex(int64(3), int64(1), int64(3), int64(2)), ex(2.5, int64(1), nil, 2.5)}},
		{Name: "least", Kind: Scalar, Doc: "Smallest non-NULL argument; NULL only if all are NULL.",
			Signatures: []Signature{decimals(variadic(sig(retArg(0), "common type", pu("x", AnyClass))))},
			Examples:   []Example{ex(int64(1), int64(1), int64(3), int64(2)), ex("a", "b", "a")}},

		{Name: "coalesce", Kind: Scalar, Doc: "First non-NULL argument.",
			Signatures: []Signature{decimals(variadic(sig(retArg(0), "common type", pu("x", AnyClass))))},
			Examples:   []Example{ex(int64(2), nil, int64(2), int64(3)), ex("x", nil, "x"), ex(nil, nil, nil)}},
		{Name: "ifnull", Kind: Scalar, Doc: "x, or y when x is NULL (coalesce(x, y)).",
			Signatures: []Signature{decimals(sig(retArg(0), "common type", pu("x", AnyClass), pu("y", AnyClass)))},
			Examples:   []Example{ex(int64(2), nil, int64(2)), ex("a", "a", "b")}},
		{Name: "concat_ws", Kind: Scalar, Doc: "The non-NULL strings joined by sep; NULL only when sep is.",
			Signatures: []Signature{variadic(sig(ret(String), "VARCHAR", p("sep", StringClass), p("s", StringClass)))},
			Examples:   []Example{ex("a-c", "-", "a", nil, "c"), ex("", ",", nil), ex(nil, nil, "a")}},
		{Name: "nullif", Kind: Scalar, Doc: "NULL when x = y, else x.",
			Signatures: []Signature{decimals(sig(retArg(0), "common type", pu("x", AnyClass), pu("y", AnyClass)))},
			Examples:   []Example{ex(nil, int64(1), int64(1)), ex(int64(1), int64(1), int64(2))}},

		{Name: "string_concat", Kind: Scalar, Operator: "||", Doc: "a || b concatenates strings; NULL if either is NULL.",
			Signatures: []Signature{sig(ret(String), "VARCHAR", p("a", StringClass), p("b", StringClass))},
			Examples:   []Example{ex("ab", "a", "b"), ex(nil, "a", nil)}},
		{Name: "concat", Kind: Scalar, Doc: "Concatenates strings, skipping NULLs (as DuckDB); a || b is NULL if either is.",
			Signatures: []Signature{variadic(sig(ret(String), "VARCHAR", p("s", StringClass)))},
			Examples:   []Example{ex("ab", "a", "b"), ex("abc", "a", "b", "c"), ex("a", "a", nil), ex("", nil, nil)}},
		unaryString("lower", "Lower-case.", ex("abc", "AbC")),
		unaryString("upper", "Upper-case (ß is ẞ, as DuckDB).", ex("ABC", "aBc"), ex(nil, nil), ex("STRAẞE", "straße")),
		trimFn("trim", "Removes leading and trailing spaces, or with chars any of its characters.", ex("a b", "  a b "), ex("b", "xaxbyy", "xya")),
		trimFn("ltrim", "Removes leading spaces, or with chars any of its characters.", ex("a ", "  a "), ex("a--", "--a--", "-")),
		trimFn("rtrim", "Removes trailing spaces, or with chars any of its characters.", ex("  a", "  a "), ex("--a", "--a--", "-")),
		unaryString("lcase", "Same as lower.", ex("abc", "ABC")),
		unaryString("ucase", "Same as upper.", ex("ABC", "abc")),
		unaryString("reverse", "The characters of s in reverse order.", ex("cba", "abc"), ex("óż", "żó")),
		{Name: "left", Kind: Scalar, Doc: "The first n characters of s; all but the last -n when n is negative (as DuckDB).",
			Signatures: []Signature{sig(ret(String), "VARCHAR", p("s", StringClass), p("n", IntegerClass))},
			Examples:   []Example{ex("ab", "abc", int64(2)), ex("a", "abc", int64(-2)), ex("abc", "abc", int64(9)), ex("żó", "żółw", int64(2))}},
		{Name: "right", Kind: Scalar, Doc: "The last n characters of s; all but the first -n when n is negative (as DuckDB).",
			Signatures: []Signature{sig(ret(String), "VARCHAR", p("s", StringClass), p("n", IntegerClass))},
			Examples:   []Example{ex("bc", "abc", int64(2)), ex("c", "abc", int64(-2)), ex("", "abc", int64(0))}},
		{Name: "split_part", Kind: Scalar, Doc: "The k-th field (1-based; from the end when negative) of s split at sep; '' past either end.",
			Signatures: []Signature{sig(ret(String), "VARCHAR", p("s", StringClass), p("sep", StringClass), p("k", IntegerClass))},
			Examples:   []Example{ex("b", "a,b,c", ",", int64(2)), ex("c", "a,b,c", ",", int64(-1)), ex("", "a,b,c", ",", int64(4)), ex("b", "abc", "", int64(2))}},
		{Name: "split_index", Kind: Scalar, Doc: "The i-th field (0-based) of s split at sep; NULL past the end (Flink's SPLIT_INDEX).",
			Signatures: []Signature{sig(ret(String), "VARCHAR", p("s", StringClass), p("sep", StringClass), p("i", IntegerClass))},
			Examples:   []Example{ex("b", "a/b/c", "/", int64(1)), ex("a", "a/b/c", "/", int64(0)), ex(nil, "a/b/c", "/", int64(3))}},
		{Name: "lpad", Kind: Scalar, Doc: "s padded on the left with repeats of fill to n characters (cut to n when longer).",
			Signatures: []Signature{sig(ret(String), "VARCHAR", p("s", StringClass), p("n", IntegerClass), p("fill", StringClass))},
			Examples:   []Example{ex("xyabc", "abc", int64(5), "xy"), ex("ab", "abc", int64(2), "x")}},
		{Name: "rpad", Kind: Scalar, Doc: "s padded on the right with repeats of fill to n characters (cut to n when longer).",
			Signatures: []Signature{sig(ret(String), "VARCHAR", p("s", StringClass), p("n", IntegerClass), p("fill", StringClass))},
			Examples:   []Example{ex("abc00", "abc", int64(5), "0"), ex("ab", "abc", int64(2), "x")}},
		{Name: "repeat", Kind: Scalar, Doc: "s repeated n times ('' for n <= 0).",
			Signatures: []Signature{sig(ret(String), "VARCHAR", p("s", StringClass), p("n", IntegerClass))},
			Examples:   []Example{ex("ababab", "ab", int64(3)), ex("", "ab", int64(-1))}},
		{Name: "contains", Kind: Scalar, Doc: "TRUE when s contains sub.",
			Signatures: []Signature{sig(ret(Bool), "BOOLEAN", p("s", StringClass), p("sub", StringClass))},
			Examples:   []Example{ex(true, "tierflow", "rfl"), ex(false, "tierflow", "x")}},
		{Name: "strlen", Kind: Scalar, Doc: "Number of bytes of s (length counts characters).",
			Signatures: []Signature{sig(ret(Int64), "BIGINT", p("s", StringClass))},
			Examples:   []Example{ex(int64(4), "żó")}},
		{Name: "length", Kind: Scalar, Doc: "Number of characters (not bytes); also char_length.",
			Signatures: []Signature{sig(ret(Int64), "BIGINT", p("s", StringClass))},
			Examples:   []Example{ex(int64(3), "abc"), ex(int64(2), "żó"), ex(nil, nil)}},
		{Name: "char_length", Kind: Scalar, Doc: "Number of characters; same as length.",
			Signatures: []Signature{sig(ret(Int64), "BIGINT", p("s", StringClass))},
			Examples:   []Example{ex(int64(0), "")}},
		{Name: "substr", Kind: Scalar, Doc: "Substring of s from character start (1-based; from the end when negative), of at most n characters when n is given (before start when n is negative), as DuckDB.",
			Signatures: []Signature{sig(ret(String), "VARCHAR", p("s", StringClass), p("start", IntegerClass)),
				sig(ret(String), "VARCHAR", p("s", StringClass), p("start", IntegerClass), p("n", IntegerClass))},
			Examples: []Example{ex("cde", "abcde", int64(3)), ex("bc", "abcde", int64(2), int64(2)), ex("", "abc", int64(9)), ex("de", "abcde", int64(-2)), ex("a", "abcde", int64(0), int64(2)), ex("ab", "abcde", int64(3), int64(-2))}},
		{Name: "substring", Kind: Scalar, Doc: "Same as substr.",
			Signatures: []Signature{sig(ret(String), "VARCHAR", p("s", StringClass), p("start", IntegerClass)),
				sig(ret(String), "VARCHAR", p("s", StringClass), p("start", IntegerClass), p("n", IntegerClass))},
			Examples: []Example{ex("bc", "abcde", int64(2), int64(2))}},
		{Name: "instr", Kind: Scalar, Doc: "Same as strpos.",
			Signatures: []Signature{sig(ret(Int64), "BIGINT", p("s", StringClass), p("sub", StringClass))},
			Examples:   []Example{ex(int64(2), "żółw", "ó")}},
		{Name: "replace", Kind: Scalar, Doc: "Replaces every occurrence of from in s by to.",
			Signatures: []Signature{sig(ret(String), "VARCHAR", p("s", StringClass), p("from", StringClass), p("to", StringClass))},
			Examples:   []Example{ex("a-b-c", "a b c", " ", "-")}},
		{Name: "strpos", Kind: Scalar, Doc: "1-based character position of sub in s, 0 if absent.",
			Signatures: []Signature{sig(ret(Int64), "BIGINT", p("s", StringClass), p("sub", StringClass))},
			Examples:   []Example{ex(int64(3), "abcd", "cd"), ex(int64(0), "abc", "x")}},
		{Name: "starts_with", Kind: Scalar, Doc: "TRUE when s begins with prefix.",
			Signatures: []Signature{sig(ret(Bool), "BOOLEAN", p("s", StringClass), p("prefix", StringClass))},
			Examples:   []Example{ex(true, "tierflow", "tier"), ex(false, "tierflow", "flow")}},
		{Name: "ends_with", Kind: Scalar, Doc: "TRUE when s ends with suffix.",
			Signatures: []Signature{sig(ret(Bool), "BOOLEAN", p("s", StringClass), p("suffix", StringClass))},
			Examples:   []Example{ex(true, "tierflow", "flow")}},

		{Name: "regexp_matches", Kind: Scalar, Doc: "TRUE when the regular expression (RE2, as DuckDB's) matches anywhere in s; options: 'i' ignores case, 's' lets . match a newline.",
			Signatures: []Signature{sig(ret(Bool), "BOOLEAN", p("s", StringClass), p("pattern", StringClass)),
				sig(ret(Bool), "BOOLEAN", p("s", StringClass), p("pattern", StringClass), p("options", StringClass))},
			Examples: []Example{ex(true, "tierflow", "fl.w"), ex(false, "tierflow", "^flow"), ex(true, "TierFlow", "flow$", "i")}},
		{Name: "regexp_replace", Kind: Scalar, Doc: "s with the first match of the regular expression replaced (every match with option 'g'); \\1 in the replacement is the first group.",
			Signatures: []Signature{sig(ret(String), "VARCHAR", p("s", StringClass), p("pattern", StringClass), p("replacement", StringClass)),
				sig(ret(String), "VARCHAR", p("s", StringClass), p("pattern", StringClass), p("replacement", StringClass), p("options", StringClass))},
			Examples: []Example{ex("a-b c", "a b c", " ", "-"), ex("a-b-c", "a b c", " ", "-", "g"), ex("2024/03", "03-2024", `(\d+)-(\d+)`, `\2/\1`)}},
		{Name: "regexp_extract", Kind: Scalar, Doc: "The first match of the regular expression in s, or its group-th group (a constant); NULL when nothing matches or the group takes no part in the match (as Flink's REGEXP_EXTRACT; DuckDB gives '').",
			Signatures: []Signature{sig(ret(String), "VARCHAR", p("s", StringClass), p("pattern", StringClass)),
				sig(ret(String), "VARCHAR", p("s", StringClass), p("pattern", StringClass), p("group", IntegerClass)),
				sig(ret(String), "VARCHAR", p("s", StringClass), p("pattern", StringClass), p("group", IntegerClass), p("options", StringClass))},
			Examples: []Example{ex("123", "ab123c45", `\d+`), ex("c", "ab123c45", `(\d+)([a-z])`, int64(2)), ex(nil, "abc", `\d`), ex(nil, "ab", `a(x)?b`, int64(1)), ex("", "ab", `x*`), ex("AB", "xABy", "ab", int64(0), "i")}},
		{Name: "regexp_full_match", Kind: Scalar, Doc: "TRUE when the regular expression matches the whole of s.",
			Signatures: []Signature{sig(ret(Bool), "BOOLEAN", p("s", StringClass), p("pattern", StringClass)),
				sig(ret(Bool), "BOOLEAN", p("s", StringClass), p("pattern", StringClass), p("options", StringClass))},
			Examples: []Example{ex(true, "abc", "a.c"), ex(false, "abcd", "a.c"), ex(true, "ABC", "abc", "i"), ex(false, "ab", "a")}},
		{Name: "date_trunc", Kind: Scalar, Doc: "Truncates t to the unit: 'microsecond', 'millisecond', 'second', 'minute', 'hour', 'day', 'week' (ISO, from Monday), 'month', 'quarter', 'year', 'decade', 'century', 'millennium' (as DuckDB: the year cut to a multiple of 10, 100, 1000).",
			Signatures: []Signature{sig(ret(Timestamp), "TIMESTAMP", p("unit", StringClass), p("t", TimestampClass))},
			Examples: []Example{ex(time.Date(2024, 3, 1, 12, 34, 0, 0, time.UTC), "minute", ts0),
				ex(time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC), "day", ts0),
				ex(time.Date(2024, 2, 26, 0, 0, 0, 0, time.UTC), "week", ts0),
				ex(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), "quarter", ts0),
				ex(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), "decade", ts0),
				ex(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), "century", ts0)}},
		{Name: "date_part", Kind: Scalar, Doc: "A field of t, as DuckDB: 'year', 'quarter', 'month', 'week' (ISO), 'day', 'hour', 'minute', 'second', 'millisecond' and 'microsecond' (of the minute, seconds included), 'dow' (0 = Sunday), 'isodow' (1 = Monday), 'doy', 'decade', 'century', 'epoch' (seconds); also EXTRACT(unit FROM t).",
			Signatures: []Signature{sig(ret(Int64), "BIGINT", p("unit", StringClass), p("t", TimestampClass))},
			Examples: []Example{ex(int64(2024), "year", ts0), ex(int64(34), "minute", ts0), ex(int64(5), "dow", ts0),
				ex(int64(56789), "millisecond", ts0), ex(int64(1), "quarter", ts0), ex(int64(9), "week", ts0)}},
		{Name: "date_diff", Kind: Scalar, Doc: "The number of unit boundaries from start to end (as DuckDB: date_diff('month', Jan 31, Feb 1) is 1); units as date_trunc's; 'week' is whole weeks of the days between.",
			Signatures: []Signature{sig(ret(Int64), "BIGINT", p("unit", StringClass), p("start", TimestampClass), p("end", TimestampClass))},
			Examples:   []Example{ex(int64(1), "month", time.Date(2024, 1, 31, 23, 0, 0, 0, time.UTC), time.Date(2024, 2, 1, 0, 0, 0, 0, time.UTC)), ex(int64(0), "century", time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), ts0), ex(int64(-1), "day", ts0, ts0.Add(-13*time.Hour))}},
		{Name: "datediff", Kind: Scalar, Doc: "Same as date_diff.",
			Signatures: []Signature{sig(ret(Int64), "BIGINT", p("unit", StringClass), p("start", TimestampClass), p("end", TimestampClass))},
			Examples:   []Example{ex(int64(60), "minute", ts0, ts0.Add(time.Hour))}},
		{Name: "date_add", Kind: Scalar, Doc: "t + i.",
			Signatures: []Signature{sig(ret(Timestamp), "TIMESTAMP", p("t", TimestampClass), p("i", IntervalClass))},
			Examples:   []Example{ex(ts0.Add(time.Hour), ts0, time.Hour)}},
		{Name: "time_bucket", Kind: Scalar, Doc: "The start of the width-long bucket holding t; buckets are aligned on origin (DuckDB's default: Monday 2000-01-03).",
			Signatures: []Signature{sig(ret(Timestamp), "TIMESTAMP", p("width", IntervalClass), p("t", TimestampClass)),
				sig(ret(Timestamp), "TIMESTAMP", p("width", IntervalClass), p("t", TimestampClass), p("origin", TimestampClass))},
			Examples: []Example{ex(time.Date(2024, 3, 1, 12, 30, 0, 0, time.UTC), 15*time.Minute, ts0), ex(time.Date(2024, 2, 26, 0, 0, 0, 0, time.UTC), 7*24*time.Hour, ts0)}},
		{Name: "strftime", Kind: Scalar, Doc: "t written by format's codes (%Y %m %d %H %M %S, %f microseconds, %g milliseconds, %j %a %A %b %B %p %I %y %w %u %U %W %V %G %c %x %X; %-d without padding), as DuckDB.",
			Signatures: []Signature{sig(ret(String), "VARCHAR", p("t", TimestampClass), p("format", StringClass)), sig(ret(String), "VARCHAR", p("format", StringClass), p("t", TimestampClass))},
			Examples:   []Example{ex("2024-03-01 12:34:56.789000", ts0, "%Y-%m-%d %H:%M:%S.%f"), ex("Fri 1 Mar 24, 12PM", ts0, "%a %-d %b %y, %I%p")}},
		{Name: "date_format", Kind: Scalar, Doc: "t written by a Java date pattern (yyyy MM dd HH mm ss SSS, text in quotes), as Flink's DATE_FORMAT.",
			Signatures: []Signature{sig(ret(String), "VARCHAR", p("t", TimestampClass), p("pattern", StringClass))},
			Examples:   []Example{ex("2024-03-01", ts0, "yyyy-MM-dd"), ex("12:34", ts0, "HH:mm"), ex("2024-03-01T12:34:56.789", ts0, "yyyy-MM-dd'T'HH:mm:ss.SSS")}},
		{Name: "dayname", Kind: Scalar, Doc: "The English name of t's weekday.",
			Signatures: []Signature{sig(ret(String), "VARCHAR", p("t", TimestampClass))}, Examples: []Example{ex("Friday", ts0)}},
		{Name: "monthname", Kind: Scalar, Doc: "The English name of t's month.",
			Signatures: []Signature{sig(ret(String), "VARCHAR", p("t", TimestampClass))}, Examples: []Example{ex("March", ts0)}},
		{Name: "now", Kind: Scalar, Doc: "The current time; one value for the whole query (its start), as in DuckDB.",
			Signatures: []Signature{sig(ret(Timestamp), "TIMESTAMP")}, Volatile: true},
		{Name: "proctime", Kind: Scalar, Doc: "Processing time, as Flink's PROCTIME(): the clock when the row's batch is evaluated. A window over it closes by the processing time its rows carry (docs/language.md, \"Processing time\").",
			Signatures: []Signature{sig(ret(Timestamp), "TIMESTAMP")}, Volatile: true},
		{Name: "to_timestamp", Kind: Scalar, Doc: "Timestamp from seconds since the Unix epoch (fractions kept to the microsecond).",
			Signatures: []Signature{sig(ret(Timestamp), "TIMESTAMP", p("seconds", num))},
			Examples:   []Example{ex(time.Unix(1700000000, 0).UTC(), int64(1700000000)), ex(time.Unix(1, 500000000).UTC(), 1.5)}},
		{Name: "epoch", Kind: Scalar, Doc: "Seconds since the Unix epoch, with fraction.",
			Signatures: []Signature{sig(ret(Float64), "DOUBLE", p("t", TimestampClass))},
			Examples:   []Example{ex(1.5, time.Unix(1, 500000000).UTC())}},
		{Name: "epoch_ms", Kind: Scalar, Doc: "Milliseconds since the Unix epoch.",
			Signatures: []Signature{sig(ret(Int64), "BIGINT", p("t", TimestampClass))},
			Examples:   []Example{ex(int64(1500), time.Unix(1, 500000000).UTC())}},

		count,
		{Name: "count_if", Kind: AggregateKind, Doc: "The number of rows where the condition is TRUE; NULL when it is NULL on every row (as DuckDB).",
			Signatures: []Signature{sig(ret(Int64), "BIGINT", p("cond", BoolClass))},
			Examples:   []Example{ex(int64(2), []any{true, false, nil, true}), ex(int64(0), []any{false}), ex(nil, []any{nil})}},
		{Name: "bool_and", Kind: AggregateKind, Doc: "TRUE when every non-NULL value is TRUE; NULL when there are none.",
			Signatures: []Signature{sig(ret(Bool), "BOOLEAN", p("x", BoolClass))},
			Examples:   []Example{ex(false, []any{true, false, nil}), ex(true, []any{true, nil}), ex(nil, []any{nil})}},
		{Name: "bool_or", Kind: AggregateKind, Doc: "TRUE when any non-NULL value is TRUE; NULL when there are none.",
			Signatures: []Signature{sig(ret(Bool), "BOOLEAN", p("x", BoolClass))},
			Examples:   []Example{ex(true, []any{false, true, nil}), ex(false, []any{false, nil})}},
		{Name: "sum", Kind: AggregateKind, Doc: "Sum of non-NULL values (BIGINT for integers, DOUBLE for floats, DECIMAL(38, s) for DECIMAL(p, s), exact); NULL when there are none.",
			Signatures: []Signature{decimals(sig(sumType, "BIGINT, DOUBLE or DECIMAL(38, s)", p("x", num))), sig(ret(Interval), "INTERVAL", p("x", IntervalClass))},
			Examples:   []Example{ex(int64(4), []any{int64(1), nil, int64(3)}), ex(nil, []any{nil})}},
		{Name: "avg", Kind: AggregateKind, Doc: "Mean of non-NULL values as DOUBLE (of DECIMALs, their exact sum divided); NULL when there are none.",
			Signatures: []Signature{decimals(sig(ret(Float64), "DOUBLE", p("x", num)))},
			Examples:   []Example{ex(2.0, []any{int64(1), nil, int64(3)})}},
		{Name: "min", Kind: AggregateKind, Doc: "Smallest non-NULL value.",
			Signatures: []Signature{decimals(sig(retArg(0), "same as x", p("x", AnyClass)))},
			Examples:   []Example{ex(int64(1), []any{int64(3), nil, int64(1)}), ex("a", []any{"b", "a"})}},
		{Name: "max", Kind: AggregateKind, Doc: "Largest non-NULL value.",
			Signatures: []Signature{decimals(sig(retArg(0), "same as x", p("x", AnyClass)))},
			Examples:   []Example{ex(2.5, []any{1.0, 2.5, nil})}},

		stat("stddev_samp", "Sample standard deviation of the non-NULL values (n - 1); NULL for fewer than two.", ex(1.0, []any{int64(1), int64(2), nil, int64(3)})),
		stat("stddev", "Same as stddev_samp.", ex(math.Sqrt(2), []any{1.0, 3.0})),
		stat("stddev_pop", "Population standard deviation of the non-NULL values (n).", ex(1.0, []any{1.0, 3.0}), ex(nil, []any{nil})),
		stat("var_samp", "Sample variance of the non-NULL values (n - 1); NULL for fewer than two.", ex(2.0, []any{1.0, 3.0}), ex(nil, []any{4.0})),
		stat("variance", "Same as var_samp.", ex(1.0, []any{int64(1), int64(2), int64(3)})),
		stat("var_pop", "Population variance of the non-NULL values (n).", ex(1.0, []any{1.0, 3.0})),
		stat("median", "The middle of the non-NULL values; the mean of the two middle ones for an even count (quantile_cont(x, 0.5)).",
			ex(2.0, []any{int64(3), int64(1), nil, int64(2)}), ex(2.5, []any{4.0, 1.0, 2.0, 3.0})),
		{Name: "quantile_cont", Kind: AggregateKind, Doc: "The q-quantile (q from 0 to 1, a constant) of the non-NULL values, interpolated between the two nearest.",
			Signatures: []Signature{sig(ret(Float64), "DOUBLE", p("x", num), p("q", num))},
			Examples:   []Example{ex(1.75, []any{1.0, 2.0, 3.0, 4.0}, 0.25), ex(4.0, []any{int64(4), int64(1)}, int64(1))}},
		{Name: "quantile_disc", Kind: AggregateKind, Doc: "The q-quantile (q from 0 to 1, a constant) of the non-NULL values: the value at position ceil(n * q) - 1 in order (the lower middle for 0.5).",
			Signatures: []Signature{sig(retArg(0), "same as x", p("x", num), p("q", num))},
			Examples:   []Example{ex(2.0, []any{1.0, 2.0, 3.0, 4.0}, 0.5), ex(int64(1), []any{int64(3), int64(1), int64(2)}, 0.0), ex(int64(3), []any{int64(3), int64(1), int64(2)}, 0.7)}},
		{Name: "quantile", Kind: AggregateKind, Doc: "Same as quantile_disc (as in DuckDB).",
			Signatures: []Signature{sig(retArg(0), "same as x", p("x", num), p("q", num))},
			Examples:   []Example{ex(int64(2), []any{int64(1), int64(2), int64(3)}, 0.5)}},
		{Name: "string_agg", Kind: AggregateKind, Doc: "The non-NULL strings joined by sep (a constant, ',' when not given), in the order the rows arrive; NULL when there are none.",
			Signatures: []Signature{sig(ret(String), "VARCHAR", p("s", StringClass)), sig(ret(String), "VARCHAR", p("s", StringClass), p("sep", StringClass))},
			Examples:   []Example{ex("a-c", []any{"a", nil, "c"}, "-"), ex("x,y", []any{"x", "y"}), ex(nil, []any{nil}, "-")}},
		{Name: "string_agg_sorted", Kind: AggregateKind, Internal: true, Doc: "string_agg(s, sep ORDER BY k) binds to string_agg_sorted(sort_key(s, order, k), sep): the strings joined in the keys' order; string_agg(DISTINCT s, sep) to string_agg_sorted(sort_key(s, 'AL', s), sep, TRUE): each value once, in order.",
			Signatures: []Signature{sig(ret(String), "VARCHAR", p("key", StringClass)), sig(ret(String), "VARCHAR", p("key", StringClass), p("sep", StringClass)),
				sig(ret(String), "VARCHAR", p("key", StringClass), p("sep", StringClass), p("distinct", BoolClass))},
			Examples: []Example{ex(nil, []any{nil}, "-")}},
		{Name: "sort_key", Kind: Scalar, Internal: true, Doc: "What string_agg(s ORDER BY k...) sorts: the keys k (order: two letters per key, A or D, then F or L for NULLS FIRST or LAST) encoded to sort bytewise, then s; NULL when s is.",
			Signatures: []Signature{variadic(sig(ret(String), "VARCHAR", p("s", StringClass), p("order", StringClass), p("k", AnyClass)))},
			Examples:   []Example{ex(nil, nil, "AL", int64(1))}},

		{Name: "tumble", Kind: WindowKind, Doc: "GROUP BY TUMBLE(t, size): fixed, non-overlapping windows [k*size, (k+1)*size) on event time t.",
			Signatures: []Signature{sig(ret(Timestamp), "window", p("t", TimestampClass), p("size", IntervalClass))}},
		{Name: "hop", Kind: WindowKind, Doc: "GROUP BY HOP(t, size, slide): windows of length size starting every slide; a row belongs to size/slide windows.",
			Signatures: []Signature{sig(ret(Timestamp), "window", p("t", TimestampClass), p("size", IntervalClass), p("slide", IntervalClass))}},
		{Name: "session", Kind: WindowKind, Doc: "GROUP BY SESSION(t, gap): per group, a window closes after gap without rows.",
			Signatures: []Signature{sig(ret(Timestamp), "window", p("t", TimestampClass), p("gap", IntervalClass))}},
	}
	fns = append(fns, imageFunctions()...)
	for _, u := range datePartShorthands {
		fns = append(fns, &Function{Name: u.name, Kind: Scalar, Doc: "date_part('" + u.name + "', t).",
			Signatures: []Signature{sig(ret(Int64), "BIGINT", p("t", TimestampClass))}, Examples: []Example{ex(u.ofTs0, ts0)}})
	}
	return fns
}

// datePartShorthands are DuckDB's functions of one date part: year(t) is
// date_part('year', t). ofTs0 is the part of ts0, the example.
var datePartShorthands = []struct {
	name  string
	ofTs0 int64
}{
	{"year", 2024}, {"month", 3}, {"day", 1}, {"hour", 12}, {"minute", 34}, {"second", 56}, {"millisecond", 56789},
	{"microsecond", 56789000}, {"quarter", 1}, {"week", 9}, {"weekofyear", 9}, {"dayofweek", 5}, {"weekday", 5},
	{"dayofyear", 61}, {"dayofmonth", 1}, {"isodow", 5}, {"isoyear", 2024}, {"yearweek", 202409}, {"decade", 202},
	{"century", 21}, {"millennium", 3},
}

func trimFn(name, doc string, examples ...Example) *Function {
	return &Function{Name: name, Kind: Scalar, Doc: doc, Examples: examples,
		Signatures: []Signature{sig(ret(String), "VARCHAR", p("s", StringClass)), sig(ret(String), "VARCHAR", p("s", StringClass), p("chars", StringClass))}}
}

// WindowType is the kind of a GROUP BY window.
type WindowType int

// Window types.
const (
	Tumble WindowType = iota
	Hop
	Session
)

func (w WindowType) String() string { return [...]string{"TUMBLE", "HOP", "SESSION"}[w] }

// Window is a bound GROUP BY window: the event-time column and the sizes. Size is
// the window length (TUMBLE, HOP), Slide the hop (HOP), Gap the inactivity gap
// (SESSION). Grouped results carry window_start and window_end columns.
type Window struct {
	Type  WindowType
	Time  Expr
	Size  time.Duration
	Slide time.Duration
	Gap   time.Duration
}

func (w *Window) String() string {
	switch w.Type {
	case Hop:
		return "HOP(" + w.Time.String() + ", " + formatInterval(w.Size) + ", " + formatInterval(w.Slide) + ")"
	case Session:
		return "SESSION(" + w.Time.String() + ", " + formatInterval(w.Gap) + ")"
	}
	return "TUMBLE(" + w.Time.String() + ", " + formatInterval(w.Size) + ")"
}

// operatorSymbols spells calls of operator functions infix in String().
var operatorSymbols = map[string]string{
	"add": "+", "subtract": "-", "negate": "-", "multiply": "*", "divide": "/", "integer_divide": "//", "modulo": "%",
	"equal": "=", "not_equal": "<>", "less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">=",
	"string_concat": "||",
}
