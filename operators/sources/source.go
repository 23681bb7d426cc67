package sources

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/functions"
)

// Error kinds. Both blame the query's input (InputError), so the CLI exits
// 2 for them, here or after they crossed NATS from a worker.
var (
	// ErrBadRow: a row does not fit the schema (wrapped with file:row).
	ErrBadRow error = inputKind("bad row")
	// ErrBadFile: a file cannot be read as its format (corrupt, wrong
	// format, missing).
	ErrBadFile error = inputKind("bad file")
)

// inputKind is an error kind that blames the input (runtime/deploy's
// InputError).
type inputKind string

func (e inputKind) Error() string    { return string(e) }
func (e inputKind) InputError() bool { return true }

// OnError says what a source does with a bad row.
type OnError int

// Error policies.
const (
	Fail OnError = iota // stop the query with the row's error
	Skip                // report the row and go on
)

// ParseOnError reads "skip" or "fail".
func ParseOnError(s string) (OnError, error) {
	switch s {
	case "", "fail":
		return Fail, nil
	case "skip":
		return Skip, nil
	}
	return Fail, fmt.Errorf("unknown --on-error %q: want skip or fail", s)
}

// Reader produces record batches; Next returns nil, nil at the end.
type Reader interface {
	Schema() *arrow.Schema
	Next(mem memory.Allocator) (arrow.Record, error)
	Close() error
}

// IngestReader is a Reader that knows when the rows of the record Next last
// returned arrived (Unix ns): a message source batching for a while stamps
// the batch with its first message's arrival, so the wait for a partial batch
// counts in the rows' end-to-end latency. A plain Reader's records are
// stamped when the source emits them.
type IngestReader interface {
	Reader
	LastIngest() int64
}

// Report collects what sources saw go wrong; safe for concurrent use.
type Report struct {
	mu      sync.Mutex
	BadRows atomic.Int64
	Rows    atomic.Int64
	// Drops counts what sources dropped for other reasons than a bad row
	// (a full subscription, an oversized message); bad rows are BadRows.
	Drops dataflow.Drops
	msgs  []string
	// positions are the replayable streams' positions (by stream name)
	// since TakePositions last ran.
	positions map[string]Positions
	// watches are the sources that said what they read (Source.Watch).
	watches []*watch
}

// Position records where stream stood as its source took a batch.
func (r *Report) Position(stream string, p Position) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.positions == nil {
		r.positions = map[string]Positions{}
	}
	r.positions[stream] = r.positions[stream].Add(p)
}

// TakePositions returns the positions recorded since it last ran (nil:
// none) and forgets them.
func (r *Report) TakePositions() map[string]Positions {
	r.mu.Lock()
	defer r.mu.Unlock()
	ps := r.positions
	r.positions = nil
	return ps
}

// keep at most this many messages; the count keeps going. Each is cut to
// maxMessageText: a bad row's message quotes its value (a field of
// megabytes), and all of them travel in a worker's status message.
const (
	maxMessages    = 20
	maxMessageText = dataflow.MaxErrorText / 4
)

func (r *Report) bad(err error) {
	r.BadRows.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.msgs) < maxMessages {
		r.msgs = append(r.msgs, dataflow.BoundText(err.Error(), maxMessageText))
	}
}

// absorb adds what o saw after what r saw (a part of a file read on another
// goroutine, merged in file order).
func (r *Report) absorb(o *Report) {
	n := o.BadRows.Load()
	if n == 0 {
		return
	}
	r.BadRows.Add(n)
	msgs := o.Messages()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, msgs[:min(len(msgs), max(0, maxMessages-len(r.msgs)))]...)
}

// Bad counts a bad row or message that was skipped and keeps its message if
// there is room (sources outside this package report here too).
func (r *Report) Bad(err error) { r.bad(err) }

// Messages are the first reported problems.
func (r *Report) Messages() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.msgs...)
}

// rowErrors routes a bad row by policy: nil to skip it, the error to fail.
type rowErrors struct {
	policy OnError
	report *Report
}

func (e rowErrors) handle(err error) error {
	if e.policy == Fail {
		return err
	}
	if e.report != nil {
		e.report.bad(err)
	}
	return nil
}

// EventTime makes epochs follow a TIMESTAMP column: the watermark is the largest
// time seen minus MaxDelay. Column < 0 means no event time (everything at epoch
// 0, complete when the source ends).
type EventTime struct {
	Column   int
	MaxDelay time.Duration
}

// Source is the dataflow operator over a Reader.
type Source struct {
	dataflow.Base
	r      Reader
	et     EventTime
	cap    *dataflow.Capability
	maxTS  int64
	report *Report
	fctx   *functions.Ctx

	pace    Pacing
	pending arrow.Record // the reader's record being cut into paced slices
	off     int64        // rows of pending already sent
	sent    int64
	started time.Time
	// fastRows were sent before the watermark reached Pacing.FastUntil;
	// the rate's schedule starts after them.
	fastRows int64
	caughtUp bool
	// onPosition is told each batch's Position (PositionReader).
	onPosition func(Position)
	// what the source reads, and its record of when rows last came
	// (Watch, Report.Silent).
	what  string
	watch *watch
}

// TrackPositions has the source tell f where its stream stood as it took
// each batch, when its Reader is a PositionReader.
func (s *Source) TrackPositions(f func(Position)) { s.onPosition = f }

// ResumeAfter restores the source's watermark to where it stood at a
// recorded Position (maxTS): a source resumed at that position sends its
// first batch at the epoch the stream had reached there.
func (s *Source) ResumeAfter(maxTS int64) {
	if maxTS > s.maxTS {
		s.maxTS = maxTS
	}
}

// Pacing replays a stream at a fixed rate and for a bounded time or input:
// EXPLAIN ANALYZE feeds a query at the rate its plan was made for, for as long
// as it was asked to run. Records are cut into slices of 50 ms of input, so
// the rate holds within a batch, and a slice goes out when it is due (the
// source asks to be woken then instead of blocking its worker).
type Pacing struct {
	Rate    float64       // rows per second of this instance; 0: as fast as the reader goes
	For     time.Duration // end the stream after this long (0: at the end of input)
	MaxRows int64         // end the stream after this many rows (0: no bound)
	// FastUntil replays the stream as fast as it reads while its watermark
	// is below this epoch, then at Rate: a re-deployed query rebuilds its
	// operators' state from the epochs already committed without waiting
	// for them again.
	FastUntil dataflow.Epoch
	// SkipUntil reads past, without sending, what the stream would send
	// while its watermark is below this epoch: a re-deployed stateless
	// query resumes at the epoch its sinks committed instead of replaying
	// from the start. The skipped rows still move the watermark, and a
	// file is cut into the same slices as before, so every row sent goes
	// out at the epoch it did the first time.
	SkipUntil dataflow.Epoch
	// SkipBelow (event time, µs; 0: off) reads past, without sending, a
	// slice whose rows' event times are all below it: a re-deployed query
	// whose state is TUMBLE windows skips the rows of the windows it had
	// committed. Their rows still move the watermark.
	SkipBelow int64
}

func (p Pacing) active() bool { return p.Rate > 0 || p.For > 0 || p.MaxRows > 0 }

// NewSource wraps r; report may be nil.
func NewSource(r Reader, et EventTime, report *Report) *Source {
	return &Source{r: r, et: et, maxTS: math.MinInt64, report: report}
}

// NewPacedSource wraps r and replays it as p says.
func NewPacedSource(r Reader, et EventTime, report *Report, p Pacing) *Source {
	s := NewSource(r, et, report)
	s.pace = p
	return s
}

// cpuUser is a reader with goroutines of its own (a parallel parse): they
// work as steps of the reading query (dataflow.Helper).
type cpuUser interface{ UseCPU(*dataflow.Helper) }

func (s *Source) Open(ctx *dataflow.Context, cap *dataflow.Capability) error {
	if u, ok := s.r.(cpuUser); ok {
		u.UseCPU(dataflow.HelperOf(ctx.Context()))
	}
	if s.report != nil && s.what != "" {
		s.watch = s.report.watchSource(s.what)
	}
	var err error
	if s.cap, err = cap.Retain(); err != nil {
		return err
	}
	if s.maxTS != math.MinInt64 {
		// Resumed (ResumeAfter): the watermark where it was.
		wm := s.maxTS - int64(s.et.MaxDelay/time.Microsecond)
		if e := epochOf(wm); e > s.cap.Epoch() {
			return s.cap.Downgrade(e)
		}
	}
	return nil
}

func (s *Source) Produce(ctx *dataflow.Context) (bool, error) {
	var rec arrow.Record
	var err error
	if s.pace.active() {
		var wait bool
		if rec, wait, err = s.paced(ctx); err != nil || wait {
			return false, err
		}
	} else if rec, err = s.r.Next(ctx.Allocator()); err != nil {
		return false, err
	}
	if rec == nil {
		s.watch.end()
		s.cap.Drop()
		return true, nil
	}
	if rec.NumRows() > 0 {
		s.watch.received()
	}
	if s.onPosition != nil {
		if pr, ok := s.r.(PositionReader); ok {
			if seq := pr.LastPosition(); seq > 0 {
				s.onPosition(Position{Seq: seq, MaxTS: s.maxTS})
			}
		}
	}
	var next int64 = math.MinInt64
	var times arrow.Array
	if s.et.Column >= 0 && rec.NumRows() > 0 {
		if s.fctx == nil {
			s.fctx = functions.NewCtx(ctx.Allocator())
		}
		if times, err = s.rowTimes(rec); err != nil {
			rec.Release()
			return false, err
		}
		defer times.Release()
		next = s.maxTS
		for i, v := range functions.Int64Values(times) {
			if times.IsValid(i) && v > next {
				next = v
			}
		}
	}
	skip := s.pace.SkipUntil > 0 && s.cap.Epoch() < s.pace.SkipUntil ||
		s.pace.SkipBelow > 0 && s.et.Column >= 0 && next < s.pace.SkipBelow
	if s.report != nil && !skip {
		s.report.Rows.Add(rec.NumRows())
	}
	// The batch goes out at the current watermark; its own rows then move it.
	ingest := ctx.Ingest()
	if ir, ok := s.r.(IngestReader); ok && !s.pace.active() {
		if t := ir.LastIngest(); t != 0 {
			ingest = t
		}
	}
	if skip {
		rec.Release()
	} else if err := s.emit(ctx, rec, times, ingest); err != nil {
		return false, err
	}
	if next > s.maxTS {
		s.maxTS = next
		wm := s.maxTS - int64(s.et.MaxDelay/time.Microsecond)
		if e := epochOf(wm); e > s.cap.Epoch() {
			if err := s.cap.Downgrade(e); err != nil {
				return false, err
			}
		}
	}
	return false, nil
}

// emit sends rec at the source's epoch, and its rows behind the watermark
// of the rows before them at that watermark's epoch (rowwatermark.go).
func (s *Source) emit(ctx *dataflow.Context, rec arrow.Record, times arrow.Array, ingest int64) error {
	if times == nil {
		return ctx.EmitIngest(0, s.cap, rec, ingest)
	}
	late, rest, _ := s.splitByWatermark(times, s.cap.Epoch())
	if late == nil {
		return ctx.EmitIngest(0, s.cap, rec, ingest)
	}
	defer rec.Release()
	if len(rest) > 0 {
		part, err := s.takeRows(ctx.Allocator(), rec, rest)
		if err != nil {
			return err
		}
		if err := ctx.EmitIngest(0, s.cap, part, ingest); err != nil {
			return err
		}
	}
	for _, run := range late {
		if err := s.cap.Downgrade(run.epoch); err != nil {
			return err
		}
		part, err := s.takeRows(ctx.Allocator(), rec, run.rows)
		if err != nil {
			return err
		}
		if err := ctx.EmitIngest(0, s.cap, part, ingest); err != nil {
			return err
		}
	}
	return nil
}

// paced returns the next slice of input when it is due; wait says it is not
// yet (a wake-up is set), and a nil record the end of the stream.
func (s *Source) paced(ctx *dataflow.Context) (rec arrow.Record, wait bool, err error) {
	now := ctx.Now()
	if s.started.IsZero() {
		s.started = now
	}
	if s.pace.MaxRows > 0 && s.sent >= s.pace.MaxRows || s.pace.For > 0 && now.Sub(s.started) >= s.pace.For {
		s.dropPending()
		return nil, false, nil
	}
	fast := false
	if s.pace.FastUntil > 0 && !s.caughtUp {
		if s.cap.Epoch() < s.pace.FastUntil {
			fast = true
		} else {
			s.caughtUp, s.fastRows, s.started = true, s.sent, now
		}
	}
	if s.pace.Rate > 0 && !fast {
		due := s.started.Add(time.Duration(float64(s.sent-s.fastRows) / s.pace.Rate * float64(time.Second)))
		if s.pace.For > 0 {
			if end := s.started.Add(s.pace.For); end.Before(due) {
				due = end // wake to end on time
			}
		}
		if d := due.Sub(now); d > 0 {
			return nil, true, ctx.WakeAfter(d)
		}
	}
	for s.pending == nil || s.off >= s.pending.NumRows() {
		s.dropPending()
		next, err := s.r.Next(ctx.Allocator())
		if err != nil || next == nil {
			return nil, false, err
		}
		s.pending, s.off = next, 0
	}
	n := s.pending.NumRows() - s.off
	if s.pace.Rate > 0 {
		n = min(n, max(1, int64(s.pace.Rate/20)))
	}
	if s.pace.MaxRows > 0 {
		n = min(n, s.pace.MaxRows-s.sent)
	}
	rec = s.pending.NewSlice(s.off, s.off+n)
	s.off += n
	s.sent += n
	return rec, false, nil
}

func (s *Source) dropPending() {
	if s.pending != nil {
		s.pending.Release()
		s.pending = nil
	}
}

func epochOf(us int64) dataflow.Epoch {
	if us < 0 {
		return 0
	}
	return dataflow.Epoch(us)
}

func (s *Source) Close(*dataflow.Context) error {
	s.watch.end()
	s.dropPending()
	if s.cap != nil {
		s.cap.Drop()
	}
	return s.r.Close()
}
