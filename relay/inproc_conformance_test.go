package relay_test

import (
	"testing"

	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/relay/inproc"
	"github.com/tierflow/tierflow/relay/relaytest"
)

// TestInprocConformance runs the relay conformance suite on the in-process
// transport. It lives here, in relay's test binary (whose tests use inproc
// already), rather than in a binary of its own: one test binary fewer in make
// test (issue #27).
func TestInprocConformance(t *testing.T) {
	relaytest.Run(t, func(t *testing.T, cfg relay.Config) (relay.Transport, relay.Transport) {
		tr := inproc.New(cfg)
		t.Cleanup(func() { _ = tr.Close() })
		return tr, tr
	})
}
