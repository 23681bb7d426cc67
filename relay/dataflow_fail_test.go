package relay_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/relay/inproc"
)

// brokenAfter wraps a transport so that every receiver fails with a protocol
// error after n messages, and its peer never hears of it (as when a connection
// is lost between processes): without the inbox failing the run, the sender
// would stall on credit and the receiving worker would wait forever.
type brokenAfter struct {
	relay.Transport
	n int
}

func (b brokenAfter) OpenReceiver(ctx context.Context, link relay.LinkID) (relay.Receiver, error) {
	r, err := b.Transport.OpenReceiver(ctx, link)
	if err != nil {
		return nil, err
	}
	return &brokenReceiver{Receiver: r, left: b.n}, nil
}

type brokenReceiver struct {
	relay.Receiver
	left int
}

// Close of a broken end does not reach the sender; the transport's Close
// releases what the underlying end still buffers.
func (r *brokenReceiver) Close() error {
	if r.left == 0 {
		return nil
	}
	return r.Receiver.Close()
}

func (r *brokenReceiver) Recv(ctx context.Context) (relay.Message, error) {
	if r.left == 0 {
		return relay.Message{}, fmt.Errorf("%w: injected break", relay.ErrProtocol)
	}
	r.left--
	return r.Receiver.Recv(ctx)
}

// A link that breaks mid-run fails the run with dataflow.ErrTransport instead
// of leaving the receiving worker waiting for data that will never come.
func TestDataflowTransportBrokenLinkFailsTheRun(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	var batches []dataflow.Batch
	for e := 0; e < 50; e++ {
		b := array.NewRecordBuilder(mem, schema)
		b.Field(0).(*array.Int64Builder).Append(int64(e))
		batches = append(batches, dataflow.Batch{Epoch: dataflow.Epoch(e), Record: b.NewRecord()})
		b.Release()
	}
	var got builtin.Captured
	g := &dataflow.Graph{Query: "q-broken"}
	src := g.AddOperator(dataflow.OperatorSpec{Name: "src", Outputs: 1, Workers: []int{0},
		New: func(dataflow.Instance) (dataflow.Operator, error) { return builtin.NewSliceSource(batches), nil }})
	sink := g.AddOperator(dataflow.OperatorSpec{Name: "sink", Inputs: 1, Workers: []int{1},
		New: func(i dataflow.Instance) (dataflow.Operator, error) { return builtin.NewCapture(&got, 0), nil }})
	g.Connect(src, 0, sink, 0)

	base := inproc.New(relay.Config{Allocator: mem, Window: 4})
	defer base.Close()
	tr := relay.NewDataflowTransport(brokenAfter{Transport: base, n: 3})
	defer tr.Close()

	ws, err := dataflow.BuildLocal(g, dataflow.Config{Allocator: mem, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = dataflow.RunWorkers(ctx, ws)
	if !errors.Is(err, dataflow.ErrTransport) {
		t.Fatalf("run over a broken link: want ErrTransport, got %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("the run waited for its deadline instead of failing: %v", err)
	}
	if !errors.Is(tr.Err(), relay.ErrProtocol) {
		t.Fatalf("transport Err: want the protocol error, got %v", tr.Err())
	}
	got.Release()
}
