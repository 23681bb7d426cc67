package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"github.com/tierflow/tierflow/dataflow"
)

// DataflowTransport runs dataflow channels over a relay Transport: every
// channel the worker listens on gets a receiver and a goroutine that pumps its
// messages into the worker's inbox; every channel it dials gets a sender. A
// blocked inbox stops the pump, which stops granting credit, which stalls the
// remote sender: the dataflow's backpressure crosses the network unchanged.
type DataflowTransport struct {
	tr     Transport
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu   sync.Mutex
	recv map[dataflow.ChannelID]Receiver
	err  error
}

var (
	_ dataflow.Transport       = (*DataflowTransport)(nil)
	_ dataflow.LinkStater      = (*dataflowSender)(nil)
	_ dataflow.FrontierCarrier = (*dataflowSender)(nil)
)

// NewDataflowTransport adapts tr. Close the adapter before tr.
func NewDataflowTransport(tr Transport) *DataflowTransport {
	ctx, cancel := context.WithCancel(context.Background())
	return &DataflowTransport{tr: tr, ctx: ctx, cancel: cancel, recv: make(map[dataflow.ChannelID]Receiver)}
}

// openTimeout bounds opening a link end: dataflow's Listen and Dial take no
// context, and opening only waits for the server to register a subscription.
const openTimeout = 10 * time.Second

func linkOf(ch dataflow.ChannelID) (LinkID, error) {
	for _, v := range []int{ch.Edge, ch.Sender, ch.Receiver} {
		if v < 0 || v > math.MaxUint32 {
			return LinkID{}, fmt.Errorf("%w: channel %v has an index out of range", ErrBadLink, ch)
		}
	}
	return LinkID{Query: ch.Query, Edge: uint32(ch.Edge), Sender: uint32(ch.Sender), Receiver: uint32(ch.Receiver)}, nil
}

// Listen implements dataflow.Transport.
func (d *DataflowTransport) Listen(ch dataflow.ChannelID, in dataflow.Inbox) error {
	link, err := linkOf(ch)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(d.ctx, openTimeout)
	r, err := d.tr.OpenReceiver(ctx, link)
	cancel()
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.recv[ch] = r
	d.mu.Unlock()
	d.wg.Add(1)
	go d.pump(ch, r, in)
	return nil
}

// pump moves one channel's messages into its inbox until the channel's
// Progress at Closed, the sender's end, or Close.
func (d *DataflowTransport) pump(ch dataflow.ChannelID, r Receiver, in dataflow.Inbox) {
	defer d.wg.Done()
	defer func() {
		_ = r.Close()
		d.mu.Lock()
		delete(d.recv, ch)
		d.mu.Unlock()
	}()
	// The channel's sequence numbers are the pump's own count of what it
	// delivered: a backend may carry a batch and its frontier in one
	// message or in two, and the relay already keeps a link in order,
	// exactly once.
	var seq uint64
	for {
		m, err := r.Recv(d.ctx)
		if err != nil {
			if err != io.EOF && d.ctx.Err() == nil {
				d.fail(in, ch, fmt.Errorf("relay: channel %v: %w", ch, err))
			}
			return
		}
		dm := dataflow.Message{Header: dataflow.Header{Channel: ch, Epoch: dataflow.Epoch(m.Epoch), Seq: seq, Ingest: m.Ingest}}
		seq++
		if m.Kind == KindData {
			dm.Kind, dm.Record, dm.Arrived, dm.Frontier = dataflow.Data, m.Record, m.Arrived, dataflow.Epoch(m.Frontier)
			if dm.Arrived == 0 {
				dm.Arrived = time.Now().UnixNano()
			}
		} else {
			dm.Kind = dataflow.Progress
		}
		if err := in.Deliver(d.ctx, dm); err != nil {
			if !errors.Is(err, dataflow.ErrClosed) && d.ctx.Err() == nil {
				d.fail(in, ch, fmt.Errorf("relay: deliver on channel %v: %w", ch, err))
			}
			return
		}
		if m.Kind == KindProgress && dataflow.Epoch(m.Epoch) == dataflow.Closed {
			return
		}
		reportResidence(in, r)
	}
}

// reportResidence passes what the inbox measured of the worker's
// residence since the last message to the receiver, for its sender.
func reportResidence(in dataflow.Inbox, r Receiver) {
	rm, ok := in.(dataflow.ResidenceMeter)
	if !ok {
		return
	}
	rr, ok := r.(ResidenceReporter)
	if !ok {
		return
	}
	if d := rm.Residence(); d > 0 {
		rr.ReportResidence(d)
	}
}

// fail records the first failure and fails the run through the inbox: a worker
// whose input broke must stop with ErrTransport, not wait for data that will
// never come.
func (d *DataflowTransport) fail(in dataflow.Inbox, ch dataflow.ChannelID, err error) {
	d.mu.Lock()
	if d.err == nil {
		d.err = err
	}
	d.mu.Unlock()
	in.Fail(ch, err)
}

// Err is the first failure of a receiving channel (a protocol error, a lost
// connection), or nil; the run it broke has failed with dataflow.ErrTransport.
func (d *DataflowTransport) Err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// Dial implements dataflow.Transport.
func (d *DataflowTransport) Dial(ch dataflow.ChannelID) (dataflow.Sender, error) {
	link, err := linkOf(ch)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(d.ctx, openTimeout)
	s, err := d.tr.OpenSender(ctx, link)
	cancel()
	if err != nil {
		return nil, err
	}
	return &dataflowSender{s: s, ctx: d.ctx}, nil
}

// Close stops every pump, closes their receivers (releasing what they
// buffered) and waits for them.
func (d *DataflowTransport) Close() error {
	d.cancel()
	d.mu.Lock()
	rs := make([]Receiver, 0, len(d.recv))
	for _, r := range d.recv {
		rs = append(rs, r)
	}
	d.mu.Unlock()
	for _, r := range rs {
		_ = r.Close()
	}
	d.wg.Wait()
	return nil
}

// dataflowSender keeps the context of the run's sends: the engine closes a
// channel after its last progress, or when the run is cancelled, and only
// in the first case should Close wait for the receiver to have everything.
type dataflowSender struct {
	s   Sender
	mu  sync.Mutex
	ctx context.Context
}

func (ds *dataflowSender) Send(ctx context.Context, m dataflow.Message) error {
	ds.mu.Lock()
	ds.ctx = ctx
	ds.mu.Unlock()
	switch m.Kind {
	case dataflow.Data:
		var err error
		if fs, ok := ds.s.(FrontierSender); ok && m.Frontier != 0 {
			err = fs.SendDataThen(ctx, uint64(m.Epoch), m.Ingest, m.Record, uint64(m.Frontier))
		} else {
			err = ds.s.SendDataAt(ctx, uint64(m.Epoch), m.Ingest, m.Record)
			if err == nil && m.Frontier != 0 {
				err = ds.s.SendProgress(ctx, uint64(m.Frontier))
			}
		}
		m.Record.Release()
		return err
	case dataflow.Progress:
		if m.Record != nil {
			m.Record.Release()
		}
		return ds.s.SendProgress(ctx, uint64(m.Epoch))
	default:
		if m.Record != nil {
			m.Record.Release()
		}
		return fmt.Errorf("%w: %s message on %v", ErrProtocol, m.Kind, m.Channel)
	}
}

// CarriesFrontier implements dataflow.FrontierCarrier: a backend that
// carries a frontier on a batch saves the progress its own message.
func (ds *dataflowSender) CarriesFrontier() bool {
	_, ok := ds.s.(FrontierSender)
	return ok
}

// LinkState is the link's meter as dataflow.LinkState: an operator that
// emits to this link (a source-side data adaptation) sizes its batches by
// it.
func (ds *dataflowSender) LinkState() dataflow.LinkState { return ds.s.Stats().LinkState() }

// LinkState is the sending end's stats as what an operator sizes its
// batches by (dataflow.LinkState).
func (st LinkStats) LinkState() dataflow.LinkState {
	return dataflow.LinkState{BandwidthBps: st.AckBandwidthBps, LastBps: st.LastAckBps, SRTT: st.SRTT, Acks: st.Acks, LastAck: st.LastAck, AckTimes: st.AckTimes, OldestSent: st.OldestSent,
		UnackedBytes: st.UnackedBytes, OverdueBps: st.OverdueBps, Bytes: st.Bytes, Batches: st.Batches,
		TransferBps: st.TransferBps, LastTransferBps: st.LastTransferBps, BaseRTT: st.BaseRTT, Samples: st.Samples,
		Residence: st.Residence}
}

func (ds *dataflowSender) Close() error {
	ds.mu.Lock()
	ctx := ds.ctx
	ds.mu.Unlock()
	return CloseSender(ctx, ds.s)
}
