// Package eval compiles bound planner/expr expressions once per query into
// vectorised evaluators over arrow.Record batches.
//
// Evaluation is column at a time: arithmetic and comparisons run arrow compute
// kernels, literals stay scalars (never materialised per batch), AND/OR use the
// Kleene kernels so SQL's three-valued logic holds, and the remaining forms
// (IN, LIKE, CASE, IS NULL) are tight typed loops. Function implementations come
// from operators/functions.
//
// eval imports arrow, planner/expr and operators/functions; it knows nothing of
// dataflow, so the kernels it provides are testable as pure functions.
package eval
