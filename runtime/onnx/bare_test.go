package onnx

import (
	"fmt"
	"slices"
	"time"

	ort "github.com/yalue/onnxruntime_go"
	"golang.org/x/sys/unix"
)

// bareRun is the baseline: the same session's Run with input and output tensors
// created once, outside the timed loop.
type bareRun struct {
	s    *Session
	vals []ort.Value
}

func newBareRun(s *Session, data []float32, batch int) (*bareRun, error) {
	b := &bareRun{s: s}
	in := s.Inputs()[0]
	shape := slices.Clone(in.Shape)
	shape[0] = int64(batch)
	t, err := ort.NewTensor(ort.Shape(shape), data)
	if err != nil {
		return nil, err
	}
	b.vals = append(b.vals, t)
	for _, o := range s.Outputs() {
		shape := slices.Clone(o.Shape)
		shape[0] = int64(batch)
		t, err := ort.NewEmptyTensor[float32](ort.Shape(shape))
		if err != nil {
			b.destroy()
			return nil, err
		}
		b.vals = append(b.vals, t)
	}
	return b, nil
}

func (b *bareRun) run() error { return b.s.s.Run(b.vals[:1], b.vals[1:]) }

func (b *bareRun) destroy() {
	for _, v := range b.vals {
		v.Destroy()
	}
}

// clockFunc returns the clock the benchmark reads.
func clockFunc(name string) (func() time.Duration, error) {
	switch name {
	case "", "thread":
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
			return nil, fmt.Errorf("thread CPU clock: %w", err)
		}
		return func() time.Duration {
			_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
			return time.Duration(ts.Nano())
		}, nil
	case "wall":
		start := time.Now()
		return func() time.Duration { return time.Since(start) }, nil
	}
	return nil, fmt.Errorf("unknown clock %q: want thread or wall", name)
}

func p50(ds []time.Duration) time.Duration {
	c := slices.Clone(ds)
	slices.Sort(c)
	return c[len(c)/2]
}
