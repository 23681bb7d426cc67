package sources

import (
	"fmt"
	"math"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/compute"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/functions"
)

// Each row is judged against the watermark of the rows before it in the
// stream, never against how the stream was cut into batches: a row whose
// event time is behind that watermark goes out at the watermark's epoch,
// so an operator downstream that asks "has this row's window already
// closed?" (window end <= the batch's epoch, docs/language.md "Event
// time") gets the same answer whatever the batch size, the scheduling or
// the number of workers. Rows at or ahead of the watermark go out at the
// batch's epoch, as before: in an ordered stream every batch goes out
// whole.

// rowTimes is rec's event-time column in microseconds (the caller
// releases it).
func (s *Source) rowTimes(rec arrow.Record) (arrow.Array, error) {
	col := rec.Column(s.et.Column)
	if col.DataType().ID() != arrow.TIMESTAMP {
		return nil, fmt.Errorf("event-time column %q is %s, want TIMESTAMP", rec.ColumnName(s.et.Column), col.DataType())
	}
	if col.DataType().(*arrow.TimestampType).Unit != arrow.Microsecond {
		return compute.CastArray(s.fctx.Context(), col, compute.SafeCastOptions(arrow.FixedWidthTypes.Timestamp_us))
	}
	col.Retain()
	return col, nil
}

// watermarkRun is a run of rows going out at one epoch.
type watermarkRun struct {
	epoch dataflow.Epoch
	rows  []int64
}

// splitByWatermark returns the rows of times that must go out at an epoch
// later than at (behind the watermark of the rows before them, which is
// past at), grouped by that epoch in order; rows not named go out at at.
// It also returns the largest time seen (maxTS updated). nil: the batch
// goes out whole.
func (s *Source) splitByWatermark(times arrow.Array, at dataflow.Epoch) (late []watermarkRun, rest []int64, maxTS int64) {
	tv := functions.Int64Values(times)
	delay := int64(s.et.MaxDelay.Microseconds())
	m := s.maxTS
	split := false
	for i, t := range tv {
		if times.IsNull(i) {
			continue
		}
		if m != math.MinInt64 && t < m-delay && epochOf(m-delay) > at {
			split = true
			break
		}
		m = max(m, t)
	}
	if !split {
		for i, t := range tv {
			if times.IsValid(i) {
				m = max(m, t)
			}
		}
		return nil, nil, m
	}
	m = s.maxTS
	for i, t := range tv {
		if times.IsNull(i) {
			rest = append(rest, int64(i))
			continue
		}
		if m != math.MinInt64 && t < m-delay {
			if e := epochOf(m - delay); e > at {
				if n := len(late); n > 0 && late[n-1].epoch == e {
					late[n-1].rows = append(late[n-1].rows, int64(i))
				} else {
					late = append(late, watermarkRun{epoch: e, rows: []int64{int64(i)}})
				}
				m = max(m, t)
				continue
			}
		}
		rest = append(rest, int64(i))
		m = max(m, t)
	}
	return late, rest, m
}

// takeRows is rec's rows at idx, in that order.
func (s *Source) takeRows(mem memory.Allocator, rec arrow.Record, idx []int64) (arrow.Record, error) {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.AppendValues(idx, nil)
	ix := b.NewInt64Array()
	defer ix.Release()
	st := array.RecordToStructArray(rec)
	defer st.Release()
	out, err := compute.TakeArray(s.fctx.Context(), st, ix)
	if err != nil {
		return nil, err
	}
	defer out.Release()
	return array.RecordFromStructArray(out.(*array.Struct), rec.Schema()), nil
}
