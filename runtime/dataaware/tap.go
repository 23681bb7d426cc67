package dataaware

import (
	"fmt"
	"sync/atomic"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/relay/frame"
)

// endHeader marks the connectors' end-of-stream message (no rows).
const endHeader = "Tierflow-End"

// Tap feeds an Estimator from a stream's NATS subject (FORMAT ARROW, as the
// connectors publish and read it; a JetStream stream's subject too): a plain
// subscription, outside the query's queue group, so it takes nothing from
// the query. Each message's tensor column is the evidence of its rows.
type Tap struct {
	sub *nats.Subscription
	// Rows and Bad count the rows observed and the messages that could not
	// be read (not Arrow, no such column).
	Rows, Bad atomic.Int64
}

// TapNATS subscribes est (stream key key) to subject, reading column.
func TapNATS(nc *nats.Conn, subject, column string, est *Estimator, key string) (*Tap, error) {
	return TapNATSBy(nc, subject, column, "", est, key)
}

// TapNATSBy is TapNATS keyed by a column of the rows (a camera, a patient:
// the query's group key), one posterior per value; keyColumn "" keys every
// row as key.
func TapNATSBy(nc *nats.Conn, subject, column, keyColumn string, est *Estimator, key string) (*Tap, error) {
	t := &Tap{}
	mem := memory.NewGoAllocator()
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
		if m.Header.Get(endHeader) != "" {
			return
		}
		n, err := observeMessage(m.Data, mem, column, keyColumn, est, key)
		if err != nil {
			t.Bad.Add(1)
			return
		}
		t.Rows.Add(int64(n))
	})
	if err != nil {
		return nil, err
	}
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		sub.Unsubscribe()
		return nil, err
	}
	t.sub = sub
	return t, nc.Flush()
}

// Close unsubscribes.
func (t *Tap) Close() error { return t.sub.Unsubscribe() }

func observeMessage(data []byte, mem memory.Allocator, column, keyColumn string, est *Estimator, key string) (int, error) {
	rec, err := frame.DecodeRecord(data, mem)
	if err != nil {
		return 0, err
	}
	if rec == nil {
		return 0, nil
	}
	defer rec.Release()
	idx := rec.Schema().FieldIndices(column)
	if len(idx) == 0 {
		return 0, fmt.Errorf("%w: no column %q", ErrEstimator, column)
	}
	vals, err := TensorValues(rec.Column(idx[0]))
	if err != nil {
		return 0, err
	}
	if keyColumn == "" {
		return int(rec.NumRows()), est.Observe(key, vals)
	}
	kidx := rec.Schema().FieldIndices(keyColumn)
	if len(kidx) == 0 {
		return 0, fmt.Errorf("%w: no key column %q", ErrEstimator, keyColumn)
	}
	keys := rec.Column(kidx[0])
	n := int(rec.NumRows())
	d := len(vals) / max(n, 1)
	byKey := map[string][]float32{}
	var order []string
	for i := 0; i < n; i++ {
		k := keyColumn + "=" + keys.ValueStr(i)
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], vals[i*d:(i+1)*d]...)
	}
	for _, k := range order {
		if err := est.Observe(k, byKey[k]); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// TensorValues are a tensor column's float32 values, row-major (the
// column's own buffer, offset applied).
func TensorValues(col arrow.Array) ([]float32, error) {
	l, ok := col.(*array.FixedSizeList)
	if !ok {
		return nil, fmt.Errorf("%w: column of type %s, want a float tensor", ErrEstimator, col.DataType())
	}
	f, ok := l.ListValues().(*array.Float32)
	if !ok {
		return nil, fmt.Errorf("%w: tensor of %s, want float", ErrEstimator, l.ListValues().DataType())
	}
	n := int(l.DataType().(*arrow.FixedSizeListType).Len())
	vals := f.Float32Values()
	start := l.Offset() * n
	end := start + l.Len()*n
	if end > len(vals) {
		return nil, fmt.Errorf("%w: tensor column shorter than its rows", ErrEstimator)
	}
	return vals[start:end], nil
}
