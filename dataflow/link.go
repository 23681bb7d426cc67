package dataflow

import "time"

// LinkState is what the sending end of a channel to another worker knows of
// its network link, from its receiver's acknowledgements (the NATS relay's
// meters): an operator that shapes what it emits to the link (a source-side
// data adaptation, Jellyfish 7.3) reads it per batch.
type LinkState struct {
	// BandwidthBps is the acks' harmonic mean over the last second and
	// LastBps the latest ack's sample alone, in bytes per second; 0 before
	// the first ack.
	BandwidthBps, LastBps float64
	// SRTT is the messages' smoothed round trip (transfer included).
	SRTT time.Duration
	// TransferBps and LastTransferBps are the same bandwidth with the
	// link's base round trip (BaseRTT, that of a message without payload)
	// taken out of each sample: the link's rate, whatever the messages'
	// size; 0 where the sender does not measure it.
	TransferBps, LastTransferBps float64
	BaseRTT                      time.Duration
	// Acks counts the acknowledged data messages.
	Acks uint64
	// UnackedBytes are data bytes on the wire whose ack has not come
	// back: what a batch emitted now queues behind.
	UnackedBytes int64
	// Bytes and Batches are what the link carried so far (frame headers
	// and progress included), so a reader can tell its payload from the
	// framing.
	Bytes, Batches uint64
}

// LinkStater is a Sender that knows its link's state (relay's senders).
type LinkStater interface {
	LinkState() LinkState
}

// OutputLinks are the link states of the channels output carries to other
// workers whose senders report one; empty when every receiver runs on this
// worker (no link) or the transport reports nothing.
func (c *Context) OutputLinks(output int) []LinkStater {
	if output < 0 || output >= len(c.in.outs) {
		return nil
	}
	var out []LinkStater
	for _, oe := range c.in.outs[output] {
		for _, oc := range oe.chans {
			if oc.local != nil {
				continue
			}
			if ls, ok := oc.s.(LinkStater); ok {
				out = append(out, ls)
			}
		}
	}
	return out
}
