package rel

import (
	"sync/atomic"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/dataflow"
)

// LabelMeter passes its input through unchanged and counts, over the rows
// that carry a label, how many a model's prediction matched: the measured
// accuracy EXPLAIN ANALYZE shows where labels exist. It reports through
// dataflow.Counting.
type LabelMeter struct {
	dataflow.Base
	truth, pred       int
	labelled, correct atomic.Int64
}

// NewLabelMeter compares column truth (the true value) with column pred (the
// model's prediction) of every record.
func NewLabelMeter(truth, pred int) *LabelMeter { return &LabelMeter{truth: truth, pred: pred} }

func (m *LabelMeter) OnBatch(ctx *dataflow.Context, _ int, b dataflow.Batch, cap *dataflow.Capability) error {
	rec := b.Record
	if m.truth < int(rec.NumCols()) && m.pred < int(rec.NumCols()) {
		labelled, correct := compareLabels(rec.Column(m.truth), rec.Column(m.pred))
		m.labelled.Add(labelled)
		m.correct.Add(correct)
	}
	return ctx.Emit(0, cap, rec)
}

// Counters are "labelled" (rows with both a label and a prediction) and
// "correct" (of those, the ones that matched).
func (m *LabelMeter) Counters() map[string]int64 {
	return map[string]int64{"labelled": m.labelled.Load(), "correct": m.correct.Load()}
}

// compareLabels counts the rows where both columns hold a value, and those
// where the values are equal (as text, so an integer class id compares with
// its label column whatever the widths).
func compareLabels(truth, pred arrow.Array) (labelled, correct int64) {
	for i := 0; i < truth.Len(); i++ {
		if truth.IsNull(i) || pred.IsNull(i) {
			continue
		}
		labelled++
		if truth.ValueStr(i) == pred.ValueStr(i) {
			correct++
		}
	}
	return labelled, correct
}
