// Package expr is the bound, typed expression IR of tierflow and the registry of
// function signatures.
//
// The binder (package planner) turns AST expressions into these values after name
// resolution and type checking; operators (package operators/eval) compile them
// into vectorised evaluation. Columns are referenced by index into the input
// schema, every node knows its arrow.DataType, and boolean logic follows SQL's
// three-valued semantics.
//
// Builtins() lists every scalar, aggregate and window function with its
// signatures, return-type rule, documentation and examples. It is an explicit
// value, never a global mutated by init(): the binder uses it to type-check calls,
// operators/functions implements every name it lists, and SHOW FUNCTIONS prints it.
//
// expr imports only arrow: nothing of tierflow, so both the planner and the
// operators can depend on it.
package expr
