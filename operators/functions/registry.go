package functions

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/compute"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
)

// ErrNoImplementation is returned for a function name with no implementation.
var ErrNoImplementation = errors.New("no implementation")

// ErrBadArgument is a constant argument a function cannot take (a quantile
// fraction outside [0, 1]).
var ErrBadArgument = errors.New("bad argument")

// Ctx is what a function needs at run time: the allocator for its results and a
// context carrying it for arrow compute.
type Ctx struct {
	Mem memory.Allocator
	ctx context.Context
}

// NewCtx binds an allocator.
func NewCtx(mem memory.Allocator) *Ctx {
	return &Ctx{Mem: mem, ctx: compute.WithAllocator(context.Background(), dataflow.Unrefused(mem))}
}

// Context is a context.Context carrying the allocator for arrow compute calls.
func (c *Ctx) Context() context.Context { return c.ctx }

// ScalarFunc computes a function over n rows. Each argument is an array of
// length n or a scalar broadcast to every row. The result is a new array of
// length n and type ret, owned by the caller.
type ScalarFunc func(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error)

// AggFunc makes a grouped accumulator for an aggregate whose (coerced) argument
// type is arg (nil for count(*)) and whose result type is ret.
type AggFunc func(arg, ret arrow.DataType) (Accumulator, error)

// ParamAggFunc is an AggFunc whose call has constant arguments after the
// aggregated one (quantile_cont(x, 0.9), string_agg(s, ', ')): params holds
// their values (int64, float64, string, ...).
type ParamAggFunc func(arg, ret arrow.DataType, params ...any) (Accumulator, error)

// Registry maps function names to implementations.
type Registry struct {
	scalars map[string]ScalarFunc
	aggs    map[string]AggFunc
	paggs   map[string]ParamAggFunc
}

// WithClock is r with proctime() reading clock: the processing clock of one
// query (exec.Options.Clock), so a test can step it.
func (r *Registry) WithClock(clock func() time.Time) *Registry {
	c := &Registry{scalars: make(map[string]ScalarFunc, len(r.scalars)), aggs: r.aggs, paggs: r.paggs}
	for k, f := range r.scalars {
		c.scalars[k] = f
	}
	c.scalars["proctime"] = procTimeFunc(clock)
	return c
}

// Scalar finds a scalar implementation.
func (r *Registry) Scalar(name string) (ScalarFunc, error) {
	if f, ok := r.scalars[name]; ok {
		return f, nil
	}
	return nil, fmt.Errorf("%w for scalar function %s", ErrNoImplementation, name)
}

// Aggregate finds an aggregate implementation.
func (r *Registry) Aggregate(name string) (AggFunc, error) {
	if f, ok := r.aggs[name]; ok {
		return f, nil
	}
	if f, ok := r.paggs[name]; ok {
		return func(arg, ret arrow.DataType) (Accumulator, error) { return f(arg, ret) }, nil
	}
	return nil, fmt.Errorf("%w for aggregate function %s", ErrNoImplementation, name)
}

// NewAccumulator makes the accumulator for an aggregate call; distinct wraps it
// so that each group sees each distinct non-NULL value once.
// params are the values of the call's constant arguments after the first.
func (r *Registry) NewAccumulator(name string, distinct bool, arg, ret arrow.DataType, params ...any) (Accumulator, error) {
	if f, ok := r.paggs[name]; ok && !distinct {
		return f(arg, ret, params...)
	}
	if len(params) > 0 {
		return nil, fmt.Errorf("%w: %s takes no constant arguments", ErrBadArgument, name)
	}
	if distinct {
		if arg == nil {
			return nil, fmt.Errorf("%s(DISTINCT) needs an argument", name)
		}
		return newDistinct(name, arg, ret)
	}
	f, err := r.Aggregate(name)
	if err != nil {
		return nil, err
	}
	return f(arg, ret)
}

// Builtins returns the implementations of every function of expr.Builtins().
func Builtins() *Registry {
	r := &Registry{scalars: map[string]ScalarFunc{}, aggs: map[string]AggFunc{}, paggs: map[string]ParamAggFunc{}}
	for name, f := range map[string]ScalarFunc{
		"add": nullPropagating(addFunc), "subtract": nullPropagating(subtractFunc), "multiply": nullPropagating(multiplyFunc),
		"divide": nullPropagating(divideFunc), "integer_divide": nullPropagating(intDivideFunc), "modulo": nullPropagating(moduloFunc), "mod": nullPropagating(moduloFunc), "negate": nullPropagating(negateFunc),
		"equal": nullPropagating(compareFunc("equal")), "not_equal": nullPropagating(compareFunc("not_equal")), "less": nullPropagating(compareFunc("less")),
		"less_equal": nullPropagating(compareFunc("less_equal")), "greater": nullPropagating(compareFunc("greater")), "greater_equal": nullPropagating(compareFunc("greater_equal")),
		"abs": absFunc, "round": roundFunc, "floor": floorCeil(false), "ceil": floorCeil(true),
		"sqrt": f64Func(sqrtOp), "ln": f64Func(lnOp), "log10": f64Func(log10Op), "exp": f64Func(expOp), "power": powerFunc,
		"greatest": extremumFunc(true), "least": extremumFunc(false), "coalesce": coalesceFunc, "ifnull": coalesceFunc, "concat_ws": concatWsFunc, "nullif": nullifFunc,
		"concat": concatFunc, "string_concat": concatOpFunc, "lower": strMap(lowerOp), "upper": strMap(upperOp), "trim": trimSet(true, true),
		"ltrim": trimSet(true, false), "rtrim": trimSet(false, true), "length": lengthFunc, "char_length": lengthFunc,
		"substr": substrFunc, "replace": replaceFunc, "strpos": strposFunc, "starts_with": strPred(startsOp), "regexp_matches": regexpMatchesFunc, "regexp_replace": regexpReplaceFunc, "ends_with": strPred(endsOp),
		"left": leftRight(false), "right": leftRight(true), "split_part": splitPartFunc, "lpad": padFunc(false), "rpad": padFunc(true),
		"reverse": strMap(reverseOp), "repeat": repeatFunc, "contains": strPred(containsOp), "strlen": strlenFunc, "instr": strposFunc,
		"substring": substrFunc, "lcase": strMap(lowerOp), "ucase": strMap(upperOp),
		"regexp_extract": regexpExtractFunc, "regexp_full_match": regexpFullMatchFunc,
		"sign": signFunc, "trunc": truncFunc, "log": logFunc, "log2": f64Func(log2Op), "cbrt": f64Func(cbrtOp), "pi": piFunc,
		"ceiling": floorCeil(true), "pow": powerFunc,
		"date_diff": dateDiffFunc, "datediff": dateDiffFunc, "time_bucket": timeBucketFunc, "strftime": strftimeFunc, "date_format": dateFormatFunc, "split_index": splitIndexFunc,
		"dayname": dayNameFunc, "monthname": monthNameFunc, "date_add": nullPropagating(addFunc),
		"sort_key": sortKeyFunc, "date_trunc": dateTruncFunc, "date_part": datePartFunc, "to_timestamp": toTimestampFunc, "now": nowFunc, "proctime": procTimeFunc(time.Now), "epoch": epochFunc, "epoch_ms": epochMsFunc,
		"crop_image": cropImageFunc,
	} {
		r.scalars[name] = f
	}
	for _, u := range datePartShorthands {
		r.scalars[u] = partFunc(u)
	}
	r.aggs["count"] = newCount
	r.aggs["count_if"] = newBoolAgg(countIf)
	r.aggs["bool_and"] = newBoolAgg(boolAnd)
	r.aggs["bool_or"] = newBoolAgg(boolOr)
	r.aggs["sum"] = newSum
	r.aggs["avg"] = newAvg
	r.aggs["min"] = func(arg, ret arrow.DataType) (Accumulator, error) { return newMinMax(arg, false) }
	r.aggs["max"] = func(arg, ret arrow.DataType) (Accumulator, error) { return newMinMax(arg, true) }
	r.aggs["stddev_samp"] = newMoments(false, true)
	r.aggs["stddev"] = newMoments(false, true)
	r.aggs["variance"] = newMoments(false, false)
	r.aggs["stddev_pop"] = newMoments(true, true)
	r.aggs["var_samp"] = newMoments(false, false)
	r.aggs["var_pop"] = newMoments(true, false)
	r.paggs["median"] = newQuantile(true, 0.5)
	r.paggs["quantile_cont"] = newQuantile(true, -1)
	r.paggs["quantile_disc"] = newQuantile(false, -1)
	r.paggs["quantile"] = newQuantile(false, -1)
	r.paggs["string_agg"] = newStringAgg
	r.paggs["string_agg_sorted"] = newSortedStringAgg
	return r
}

// WithScalar is a copy of r in which name is implemented by f: an overlay,
// for a program that swaps one implementation (or a test that injects a
// faulty one) without touching the builtins.
func (r *Registry) WithScalar(name string, f ScalarFunc) *Registry {
	c := &Registry{scalars: maps.Clone(r.scalars), aggs: r.aggs, paggs: r.paggs}
	c.scalars[name] = f
	return c
}
