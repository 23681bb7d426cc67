// Package rel holds tierflow's relational streaming operators over Arrow record
// batches: filter, project, union all, limit, order by, windowed hash
// aggregation, window functions (OVER; on streams Flink's OVER aggregation),
// stream-table hash join and windowed stream-stream join.
//
// Each operator is two layers: a kernel that is a plain value fed batches and
// watermarks (testable as a pure function), and a dataflow.Operator that wraps
// it, emitting only under held capabilities. Epochs are event-time watermarks in
// microseconds since the Unix epoch: a batch at epoch e was produced when the
// source's watermark was e, and an input frontier F means no row with event time
// below F is still on time. Windows close when the frontier passes their end;
// rows arriving for closed windows are counted as late and dropped, never merged.
//
// rel imports arrow, dataflow, planner/expr, planner/logical (the window
// functions' spec) and operators/eval/functions; never relay, runtime or cmd.
package rel
