package relay_test

import (
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/transporttest"
	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/relay/inproc"
	"github.com/tierflow/tierflow/relay/natsrelay"
	"github.com/tierflow/tierflow/relay/natsserver"
)

// Both backends, adapted, pass dataflow's own transport conformance suite:
// real dataflows with one worker per transport.
func TestDataflowTransportInproc(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, mem memory.Allocator, workers int) []dataflow.Transport {
		tr := inproc.New(relay.Config{Allocator: mem, Window: 8})
		out := make([]dataflow.Transport, workers)
		for i := range out {
			a := relay.NewDataflowTransport(tr)
			t.Cleanup(func() { _ = a.Close() })
			out[i] = a
		}
		t.Cleanup(func() { _ = tr.Close() })
		return out
	})
}

func TestDataflowTransportNATS(t *testing.T) {
	srv, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	transporttest.Run(t, func(t *testing.T, mem memory.Allocator, workers int) []dataflow.Transport {
		out := make([]dataflow.Transport, workers)
		for i := range out {
			nc, err := srv.Connect()
			if err != nil {
				t.Fatal(err)
			}
			tr := natsrelay.New(nc, natsrelay.Options{Config: relay.Config{Allocator: mem, Window: 8}})
			a := relay.NewDataflowTransport(tr)
			// Cleanups run last-first: adapter, transport, connection.
			t.Cleanup(nc.Close)
			t.Cleanup(func() { _ = tr.Close() })
			t.Cleanup(func() {
				_ = a.Close()
				if err := a.Err(); err != nil {
					t.Errorf("worker %d transport: %v", i, err)
				}
			})
			out[i] = a
		}
		return out
	})
}
