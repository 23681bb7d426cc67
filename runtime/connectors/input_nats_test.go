package connectors_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/runtime/connectors"
)

// TestNATSQueueGroupSplitsMessages: two instances in one queue group share a
// subject's messages, each row reaching exactly one of them.
func TestNATSQueueGroupSplitsMessages(t *testing.T) {
	s := startServer(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	c, err := connectors.Builtins().Lookup(connectors.NATS, "json")
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var outs []*textWriter
	var waits []func() error
	for i := 0; i < 2; i++ {
		mk, err := c.NewSource(connectors.SourceConfig{Conn: connect(t, s), Subject: "q.in", Queue: "workers", Schema: readingsSchema,
			MaxRows: 8, OnError: sources.Fail, EventTime: sources.EventTime{Column: -1}})
		if err != nil {
			t.Fatal(err)
		}
		out := newTextWriter()
		outs = append(outs, out)
		waits = append(waits, runSource(t, mem, mk, out, stop))
	}
	checkFor(t, 5*time.Second, func() error {
		if n := s.NATS().GlobalAccount().Interest("q.in"); n < 2 {
			return fmt.Errorf("%d subscribers", n)
		}
		return nil
	})
	pub := connect(t, s)
	for i := 0; i < 200; i++ {
		if err := pub.Publish("q.in", []byte(fmt.Sprintf(`{"sensor": %d}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	checkFor(t, 5*time.Second, func() error {
		if n := outs[0].Rows() + outs[1].Rows(); n != 200 {
			return fmt.Errorf("%d rows of 200", n)
		}
		return nil
	})
	close(stop)
	for _, w := range waits {
		if err := w(); err != nil {
			t.Fatal(err)
		}
	}
	if outs[0].Rows() == 0 || outs[1].Rows() == 0 || outs[0].Rows()+outs[1].Rows() != 200 {
		t.Fatalf("split %d + %d, want both shares of 200", outs[0].Rows(), outs[1].Rows())
	}
}
