// Package sources reads rows into Arrow record batches for the dataflow: CSV,
// JSON lines, Parquet and Arrow IPC files, and a rate-limited generator for tests
// and benchmarks. Schemas come from the statement or are inferred from the data.
//
// A source assigns epochs from event time: each batch is emitted at the current
// watermark (the largest event time seen minus the allowed out-of-orderness, in
// microseconds), then the watermark advances. Rows that do not fit the schema
// are reported with file and row number and, with OnError = Skip, left out.
//
// sources imports arrow, dataflow and operators/functions; never relay or runtime.
package sources
