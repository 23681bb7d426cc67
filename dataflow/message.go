package dataflow

import (
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/tierflow/tierflow/dataflow/progress"
)

// Epoch is a logical timestamp (see package progress).
type Epoch = progress.Epoch

// Closed is the frontier of something that will never carry data again.
const Closed = progress.Closed

// Batch is the unit of data on an edge: a record at an epoch. Whoever holds
// a Batch owns one reference to Record (see the package doc).
type Batch struct {
	Epoch  Epoch
	Record arrow.Record
	// Ingest is when the batch's data entered the query, in Unix
	// nanoseconds (0: unknown); see Header.Ingest.
	Ingest int64
}

// Kind says what a Message carries.
type Kind uint8

const (
	// Data carries a record at Header.Epoch.
	Data Kind = iota + 1
	// Progress announces that the sender will send nothing on this channel
	// below Header.Epoch any more (Closed: nothing at all).
	Progress
)

func (k Kind) String() string {
	switch k {
	case Data:
		return "data"
	case Progress:
		return "progress"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// ChannelID names one channel: the messages of one edge from one sender
// instance to one receiver instance. Ordering is guaranteed per ChannelID.
type ChannelID struct {
	Query    string
	Edge     int // index into Graph.Edges
	Sender   int // instance index of the edge's source operator
	Receiver int // instance index of the edge's target operator
}

func (c ChannelID) String() string {
	return fmt.Sprintf("%s/e%d/%d->%d", c.Query, c.Edge, c.Sender, c.Receiver)
}

// Header is what a transport must carry next to the payload.
type Header struct {
	Channel ChannelID
	Kind    Kind
	// Epoch is the batch's epoch for Data, the new frontier for Progress.
	Epoch Epoch
	// Seq numbers the messages of one channel 0, 1, 2, ... (data and
	// progress alike), so a transport can detect loss, duplicates and
	// reordering.
	Seq uint64
	// Ingest is, for Data, when the batch's oldest row entered the query at
	// its source, in Unix nanoseconds (0: unknown). It is stamped per batch,
	// not per row: every row of a batch shares it, which is what keeps it
	// free on the Arrow path. It travels with the batch through every
	// operator and across workers (the relay carries it), and sinks measure
	// end-to-end latency against it (InstanceStats.EndToEnd).
	Ingest int64
	// Arrived is, for Data from another worker, when this worker's
	// transport received it (Unix ns on this worker's clock; 0: a local
	// batch). Sinks measure the batch's residence here against it
	// (ResidenceMeter), with no clock of another machine involved.
	Arrived int64
	// Frontier is, for Data, a progress update carried on the batch: the
	// channel's frontier once the batch is in, as a Progress message right
	// behind it would say (0: none; never Closed). Only a Sender that is
	// a FrontierCarrier is given one.
	Frontier Epoch
}

// Message is a data batch or a progress announcement on one channel.
// Record is set only for Data and is owned by whoever holds the Message.
type Message struct {
	Header
	Record arrow.Record
}

// release drops the message's record reference, if any.
func (m *Message) release() {
	if m.Record != nil {
		m.Record.Release()
		m.Record = nil
	}
}
