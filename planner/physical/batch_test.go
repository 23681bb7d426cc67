package physical

import (
	"testing"
	"time"

	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/logical"
)

func TestBatchingPrecedenceAndPlannerRule(t *testing.T) {
	m := &catalog.Model{Name: "m"}
	for _, tc := range []struct {
		rate      float64
		model     *catalog.Model
		call      logical.CallBatch
		wantBatch int
		wantDelay time.Duration
		from      string
	}{
		{rate: 40, model: m, wantBatch: 4, wantDelay: 5 * time.Millisecond, from: "planner"},   // 0.8 rows in 4 windows
		{rate: 400, model: m, wantBatch: 8, wantDelay: 5 * time.Millisecond, from: "planner"},  // 8 rows
		{rate: 500, model: m, wantBatch: 16, wantDelay: 5 * time.Millisecond, from: "planner"}, // 10 rows -> 16
		{rate: 50000, model: m, wantBatch: 32, wantDelay: 5 * time.Millisecond, from: "planner"},
		{rate: 50000, model: &catalog.Model{MaxBatch: 64, MaxDelayMs: 2}, wantBatch: 64, wantDelay: 2 * time.Millisecond, from: "catalog"},
		{rate: 40, model: &catalog.Model{MaxBatch: 64, MaxDelayMs: 2}, call: logical.CallBatch{MaxBatch: 2, MaxDelay: time.Millisecond},
			wantBatch: 2, wantDelay: time.Millisecond, from: "call"},
	} {
		b := batching(nodeModel{model: tc.model, call: &logical.LateralModel{Batch: tc.call}}, tc.rate)
		if !b.Adaptive || b.MaxBatch != tc.wantBatch || b.MaxDelay != tc.wantDelay || b.BatchFrom != tc.from || b.DelayFrom != tc.from {
			t.Errorf("rate %g: %+v, want %d rows, %s, from %s", tc.rate, b, tc.wantBatch, tc.wantDelay, tc.from)
		}
	}
}
