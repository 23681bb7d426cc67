package session

import (
	"context"
	"errors"
	"io"
	"os"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/operators/sinks"
)

// ScriptOutput is the Output of a script run by `tierflow run`: each
// SELECT's rows to a writer of their own (NewOutput; a table on Stdout
// without one), SHOW and DESCRIBE through Print (text on Stdout without
// one), plans on Stdout, and each query's report (Reporter) on Log.
type ScriptOutput struct {
	Stdout    io.Writer // default os.Stdout
	NewOutput func() (sinks.Writer, error)
	Print     func(Listing) error
	Log       io.Writer // nil: no reports
}

// Rows writes a SELECT's rows as they come, then ends the writer: closed
// (a table prints its row count) unless the query failed before a row,
// when the error is all there is to say (a query the user stopped did not
// fail: what was complete is its table). An INSERT's rows went to its
// sink; it prints none.
func (o *ScriptOutput) Rows(ctx context.Context, q Query, st Stream) error {
	var w sinks.Writer
	if _, sel := q.Stmt.(*lang.Query); sel {
		if o.NewOutput != nil {
			var err error
			if w, err = o.NewOutput(); err != nil {
				return err
			}
		} else {
			w = sinks.NewTable(o.Text())
		}
	}
	var rows int64
	var err error
	for {
		// Read to the end even once ctx is done: the engine's run stops
		// with ctx, and what it wrote until then (the windows that closed)
		// is written here too.
		rec, nerr := st.Next(context.WithoutCancel(ctx))
		if errors.Is(nerr, io.EOF) {
			break
		}
		if nerr != nil {
			err = nerr
			break
		}
		rows += rec.NumRows()
		if w != nil {
			err = w.Write(rec)
		}
		rec.Release()
		if err != nil {
			break
		}
	}
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	// A query stopped by the user (Ctrl-C) wrote what was complete: its
	// table ends as usual.
	failed := err != nil && !errors.Is(err, context.Canceled)
	if _, table := w.(*sinks.Table); w != nil && (!table || !failed || rows > 0) {
		if ferr := sinks.Finish(w, err); err == nil {
			err = ferr
		}
	}
	if r, ok := st.(Reporter); ok {
		if rerr := r.Report(o.Log); err == nil {
			err = rerr
		}
	}
	return err
}

// Listing prints a SHOW or DESCRIBE.
func (o *ScriptOutput) Listing(l Listing) error {
	if o.Print != nil {
		return o.Print(l)
	}
	return l.WriteText(o.Text())
}

// Text is Stdout.
func (o *ScriptOutput) Text() io.Writer {
	if o.Stdout == nil {
		return os.Stdout
	}
	return o.Stdout
}
