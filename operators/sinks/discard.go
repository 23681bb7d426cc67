package sinks

import "github.com/apache/arrow/go/v17/arrow"

// Discard drops every batch: Flink's blackhole. A query INSERT INTO a sink
// TO DISCARD (or run with --format discard) measures the query itself, not
// its output's encoding: a pass-through query over a file spends most of
// its time writing CSV otherwise. The Sink operator still counts the rows.
type Discard struct{}

func (Discard) Write(arrow.Record) error { return nil }

// Close has nothing to flush.
func (Discard) Close() error { return nil }
