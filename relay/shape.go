package relay

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// ErrBadTrace is the kind of every bandwidth-trace error (ParseTrace).
var ErrBadTrace = errors.New("bad bandwidth trace")

// Trace is a link's bandwidth over time, for shaping a relay link in
// experiments and tests (`--link-trace`): each step holds from its start
// until the next one's, and the trace loops after Period.
type Trace struct {
	// Name is where it came from (a file), for messages.
	Name  string
	Steps []TraceStep
	// Period is when the trace starts over: the last step lasts as long as
	// the mean step before it (a one-step trace: one second).
	Period time.Duration
}

// TraceStep is one row of a trace: from At on, the link carries KbitS
// kilobits per second.
type TraceStep struct {
	At    time.Duration
	KbitS float64
}

// ReadTrace reads a trace file (ParseTrace).
func ReadTrace(path string) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadTrace, err)
	}
	defer f.Close()
	return ParseTrace(path, f)
}

// ParseTrace reads a CSV trace: a header `t_s,kbit_s`, then one row per
// step, its start in seconds (from 0, increasing) and its bandwidth in
// kbit/s (> 0). Errors name name:line.
func ParseTrace(name string, r io.Reader) (*Trace, error) {
	sc := bufio.NewScanner(r)
	t := &Trace{Name: name}
	line, header := 0, false
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s:%d: %w: %s", name, line, ErrBadTrace, fmt.Sprintf(format, args...))
	}
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		cells := strings.Split(text, ",")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if !header {
			if len(cells) != 2 || cells[0] != "t_s" || cells[1] != "kbit_s" {
				return nil, bad("header %q, want t_s,kbit_s", text)
			}
			header = true
			continue
		}
		if len(cells) != 2 {
			return nil, bad("%d fields, want 2 (t_s,kbit_s)", len(cells))
		}
		ts, err := strconv.ParseFloat(cells[0], 64)
		if err != nil || math.IsNaN(ts) || math.IsInf(ts, 0) || ts < 0 {
			return nil, bad("t_s %q is not a time in seconds >= 0", cells[0])
		}
		kb, err := strconv.ParseFloat(cells[1], 64)
		if err != nil || math.IsNaN(kb) || math.IsInf(kb, 0) || kb <= 0 {
			return nil, bad("kbit_s %q is not a bandwidth > 0", cells[1])
		}
		at := time.Duration(ts * float64(time.Second))
		switch n := len(t.Steps); {
		case n == 0 && at != 0:
			return nil, bad("the first step starts at %gs, want 0", ts)
		case n > 0 && at <= t.Steps[n-1].At:
			return nil, bad("t_s %g does not come after %g", ts, t.Steps[n-1].At.Seconds())
		}
		t.Steps = append(t.Steps, TraceStep{At: at, KbitS: kb})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w: %w", name, ErrBadTrace, err)
	}
	if !header {
		line = max(line, 1)
		return nil, bad("empty; want a header t_s,kbit_s and rows")
	}
	if len(t.Steps) == 0 {
		return nil, bad("no rows after the header")
	}
	last := t.Steps[len(t.Steps)-1].At
	step := time.Second
	if n := len(t.Steps); n > 1 {
		step = last / time.Duration(n-1)
	}
	t.Period = last + step
	return t, nil
}

// KbitAt is the bandwidth at offset d into the trace (looping).
func (t *Trace) KbitAt(d time.Duration) float64 {
	if d < 0 {
		d = 0
	}
	d %= t.Period
	k := t.Steps[0].KbitS
	for _, s := range t.Steps {
		if s.At > d {
			break
		}
		k = s.KbitS
	}
	return k
}

// Shaper is a link's bandwidth as time goes (bytes per second; 0: no cap).
type Shaper interface {
	BytesPerSecond(now time.Time) float64
}

// TraceShaper plays a trace from Start, Offset into it: client i of an
// experiment starts at a shifted offset so the links do not drop together.
type TraceShaper struct {
	Trace  *Trace
	Start  time.Time
	Offset time.Duration
}

// BytesPerSecond implements Shaper.
func (s TraceShaper) BytesPerSecond(now time.Time) float64 {
	return s.Trace.KbitAt(now.Sub(s.Start)+s.Offset) * 1000 / 8
}

// TransferEnd is when n bytes put on a link shaped by sh at start (the link
// free from then on) have crossed it: the bandwidth is integrated step by
// step, so a message that spans a drop in the trace takes the longer time
// the drop gives it. The walk is bounded (a trace step is at least a
// millisecond in practice); past the bound the rest goes at the last rate.
func TransferEnd(sh Shaper, start time.Time, n int) time.Time {
	left := float64(n)
	at := start
	for i := 0; i < 64 && left > 0; i++ {
		rate := sh.BytesPerSecond(at)
		if rate <= 0 {
			return at
		}
		// Advance at most 50ms at this rate, then look at the trace again.
		slice := 50 * time.Millisecond
		can := rate * slice.Seconds()
		if can >= left {
			return at.Add(time.Duration(left / rate * float64(time.Second)))
		}
		left -= can
		at = at.Add(slice)
	}
	if rate := sh.BytesPerSecond(at); left > 0 && rate > 0 {
		at = at.Add(time.Duration(left / rate * float64(time.Second)))
	}
	return at
}
