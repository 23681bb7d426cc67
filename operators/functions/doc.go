// Package functions implements every function that planner/expr.Builtins()
// declares: scalar functions over Arrow arrays and grouped aggregate
// accumulators. Implementations are keyed by the registry's names; arguments
// arrive already coerced to the canonical types the signature resolved to
// (BIGINT, DOUBLE, VARCHAR, BOOLEAN, TIMESTAMP(us), INTERVAL(us)).
//
// Arithmetic and comparisons go through arrow compute kernels; the rest are tight
// typed loops. Division by zero and domain errors (sqrt of a negative) give NULL,
// as documented in the registry, so one bad row never fails a stream.
//
// functions imports arrow and planner/expr only; it knows nothing of dataflow.
package functions
