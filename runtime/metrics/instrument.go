package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tierflow/tierflow/dataflow"
)

// Instrument wraps every operator of g that has inputs so that each batch's
// handling time lands in the latency histogram and the frontier lag gauge
// follows the newest epoch seen. Sources are left alone: they have no input
// batches, and the engine recognises them by their Produce method.
func (r *Registry) Instrument(g *dataflow.Graph, worker string) {
	for i := range g.Operators {
		spec := &g.Operators[i]
		if spec.Inputs == 0 || spec.New == nil {
			continue
		}
		newOp := spec.New
		hist := r.batchSeconds.WithLabelValues(g.Query, spec.Name, worker)
		lag := r.frontierLag.WithLabelValues(g.Query, spec.Name, worker)
		spec.New = func(in dataflow.Instance) (dataflow.Operator, error) {
			op, err := newOp(in)
			if err != nil {
				return nil, err
			}
			t := &timed{Operator: op, hist: hist, lag: lag}
			w, isWaker := op.(dataflow.Waker)
			f, isObserver := op.(dataflow.FrontierObserver)
			// The engine finds optional callbacks by type assertion, so the
			// wrapper must have exactly the methods the operator has.
			switch {
			case isWaker && isObserver:
				return struct {
					*timed
					dataflow.Waker
					dataflow.FrontierObserver
				}{t, w, f}, nil
			case isWaker:
				return struct {
					*timed
					dataflow.Waker
				}{t, w}, nil
			case isObserver:
				return struct {
					*timed
					dataflow.FrontierObserver
				}{t, f}, nil
			}
			return t, nil
		}
	}
}

type timed struct {
	dataflow.Operator
	hist   prometheus.Observer
	lag    prometheus.Gauge
	newest dataflow.Epoch
}

// Counters passes the wrapped operator's own measurements through.
func (t *timed) Counters() map[string]int64 {
	if c, ok := t.Operator.(dataflow.Counting); ok {
		return c.Counters()
	}
	return nil
}

// Attributes passes the wrapped operator's description through.
func (t *timed) Attributes() map[string]string {
	if a, ok := t.Operator.(dataflow.Attributed); ok {
		return a.Attributes()
	}
	return nil
}

func (t *timed) OnBatch(ctx *dataflow.Context, input int, b dataflow.Batch, cap *dataflow.Capability) error {
	if b.Epoch > t.newest {
		t.newest = b.Epoch
	}
	if f := ctx.Frontier(); f != dataflow.Closed && t.newest >= f {
		t.lag.Set(float64(t.newest - f))
	}
	start := time.Now()
	err := t.Operator.OnBatch(ctx, input, b, cap)
	t.hist.Observe(time.Since(start).Seconds())
	return err
}
