package inproc

import (
	"testing"

	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/relay/relaytest"
)

func TestConformance(t *testing.T) {
	relaytest.Run(t, func(t *testing.T, cfg relay.Config) (relay.Transport, relay.Transport) {
		tr := New(cfg)
		t.Cleanup(func() { _ = tr.Close() })
		return tr, tr
	})
}
