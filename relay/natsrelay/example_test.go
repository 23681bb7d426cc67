package natsrelay_test

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/relay/natsrelay"
	"github.com/tierflow/tierflow/relay/natsserver"
)

// Two workers, each with its own connection to an embedded server, move one
// batch and a frontier over the link for edge 0 of query q1 from worker 0 to
// worker 1.
func Example() {
	srv, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		panic(err)
	}
	defer srv.Shutdown()
	ncA, _ := srv.Connect()
	defer ncA.Close()
	ncB, _ := srv.Connect()
	defer ncB.Close()
	workerA := natsrelay.New(ncA, natsrelay.Options{})
	defer workerA.Close()
	workerB := natsrelay.New(ncB, natsrelay.Options{})
	defer workerB.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	link := relay.LinkID{Query: "q1", Edge: 0, Sender: 0, Receiver: 1}
	in, _ := workerB.OpenReceiver(ctx, link)
	defer in.Close()
	out, _ := workerA.OpenSender(ctx, link)

	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.AppendValues([]int64{1, 2, 3}, nil)
	col := b.NewArray()
	rec := array.NewRecord(arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, 3)
	_ = out.SendData(ctx, 7, rec)
	_ = out.SendProgress(ctx, 8) // epoch 7 is complete
	_ = out.Close()
	rec.Release()
	col.Release()
	b.Release()

	for {
		m, err := in.Recv(ctx)
		if err != nil {
			fmt.Println("end:", err)
			break
		}
		switch m.Kind {
		case relay.KindData:
			fmt.Println("data at epoch", m.Epoch, m.Record.Column(0))
			m.Record.Release()
		case relay.KindProgress:
			fmt.Println("frontier", m.Epoch)
		}
	}
	st := out.Stats()
	fmt.Println("sent", st.Batches, "batch,", st.Progress, "progress message")
	// Output:
	// data at epoch 7 [1 2 3]
	// frontier 8
	// end: EOF
	// sent 1 batch, 1 progress message
}
