package inference

import (
	"fmt"
	"sync"

	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/planner/catalog"
)

// resizeSession runs a variant that takes smaller images than the column
// carries (a catalog variant's input_size, Jellyfish 7.3's data
// adaptation: fit-14 of a 28x28 stream): each row is area-resized
// (ml.ResizeArea, what the variant was trained on) before the call. The
// operator sees the column's shape, so a re-plan to a smaller variant
// needs nothing else of the query.
type resizeSession struct {
	ml.Session
	from, to int
	in       []ml.TensorInfo
	pool     sync.Pool // scratch []float32, Run may be called concurrently
}

// withResize wraps s when variant v declares an input size smaller than
// the square image its single float32 input gets from the column (shape
// [N, 1, side, side] or [N, side, side] in the column, side from the
// column's tensor shape colShape, without the batch dimension).
func withResize(s ml.Session, v *catalog.Variant, colShape []int64) (ml.Session, error) {
	if len(v.InputSize) != 2 || len(s.Inputs()) != 1 || len(colShape) < 2 {
		return s, nil
	}
	h, w := colShape[len(colShape)-2], colShape[len(colShape)-1]
	to := v.InputSize[0]
	if h != w || v.InputSize[0] != v.InputSize[1] || int64(to) == h {
		return s, nil
	}
	if int64(to) > h {
		return nil, fmt.Errorf("%w: variant %s takes %dx%d images, the column has %dx%d", ErrModel, v.Name, to, to, h, w)
	}
	in := s.Inputs()[0]
	shape := append([]int64{-1}, colShape...)
	return &resizeSession{Session: s, from: int(h), to: to, in: []ml.TensorInfo{{Name: in.Name, DType: in.DType, Shape: shape}}}, nil
}

func (r *resizeSession) Inputs() []ml.TensorInfo { return r.in }

func (r *resizeSession) Run(in, out []ml.Tensor) error {
	x := in[0]
	n := int(x.Shape[0])
	px := r.from * r.from
	if len(x.F32) != n*px {
		return fmt.Errorf("%w: resize: %d values for %d rows of %dx%d", ErrModel, len(x.F32), n, r.from, r.from)
	}
	buf, _ := r.pool.Get().([]float32)
	if cap(buf) < n*r.to*r.to {
		buf = make([]float32, n*r.to*r.to)
	}
	buf = buf[:n*r.to*r.to]
	var tmp []float32
	for i := 0; i < n; i++ {
		tmp = ml.ResizeArea(tmp, x.F32[i*px:(i+1)*px], r.from, r.to)
		copy(buf[i*r.to*r.to:], tmp)
	}
	shape := make([]int64, len(x.Shape))
	copy(shape, x.Shape)
	shape[len(shape)-2], shape[len(shape)-1] = int64(r.to), int64(r.to)
	err := r.Session.Run([]ml.Tensor{{DType: ml.Float32, Shape: shape, F32: buf}}, out)
	r.pool.Put(buf) //nolint:staticcheck // the slice header is small next to the images
	return err
}
