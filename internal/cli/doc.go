// Package cli holds what the tierflow command and the benchmarks under
// bench/ share about talking to a person: the errors that choose the exit
// code (bad input exits 2; a command that printed its own errors exits with
// its code), rows printed as a table or as JSON, progress on long work, and
// whether a stream is a terminal.
//
// It imports no tierflow package, so cmd/tierflow and every bench package
// can use it without importing each other.
package cli
