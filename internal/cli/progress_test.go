package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// fakeClock advances only when told, so plain-line spacing is deterministic.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestProgressPlainLines(t *testing.T) {
	var buf bytes.Buffer
	clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	p := NewProgressFor(&buf, false, 10, "profiling", clk.now)
	for i := 0; i < 10; i++ {
		clk.t = clk.t.Add(time.Second)
		p.Add(1)
	}
	p.Done()
	p.Done()
	want := "profiling: 2/10 (20%)\nprofiling: 4/10 (40%)\nprofiling: 6/10 (60%)\nprofiling: 8/10 (80%)\nprofiling: 10/10 (100%)\nprofiling: 10/10 (100%), done in 10s\n"
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
}

func TestProgressUnknownTotal(t *testing.T) {
	var buf bytes.Buffer
	clk := &fakeClock{t: time.Unix(0, 0)}
	p := NewProgressFor(&buf, false, 0, "reading", clk.now)
	p.Add(5)
	p.Describe("reading frames")
	clk.t = clk.t.Add(1500 * time.Millisecond)
	p.Done()
	if got, want := buf.String(), "reading frames: 5 items, done in 1.5s\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestProgressBarOnTerminal(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgressFor(&buf, true, 4, "bench", time.Now)
	for i := 0; i < 4; i++ {
		p.Add(1)
	}
	p.Done()
	out := buf.String()
	if !strings.Contains(out, "bench") || !strings.Contains(out, "100%") || !strings.Contains(out, "4/4") {
		t.Errorf("bar output lacks description, 100%% or 4/4: %q", out)
	}
	if strings.Contains(out, "bench: 4/4") {
		t.Errorf("plain lines on a terminal: %q", out)
	}
}

func TestProgressNilIsNoop(t *testing.T) {
	var p *Progress
	p.Add(1)
	p.Describe("x")
	p.Done()
}
