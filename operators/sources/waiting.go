package sources

import (
	"fmt"
	"sort"
	"sync/atomic"
	"time"
)

// WaitNotice is how long a source may receive nothing before the run says
// what it is waiting on: a subject nothing publishes to, or a pipe nothing
// writes, otherwise looks like a hang.
const WaitNotice = 3 * time.Second

// Silence is a source that has received nothing for a while.
type Silence struct {
	// What the source reads: `stream shelf, NATS subject "store.frames"`.
	What string
	// For how long nothing has arrived; Ever says whether anything had
	// before (else For counts from when the source opened).
	For  time.Duration
	Ever bool
}

// Text is the notice a run prints for s.
func (s Silence) Text() string {
	if s.Ever {
		return fmt.Sprintf("waiting %s on %s: nothing new since", s.For.Round(time.Second), s.What)
	}
	return fmt.Sprintf("waiting %s on %s: nothing has arrived yet (Ctrl-C stops)", s.For.Round(time.Second), s.What)
}

// watch is one source instance's record of when it last received rows.
type watch struct {
	what   string
	opened time.Time
	last   atomic.Int64 // Unix ns of the last batch with rows; 0: none
	done   atomic.Bool  // ended or closed: waiting on nothing
}

func (w *watch) received() {
	if w != nil {
		w.last.Store(time.Now().UnixNano())
	}
}

func (w *watch) end() {
	if w != nil {
		w.done.Store(true)
	}
}

// Watch has the source say what it reads (`stream shelf, NATS subject
// "store.frames"`, `stream readings, file "data/r.csv"`) so that its
// Report can tell when it has received nothing for a while (Silent).
func (s *Source) Watch(what string) { s.what = what }

// watchSource registers a source instance that reads what.
func (r *Report) watchSource(what string) *watch {
	w := &watch{what: what, opened: time.Now()}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.watches = append(r.watches, w)
	return w
}

// Silent lists what the query's sources are waiting on at now: every
// stream (over all its instances) that has been open for at least after
// and has received nothing for that long, in name order.
func (r *Report) Silent(now time.Time, after time.Duration) []Silence {
	type agg struct {
		opened time.Time
		last   int64
		open   bool
	}
	r.mu.Lock()
	by := map[string]*agg{}
	for _, w := range r.watches {
		a := by[w.what]
		if a == nil {
			a = &agg{opened: w.opened}
			by[w.what] = a
		}
		if w.opened.Before(a.opened) {
			a.opened = w.opened
		}
		a.last = max(a.last, w.last.Load())
		a.open = a.open || !w.done.Load()
	}
	r.mu.Unlock()
	var out []Silence
	for what, a := range by {
		if !a.open {
			continue
		}
		since := a.opened
		if a.last > 0 {
			since = time.Unix(0, a.last)
		}
		if d := now.Sub(since); d >= after {
			out = append(out, Silence{What: what, For: d, Ever: a.last > 0})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].What < out[j].What })
	return out
}
