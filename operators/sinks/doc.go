// Package sinks writes query results: a terminal table printer that streams rows
// as they arrive (windows print as they close), CSV, JSON lines (files or
// stdout) and Parquet files. Each is a Writer; Sink runs a Writer as the
// dataflow's terminal operator.
//
// sinks imports arrow, dataflow and operators/functions; never relay or runtime.
package sinks
