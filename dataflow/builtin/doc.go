// Package builtin holds the few generic operators the dataflow engine's own
// tests, examples and benchmarks need: sources from slices and generators,
// a map, and capturing or counting sinks. Relational operators live in
// operators/, not here. Like dataflow, it must not import anything of
// tierflow above dataflow.
package builtin
