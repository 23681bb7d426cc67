package connectors_test

import (
	"context"
	"testing"

	"github.com/tierflow/tierflow/runtime/connectors"
)

// TestJetStreamSinkStoresEveryRowThroughASmallWindow: with at most two
// publishes awaiting their ack, every row is still stored once, in a stream
// the sink created over its subject.
func TestJetStreamSinkStoresEveryRowThroughASmallWindow(t *testing.T) {
	nc, mem, c := jetStreamTest(t, "json")
	stats := &connectors.Stats{}
	w, err := c.NewSink(connectors.SinkConfig{Conn: nc, Subject: "win.out", Window: 2, Stats: stats})
	if err != nil {
		t.Fatal(err)
	}
	recs := readings(t, mem, 100)
	for _, r := range recs[:3] {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range recs {
		r.Release()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	js := newJetStream(t, nc, "")
	st, err := js.Stream(context.Background(), "WIN_OUT")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 300 || stats.Messages.Load() != 300 {
		t.Fatalf("stored %d, published %d, want 300", info.State.Msgs, stats.Messages.Load())
	}
}
