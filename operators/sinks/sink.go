package sinks

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

// Writer consumes result batches. Write does not keep rec past the call.
type Writer interface {
	Write(rec arrow.Record) error
	// Close flushes what was written; the underlying file is the caller's.
	Close() error
}

// EpochWriter is a Writer that commits per epoch: it hears each batch's
// epoch and sink instance, and when an instance's input frontier advances
// (every row of an earlier epoch has been written). A cluster's result
// stream uses it so that the client writes only complete epochs, and
// writes none twice when a re-deployed query replays them.
type EpochWriter interface {
	Writer
	WriteEpoch(instance int, epoch dataflow.Epoch, rec arrow.Record) error
	Commit(instance int, frontier dataflow.Epoch) error
}

// Failer is a Writer whose readers must learn that the result is
// incomplete (a stream another query reads): when the query fails, Fail
// ends the output with cause instead of Close's normal end.
type Failer interface {
	Fail(cause error) error
}

// Finish ends w after a run: Close when err is nil, else Fail when w can
// tell its readers, else Close (a file keeps what was written).
func Finish(w Writer, err error) error {
	if f, ok := w.(Failer); ok && err != nil {
		return f.Fail(err)
	}
	return w.Close()
}

// Sink is the terminal operator: it hands every batch to a Writer. Several
// instances may share one Writer; writes are serialised.
type Sink struct {
	dataflow.Base
	w       Writer
	mu      *sync.Mutex
	rows    *atomic.Int64
	pending map[dataflow.Epoch][]arrow.Record // ordered sinks only
}

// NewSink makes a sink instance writing to w, counting rows into rows (may be
// nil); mu serialises instances sharing w.
func NewSink(w Writer, mu *sync.Mutex, rows *atomic.Int64) *Sink {
	if mu == nil {
		mu = &sync.Mutex{}
	}
	return &Sink{w: w, mu: mu, rows: rows}
}

// NewOrderedSink is a sink that writes batches in epoch order: each epoch's
// batches wait until the epoch is complete. It puts the windows of parallel
// aggregation instances back in window order.
func NewOrderedSink(w Writer, mu *sync.Mutex, rows *atomic.Int64) *Sink {
	s := NewSink(w, mu, rows)
	s.pending = map[dataflow.Epoch][]arrow.Record{}
	return s
}

func (s *Sink) OnBatch(ctx *dataflow.Context, _ int, b dataflow.Batch, cap *dataflow.Capability) error {
	if s.pending != nil {
		if _, ok := s.pending[b.Epoch]; !ok {
			if err := ctx.NotifyAt(cap, b.Epoch); err != nil {
				b.Record.Release()
				return err
			}
		}
		s.pending[b.Epoch] = append(s.pending[b.Epoch], b.Record)
		return nil
	}
	return s.write(ctx.Instance().Index, b.Epoch, b.Record)
}

// OnFrontier commits the epochs below the new frontier to an EpochWriter.
func (s *Sink) OnFrontier(ctx *dataflow.Context, _ int, frontier dataflow.Epoch) error {
	ew, ok := s.w.(EpochWriter)
	if !ok {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return ew.Commit(ctx.Instance().Index, frontier)
}

// OnNotify writes an ordered sink's batches of a completed epoch.
func (s *Sink) OnNotify(ctx *dataflow.Context, cap *dataflow.Capability) error {
	recs := s.pending[cap.Epoch()]
	delete(s.pending, cap.Epoch())
	for i, r := range recs {
		if err := s.write(ctx.Instance().Index, cap.Epoch(), r); err != nil {
			for _, x := range recs[i+1:] {
				x.Release()
			}
			return err
		}
	}
	return nil
}

// Close releases what an ordered sink still holds (a cancelled run).
func (s *Sink) Close(*dataflow.Context) error {
	for _, rs := range s.pending {
		for _, r := range rs {
			r.Release()
		}
	}
	s.pending = nil
	return nil
}

func (s *Sink) write(instance int, epoch dataflow.Epoch, rec arrow.Record) error {
	defer rec.Release()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rows != nil {
		s.rows.Add(rec.NumRows())
	}
	if ew, ok := s.w.(EpochWriter); ok {
		return ew.WriteEpoch(instance, epoch, rec)
	}
	return s.w.Write(rec)
}

// FormatValue renders one cell for text outputs: timestamps as
// "2006-01-02 15:04:05.999999", NULL as the given null text.
// Value is row i of a as a sink writes it: functions.ValueAt's Go value,
// except that a DECIMAL is its exact digits (a json.Number, so JSON writes
// it as a number), a DATE its day (YYYY-MM-DD) and a calendar interval its
// text (1 year 2 months), as DuckDB prints them.
func Value(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch a := a.(type) {
	case *array.Decimal128:
		return json.Number(expr.DecimalString(a.Value(i), a.DataType().(*arrow.Decimal128Type).Scale))
	case *array.Date32:
		return a.Value(i).FormattedString()
	case *array.MonthDayNanoInterval:
		return expr.FormatCalendar(a.Value(i))
	}
	return functions.ValueAt(a, i)
}

func FormatValue(v any, null string) string {
	switch x := v.(type) {
	case nil:
		return null
	case time.Time:
		return x.UTC().Format("2006-01-02 15:04:05.999999")
	case time.Duration:
		return functions.IntervalText(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case string:
		return x
	case json.Number:
		return string(x)
	}
	return fmt.Sprint(v)
}

// Table prints records as the one text table (TextTable), streaming: the
// header and column widths come from the first batch. Close prints the row
// count.
type Table struct {
	t    *TextTable
	w    io.Writer
	rows int64
}

// NewTable prints to w.
func NewTable(w io.Writer) *Table { return &Table{w: w} }

func (t *Table) Write(rec arrow.Record) error {
	if t.t == nil {
		t.t = &TextTable{W: t.w}
		for _, f := range rec.Schema().Fields() {
			t.t.Names = append(t.t.Names, f.Name)
			t.t.Right = append(t.t.Right, isNumeric(f.Type))
		}
	}
	n := int(rec.NumRows())
	cells := make([][]string, n)
	for i := range cells {
		cells[i] = make([]string, rec.NumCols())
		for j := range cells[i] {
			cells[i][j] = FormatValue(Value(rec.Column(j), i), "NULL")
		}
	}
	t.rows += int64(n)
	return t.t.Rows(cells)
}

func isNumeric(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64, arrow.FLOAT32, arrow.FLOAT64:
		return true
	}
	return false
}

// Rows is how many rows were printed.
func (t *Table) Rows() int64 { return t.rows }

// Close prints the row count.
func (t *Table) Close() error {
	if t.t == nil {
		t.t = &TextTable{W: t.w}
	}
	return t.t.End(t.rows)
}
