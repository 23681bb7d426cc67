package exec

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// cancelling cancels the run when the first window arrives, as Ctrl-C would.
type cancelling struct {
	collect
	cancel context.CancelFunc
	closed bool
}

func (c *cancelling) Write(rec arrow.Record) error {
	c.cancel()
	return c.collect.Write(rec)
}
func (c *cancelling) Close() error { c.closed = true; return nil }

func TestCancelStopsCleanlyKeepingWhatWasWritten(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &cancelling{cancel: cancel}
	q, err := Build(examplePlan(t, filepath.Join("..", "..", "examples", "streaming")), Options{Allocator: mem, MaxDelay: time.Second, BatchSize: 10, Output: out})
	if err != nil {
		t.Fatal(err)
	}
	st, err := q.Run(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("run ended with %v", err)
	}
	if len(out.rows) == 0 || !out.closed || st.RowsRead >= 1200 {
		t.Fatalf("rows %d, closed %v, read %d", len(out.rows), out.closed, st.RowsRead)
	}
}
