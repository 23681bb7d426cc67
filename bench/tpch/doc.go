// Package tpch is tierflow's TPC-H benchmark: a data generator of its own
// that follows dbgen's schema, value domains and distributions (TPC-H
// specification 4.2), the 22 queries in their standard text with the
// specification's validation parameters, and the harness behind `tierflow
// bench tpch`: it generates the Parquet files once per scale factor, runs
// every query on tierflow (and, through a Peer, on another engine over the
// same files), compares the answers and prints a table of times and ratios.
//
// The generator is deterministic for a seed: every row's values come from a
// random stream keyed by (seed, table, row), so a scale factor's files are
// the same on every machine whatever the parallelism that wrote them.
//
// The package holds no other engine: the DuckDB peer lives in its own Go
// module (bench/sqlpeer) so that DuckDB never enters tierflow's build.
package tpch
