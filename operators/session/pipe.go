package session

import (
	"context"
	"io"
	"sync"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/operators/sinks"
)

// Pipe is the Stream of an engine that pushes its results into a writer
// (a sink operator, a cluster's client): the engine runs the query with
// Writer as its output and calls Finish when the run ends. Batches pass one
// at a time, so a slow reader slows the query (backpressure) rather than
// buffering rows.
type Pipe struct {
	schema *arrow.Schema
	recs   chan arrow.Record
	stop   chan struct{} // closed by Close: nobody reads any more
	done   chan struct{} // closed by Finish
	cancel context.CancelFunc
	once   sync.Once
	err    error // set before done closes
}

// NewPipe makes the stream of a run of results shaped schema; Close calls
// cancel to stop the run.
func NewPipe(schema *arrow.Schema, cancel context.CancelFunc) *Pipe {
	return &Pipe{schema: schema, recs: make(chan arrow.Record), stop: make(chan struct{}), done: make(chan struct{}), cancel: cancel}
}

// Writer is what the engine writes the results to: a write blocks until
// the reader takes the batch, or fails once the stream is closed.
func (p *Pipe) Writer() sinks.Writer { return pipeWriter{p} }

// Finish ends the stream with the run's error (nil: io.EOF after the last
// batch). The engine calls it once, when the run has ended.
func (p *Pipe) Finish(err error) {
	p.err = err
	close(p.done)
}

// Done is closed once the run has ended.
func (p *Pipe) Done() <-chan struct{} { return p.done }

func (p *Pipe) Schema() *arrow.Schema { return p.schema }

func (p *Pipe) Next(ctx context.Context) (arrow.Record, error) {
	select {
	case rec := <-p.recs:
		return rec, nil
	case <-p.done:
		if p.err != nil {
			return nil, p.err
		}
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close stops the run and waits for its end.
func (p *Pipe) Close() error {
	p.once.Do(func() {
		close(p.stop)
		p.cancel()
		<-p.done
	})
	return nil
}

type pipeWriter struct{ p *Pipe }

func (w pipeWriter) Write(rec arrow.Record) error {
	rec.Retain()
	select {
	case w.p.recs <- rec:
		return nil
	case <-w.p.stop:
		rec.Release()
		return context.Canceled
	}
}

func (w pipeWriter) Close() error { return nil }
