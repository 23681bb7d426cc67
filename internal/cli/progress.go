package cli

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Progress reports long work (profiling, benchmarks, bounded runs): a bar on
// a terminal, and on anything else (CI logs, pipes) a plain line at most
// every plainEvery plus one at the end, so logs stay short and greppable.
//
//	p := NewProgress(a.err, int64(len(items)), "profiling")
//	for _, it := range items { work(it); p.Add(1) }
//	p.Done()
//
// A total <= 0 means unknown: a spinner with a count on a terminal. Methods
// are safe for concurrent use; a nil *Progress does nothing, so callers can
// pass one down unconditionally.
type Progress struct {
	mu    sync.Mutex
	w     io.Writer
	bar   *progressbar.ProgressBar // nil for plain lines
	what  string
	total int64
	n     int64
	start time.Time
	last  time.Time // of the last plain line
	now   func() time.Time
	done  bool
}

// plainEvery spaces the plain progress lines.
const plainEvery = 2 * time.Second

// NewProgress starts reporting on w: a bar when w is a terminal.
func NewProgress(w io.Writer, total int64, what string) *Progress {
	return NewProgressFor(w, IsTerminal(w), total, what, time.Now)
}

// NewProgressFor chooses the form explicitly and takes the clock (tests).
func NewProgressFor(w io.Writer, tty bool, total int64, what string, now func() time.Time) *Progress {
	p := &Progress{w: w, what: what, total: total, now: now}
	p.start, p.last = now(), now()
	if tty {
		max := total
		if max <= 0 {
			max = -1 // a spinner
		}
		p.bar = progressbar.NewOptions64(max,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(what),
			progressbar.OptionSetWidth(30),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("items"),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSpinnerType(14),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
		)
	}
	return p
}

// Add records n more items done.
func (p *Progress) Add(n int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n += n
	if p.bar != nil {
		_ = p.bar.Add64(n)
		return
	}
	if t := p.now(); t.Sub(p.last) >= plainEvery {
		p.last = t
		fmt.Fprintf(p.w, "%s: %s\n", p.what, p.count())
	}
}

// Describe changes what is being done ("profiling resnet50 on gpu0").
func (p *Progress) Describe(what string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.what = what
	if p.bar != nil {
		p.bar.Describe(what)
	}
}

// Done ends the report with the count and the elapsed time. Calling it
// again does nothing.
func (p *Progress) Done() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return
	}
	p.done = true
	el := p.now().Sub(p.start).Round(time.Millisecond)
	if p.bar != nil {
		if p.total > 0 && p.n >= p.total {
			_ = p.bar.Finish() // prints the newline through OnCompletion
			return
		}
		_ = p.bar.Exit()
		fmt.Fprintf(p.w, "\n%s: %s in %s\n", p.what, p.count(), el)
		return
	}
	fmt.Fprintf(p.w, "%s: %s, done in %s\n", p.what, p.count(), el)
}

func (p *Progress) count() string {
	if p.total > 0 {
		return fmt.Sprintf("%d/%d (%d%%)", p.n, p.total, p.n*100/p.total)
	}
	return fmt.Sprintf("%d items", p.n)
}
