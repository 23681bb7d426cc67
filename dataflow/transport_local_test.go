package dataflow_test

import (
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/transporttest"
)

func TestLocalTransportConformance(t *testing.T) {
	transporttest.Run(t, func(_ *testing.T, _ memory.Allocator, workers int) []dataflow.Transport {
		tr := dataflow.NewLocalTransport()
		out := make([]dataflow.Transport, workers)
		for i := range out {
			out[i] = tr
		}
		return out
	})
}
