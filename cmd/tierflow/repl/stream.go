package repl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/operators/sources"
)

// statusEvery is how often the status line refreshes while nothing arrives.
const statusEvery = 200 * time.Millisecond

// render pulls batches from stream and renders each as it arrives; on a
// terminal a status line (rows so far, elapsed, rows/s) sits under the rows.
// Cancelling ctx (Ctrl-C) ends the query with what was shown kept.
func (s *Session) render(ctx context.Context, stream Stream, insert bool) error {
	var r renderer = discard{}
	if !insert {
		var err error
		if r, err = newRenderer(s.format, s.out, s.color()); err != nil {
			return err
		}
	}
	if err := r.begin(schemaColumns(stream.Schema())); err != nil {
		return err
	}
	type next struct {
		rec arrow.Record
		err error
	}
	// Next blocks; a goroutine turns it into a channel so the status line
	// keeps ticking while a window is still open. It is stopped and waited
	// for before render returns, so Close never races Next.
	inner, stop := context.WithCancel(ctx)
	batches := make(chan next)
	done := make(chan struct{})
	defer func() { stop(); <-done }()
	go func() {
		defer close(done)
		for {
			rec, err := stream.Next(inner)
			select {
			case batches <- next{rec, err}:
			case <-inner.Done():
				if rec != nil {
					rec.Release()
				}
				return
			}
			if err != nil {
				return
			}
		}
	}()
	st := status{w: s.cfg.Err, on: s.cfg.Interactive, start: time.Now(), color: s.cfg.Color}
	tick := time.NewTicker(statusEvery)
	defer tick.Stop()
	// What quiet sources wait on: in the status line on a terminal, else
	// a notice on stderr once per source that has received nothing yet.
	wt, _ := stream.(waiter)
	said := map[string]bool{}
	quiet := func() {
		if wt == nil {
			return
		}
		silent := wt.Silent(sources.WaitNotice)
		st.waiting = st.waiting[:0]
		for _, q := range silent {
			if st.on {
				st.waiting = append(st.waiting, q.What)
			} else if !q.Ever && !said[q.What] {
				said[q.What] = true
				fmt.Fprintf(s.cfg.Err, "-- %s\n", q.Text())
			}
		}
	}
	cancelled := func() error {
		st.clear()
		if err := r.end(st.rows); err != nil {
			return err
		}
		fmt.Fprintf(s.cfg.Err, "Cancelled after %s.\n", st.summary())
		return ctx.Err()
	}
	st.draw()
	for {
		select {
		case <-tick.C:
			quiet()
			st.draw()
		case <-ctx.Done():
			return cancelled()
		case nx := <-batches:
			if nx.err != nil {
				st.clear()
				if errors.Is(nx.err, io.EOF) {
					if err := r.end(st.rows); err != nil {
						return err
					}
					if insert {
						s.tag(insertTag(stream))
					}
					if sm, ok := stream.(summarizer); ok {
						if msg := sm.Summary(); msg != "" {
							fmt.Fprintln(s.cfg.Err, msg)
						}
					}
					return nil
				}
				if ctx.Err() != nil {
					return cancelled()
				}
				return nx.err
			}
			rows := recordCells(nx.rec)
			nx.rec.Release()
			if len(rows) == 0 {
				continue
			}
			st.clear()
			if err := r.rows(rows); err != nil {
				return err
			}
			st.rows += int64(len(rows))
			st.draw()
		}
	}
}

// waiter is a Stream that can tell what its sources wait on.
type waiter interface {
	Silent(after time.Duration) []sources.Silence
}

// discard is the renderer of INSERT: its rows went to the sink.
type discard struct{}

func (discard) begin([]column) error { return nil }
func (discard) rows([][]cell) error  { return nil }
func (discard) end(int64) error      { return nil }

// rowCounter is a Stream that knows how many rows its sinks received.
type rowCounter interface{ RowsWritten() int64 }

func insertTag(stream Stream) string {
	if rc, ok := stream.(rowCounter); ok {
		return fmt.Sprintf("INSERT %d", rc.RowsWritten())
	}
	return "INSERT"
}

// status is the line under a streaming result on a terminal.
type status struct {
	w     io.Writer
	on    bool
	color bool
	start time.Time
	rows  int64
	shown bool
	// waiting are the sources that have received nothing for a while.
	waiting []string
}

func (st *status) summary() string {
	el := time.Since(st.start)
	word := "rows"
	if st.rows == 1 {
		word = "row"
	}
	rps := 0.0
	if el > 0 {
		rps = float64(st.rows) / el.Seconds()
	}
	return fmt.Sprintf("%d %s, %.1f s, %.0f rows/s", st.rows, word, el.Seconds(), rps)
}

func (st *status) draw() {
	if !st.on {
		return
	}
	line := "… " + st.summary()
	if len(st.waiting) > 0 {
		line += "; waiting on " + strings.Join(st.waiting, "; ")
	}
	line += " (Ctrl-C cancels)"
	if st.color {
		line = "\x1b[2m" + line + "\x1b[0m"
	}
	fmt.Fprint(st.w, "\r\x1b[2K"+line)
	st.shown = true
}

func (st *status) clear() {
	if st.shown {
		fmt.Fprint(st.w, "\r\x1b[2K")
		st.shown = false
	}
}
