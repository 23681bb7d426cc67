package repl

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/sources"
)

// Local is the Engine that runs queries in this process with the operators'
// local executor (operators/exec). base holds its defaults; a session's SET
// exec.max_delay, exec.on_error, exec.batch_size and exec.replay override them
// per query.
func Local(base exec.Options) Engine { return localEngine{base: base} }

// PlanFunc plans a query before the local engine runs it: an error (an
// objective no plan meets) refuses it; it may set what the plan chose (the
// model variants) on o.
type PlanFunc func(ctx context.Context, q Query, o *exec.Options) error

// LocalPlanned is Local with each query planned first, as `tierflow run
// --local` plans it.
func LocalPlanned(base exec.Options, plan PlanFunc) Engine {
	return localEngine{base: base, plan: plan}
}

type localEngine struct {
	base exec.Options
	plan PlanFunc
}

func (e localEngine) Exec(ctx context.Context, q Query) (Stream, error) {
	opts := e.base
	if err := applyExecSettings(&opts, q.Settings); err != nil {
		return nil, err
	}
	if e.plan != nil {
		if err := e.plan(ctx, q, &opts); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	st := &localStream{schema: q.Bound.Root.Schema(), recs: make(chan arrow.Record), done: make(chan struct{}), cancel: cancel}
	opts.Output = chanWriter{recs: st.recs, ctx: ctx}
	// The session says what a quiet source waits on (Silent), in its
	// status line or on stderr.
	opts.Notices = nil
	query, err := exec.Build(q.Bound, opts)
	if err != nil {
		cancel()
		return nil, err
	}
	st.query = query
	go func() {
		defer close(st.done)
		st.stats, st.err = query.Run(ctx)
	}()
	return st, nil
}

// applyExecSettings reads the executor's session settings (SET exec.*).
func applyExecSettings(o *exec.Options, settings map[string]string) error {
	if err := o.ApplySettings(settings); err != nil {
		return inputError{err}
	}
	return nil
}

// chanWriter hands the executor's result batches to the REPL; a slow
// terminal slows the query (backpressure) rather than buffering rows.
type chanWriter struct {
	recs chan<- arrow.Record
	ctx  context.Context
}

func (w chanWriter) Write(rec arrow.Record) error {
	rec.Retain()
	select {
	case w.recs <- rec:
		return nil
	case <-w.ctx.Done():
		rec.Release()
		return w.ctx.Err()
	}
}

func (w chanWriter) Close() error { return nil }

type localStream struct {
	schema *arrow.Schema
	recs   chan arrow.Record
	done   chan struct{}
	cancel context.CancelFunc
	once   sync.Once
	stats  exec.Stats // set before done closes
	err    error
	query  *exec.Query
}

// Silent lists what the query's sources wait on (exec.Query.Silent).
func (s *localStream) Silent(after time.Duration) []sources.Silence { return s.query.Silent(after) }

func (s *localStream) Schema() *arrow.Schema { return s.schema }

func (s *localStream) Next(ctx context.Context) (arrow.Record, error) {
	select {
	case rec := <-s.recs:
		return rec, nil
	case <-s.done:
		if s.err != nil {
			return nil, s.err
		}
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *localStream) Close() error {
	s.once.Do(func() {
		s.cancel()
		<-s.done
	})
	return nil
}

// RowsWritten is how many rows the query's sink received, once it ended.
func (s *localStream) RowsWritten() int64 {
	select {
	case <-s.done:
		return s.stats.RowsWritten
	default:
		return 0
	}
}

// Summary reports what the run dropped; empty when nothing was.
func (s *localStream) Summary() string {
	select {
	case <-s.done:
	default:
		return ""
	}
	msg := ""
	if len(s.stats.Dropped) > 0 {
		msg = "dropped: " + s.stats.Dropped.String()
	}
	for _, p := range s.stats.Problems {
		msg += "\n  " + p
	}
	return msg
}
