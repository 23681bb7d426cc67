package dataaware_test

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
	"github.com/tierflow/tierflow/runtime/dataaware"
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
	est, err := dataaware.NewEstimator(dataaware.Predicted{Labels: []string{"a", "b", "c"}}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	tap, err := dataaware.TapNATS(nc, "cams.1", "pred", est, "cam1")
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

// TestTapByKey keeps one posterior per camera.
func TestTapByKey(t *testing.T) {
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
	est, _ := dataaware.NewEstimator(dataaware.Predicted{Labels: []string{"a", "b"}}, 0, 0)
	tap, err := dataaware.TapNATSBy(nc, "cams", "pred", "camera", est, "")
	if err != nil {
		t.Fatal(err)
	}
	defer tap.Close()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	col, _ := ml.NewTensorColumn(mem, []int64{1}, []float32{0, 1, 1, 1})
	cb := array.NewInt64Builder(mem)
	cb.AppendValues([]int64{7, 8, 8, 8}, nil)
	cams := cb.NewArray()
	cb.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "camera", Type: arrow.PrimitiveTypes.Int64}, ml.TensorField("pred", []int64{1})}, nil)
	rec := array.NewRecord(schema, []arrow.Array{cams, col}, 4)
	cams.Release()
	col.Release()
	var b bytes.Buffer
	if err := frame.EncodeRecord(&b, rec, mem); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	nc.Publish("cams", b.Bytes())
	nc.Flush()
	for deadline := time.Now().Add(5 * time.Second); tap.Rows.Load() < 4; {
		if time.Now().After(deadline) {
			t.Fatalf("tap saw %d rows", tap.Rows.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if ks := est.Keys(); len(ks) != 2 || ks[0] != "camera=7" || ks[1] != "camera=8" {
		t.Fatalf("keys %v", ks)
	}
	m7, n7 := est.Mix("camera=7")
	m8, n8 := est.Mix("camera=8")
	if n7 != 1 || n8 != 3 || m7["a"] <= m7["b"] || m8["b"] <= m8["a"] {
		t.Fatalf("camera 7: %v (%d rows), camera 8: %v (%d rows)", m7, n7, m8, n8)
	}
}
