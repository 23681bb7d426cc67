package sched

import (
	"slices"
	"time"

	"github.com/tierflow/tierflow/operators/ml"
)

// bound is a shared session as one query's model operator sees it.
type bound struct {
	s     *Scheduler
	inner ml.Session
	key   string
	t     Tenant
}

func (b *bound) Inputs() []ml.TensorInfo  { return b.inner.Inputs() }
func (b *bound) Outputs() []ml.TensorInfo { return b.inner.Outputs() }

// Fork gives each model instance its own view of the inner session (per
// caller buffers), still scheduled under the same tenant.
func (b *bound) Fork() ml.Session {
	if f, ok := b.inner.(ml.Forker); ok {
		return &bound{s: b.s, inner: f.Fork(), key: b.key, t: b.t}
	}
	return b
}

// Provider passes through the inner session's provider, for the logs.
func (b *bound) Provider() string {
	if p, ok := b.inner.(interface{ Provider() string }); ok {
		return p.Provider()
	}
	return ""
}

// Run asks the scheduler for the batch and runs what it grants, part by
// part, in the caller's goroutine.
func (b *bound) Run(inputs, outputs []ml.Tensor) error {
	n := batchRows(inputs)
	if n <= 0 {
		return b.inner.Run(inputs, outputs)
	}
	now := b.s.now()
	r := &Request{Query: b.t.Query, Priority: b.t.Priority, Key: b.key, Rows: n, Total: n, Arrival: now,
		Splittable: splittable(inputs, outputs, n), grant: make(chan int, 1)}
	if b.t.Latency > 0 {
		r.Deadline = now.Add(b.t.Latency)
	}
	if err := b.s.submit(r); err != nil {
		return err
	}
	off := 0
	for off < n {
		k := <-r.grant
		if k < 0 {
			return ErrClosed
		}
		start := time.Now()
		var err error
		if off == 0 && k == n {
			err = b.inner.Run(inputs, outputs)
		} else {
			err = b.inner.Run(slice(inputs, off, k, n), slice(outputs, off, k, n))
		}
		b.s.finish(r, k, time.Since(start), err != nil)
		if err != nil {
			return err
		}
		off += k
	}
	return nil
}

// batchRows is the leading dimension of the first input.
func batchRows(in []ml.Tensor) int {
	if len(in) == 0 || len(in[0].Shape) == 0 {
		return 0
	}
	return int(in[0].Shape[0])
}

// splittable: every input and output leads with the n rows and the
// outputs are the caller's buffers, so a part is a slice of each.
func splittable(in, out []ml.Tensor, n int) bool {
	for _, t := range in {
		if len(t.Shape) == 0 || int(t.Shape[0]) != n {
			return false
		}
	}
	for _, t := range out {
		if len(t.Shape) == 0 || int(t.Shape[0]) != n || (t.F32 == nil && t.I64 == nil) {
			return false
		}
	}
	return true
}

// slice is rows [off, off+k) of tensors that lead with n rows.
func slice(ts []ml.Tensor, off, k, n int) []ml.Tensor {
	out := make([]ml.Tensor, len(ts))
	for i, t := range ts {
		shape := slices.Clone(t.Shape)
		shape[0] = int64(k)
		x := ml.Tensor{DType: t.DType, Shape: shape}
		if t.F32 != nil {
			per := len(t.F32) / n
			x.F32 = t.F32[off*per : (off+k)*per]
		}
		if t.I64 != nil {
			per := len(t.I64) / n
			x.I64 = t.I64[off*per : (off+k)*per]
		}
		out[i] = x
	}
	return out
}
