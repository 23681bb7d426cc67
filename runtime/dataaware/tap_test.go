package dataaware

import (
	"bytes"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/relay/frame"
	"github.com/tierflow/tierflow/relay/natsserver"
)

// TestTapFeedsTheEstimator publishes Arrow messages on an embedded NATS
// server (random port): the tap reads their tensor column into the
// estimator, counts a message that is not Arrow, and skips the end marker.
func TestTapFeedsTheEstimator(t *testing.T) {
	srv, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	est, err := NewEstimator(Predicted{Labels: []string{"a", "b", "c"}}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	tap, err := TapNATS(nc, "cams.1", "pred", est, "cam1")
	if err != nil {
		t.Fatal(err)
	}
	defer tap.Close()

	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	col, err := ml.NewTensorColumn(mem, []int64{1}, []float32{2, 2, 2, 1})
	if err != nil {
		t.Fatal(err)
	}
	schema := arrow.NewSchema([]arrow.Field{ml.TensorField("pred", []int64{1})}, nil)
	rec := array.NewRecord(schema, []arrow.Array{col}, 4)
	col.Release()
	var b bytes.Buffer
	if err := frame.EncodeRecord(&b, rec, mem); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	for _, data := range [][]byte{b.Bytes(), []byte("not arrow")} {
		if err := nc.Publish("cams.1", data); err != nil {
			t.Fatal(err)
		}
	}
	end := nats.NewMsg("cams.1")
	end.Header.Set("Tierflow-End", "1")
	if err := nc.PublishMsg(end); err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	for deadline := time.Now().Add(5 * time.Second); tap.Rows.Load() < 4 || tap.Bad.Load() < 1; {
		if time.Now().After(deadline) {
			t.Fatalf("tap saw %d rows, %d bad messages", tap.Rows.Load(), tap.Bad.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	mix, n := est.Mix("cam1")
	if n != 4 || mix["c"] < mix["b"] || mix["a"] >= mix["b"] {
		t.Fatalf("mix %v after %d rows: want c (3 rows) > b (1) > a (0)", mix, n)
	}
	if tap.Bad.Load() != 1 {
		t.Fatalf("%d bad messages, want 1 (the end marker is not one)", tap.Bad.Load())
	}
}
