package sched

import (
	"slices"
	"sync"
	"time"

	"github.com/tierflow/tierflow/operators/ml"
)

// bound is a shared session as one query's model operator sees it.
type bound struct {
	s     *Scheduler
	inner ml.Session
	key   string
	t     Tenant

	mu    sync.Mutex
	forks map[int]ml.Session
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

// variantRun runs the tenant's variant i into the bound session's output
// buffers, matched by name: variants of one model share the outputs the
// query reads (probs) but not always the others (an embedding of another
// width, or none), which go to scratch buffers.
func (b *bound) variantRun(i int) func(in, out []ml.Tensor) error {
	sess := b.variant(i)
	mine := b.inner.Outputs()
	return func(in, out []ml.Tensor) error {
		var vout []ml.Tensor
		for _, o := range sess.Outputs() {
			j := slices.IndexFunc(mine, func(x ml.TensorInfo) bool { return x.Name == o.Name })
			if j >= 0 && j < len(out) && slices.Equal(out[j].Shape[1:], o.Shape[1:]) {
				vout = append(vout, out[j])
				continue
			}
			shape := slices.Clone(o.Shape)
			shape[0] = int64(batchRows(in))
			per := 1
			for _, d := range shape {
				per *= int(d)
			}
			x := ml.Tensor{DType: o.DType, Shape: shape}
			if o.DType == ml.Int64 {
				x.I64 = make([]int64, per)
			} else {
				x.F32 = make([]float32, per)
			}
			vout = append(vout, x)
		}
		return sess.Run(in, vout)
	}
}

// Compatible says whether variant v can serve a batch bound to outputs
// mine: it produces every one of them, by name, with the same row shape.
func Compatible(mine []ml.TensorInfo, v ml.Session) bool {
	theirs := v.Outputs()
	for _, o := range mine {
		j := slices.IndexFunc(theirs, func(x ml.TensorInfo) bool { return x.Name == o.Name })
		if j < 0 || !slices.Equal(theirs[j].Shape[1:], o.Shape[1:]) || theirs[j].DType != o.DType {
			return false
		}
	}
	return true
}

// variant is the session of the tenant's variant i, forked for this
// caller (a session's buffers are per caller), once.
func (b *bound) variant(i int) ml.Session {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.forks == nil {
		b.forks = map[int]ml.Session{}
	}
	if s := b.forks[i]; s != nil {
		return s
	}
	s := b.t.Variants[i].Session
	if f, ok := s.(ml.Forker); ok {
		s = f.Fork()
	}
	b.forks[i] = s
	return s
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
		Splittable: splittable(inputs, outputs, n), Variant: -1, grant: make(chan int, 1)}
	if b.t.Evidence != nil {
		r.Votes = make([][]float64, n)
		for i := range r.Votes {
			r.Votes[i] = b.t.Evidence(inputs, i)
		}
	}
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
		run := b.inner.Run
		if r.Variant >= 0 { // set before the grant was sent
			run = b.variantRun(r.Variant)
		}
		var err error
		if off == 0 && k == n {
			err = run(inputs, outputs)
		} else {
			err = run(slice(inputs, off, k, n), slice(outputs, off, k, n))
		}
		b.s.finish(r, k, start, b.s.took(start, k), err != nil)
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
