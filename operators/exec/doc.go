// Package exec turns a bound logical plan (planner/logical) into a runnable
// dataflow for local, one-process runs: each relational node becomes an operator
// of operators/rel, scans become file sources, and the root becomes a sink.
//
// exec imports planner (logical, catalog, expr), dataflow and the operators
// packages; never relay, runtime or cmd.
package exec
