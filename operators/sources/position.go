package sources

// Position is where a replayable message stream (JetStream) stood when a
// source took a batch from it: Seq is the stream sequence of the batch's
// first message and MaxTS the largest event time (µs) the source had seen
// before it, which sets its watermark. Every message before Seq has an
// event time at most MaxTS, so a re-deployed query whose state is windows
// starting after MaxTS resumes at Seq (with its watermark at MaxTS)
// instead of replaying the stream from its start.
type Position struct {
	Seq   uint64 `json:"seq"`
	MaxTS int64  `json:"max_ts"`
}

// PositionReader is a Reader over a replayable stream: LastPosition is the
// stream sequence of the first message of the record Next last returned
// (0: not known).
type PositionReader interface {
	Reader
	LastPosition() uint64
}

// Positions is a bounded, ordered log of a stream's positions: recent ones
// are kept densely and older ones thinned, so it stays small however long
// a query runs while a resume point stays close to any recent epoch.
type Positions []Position

// MaxPositions bounds a Positions log.
const MaxPositions = 512

// Add appends p: a position with the same MaxTS as the last replaces it
// (the later sequence is the closer resume point for the same watermark),
// and a full log drops every other one of its older half.
func (ps Positions) Add(p Position) Positions {
	if n := len(ps); n > 0 {
		last := ps[n-1]
		if p.Seq <= last.Seq {
			return ps // a redelivery: positions only move forward
		}
		if p.MaxTS == last.MaxTS {
			ps[n-1] = p
			return ps
		}
	}
	ps = append(ps, p)
	if len(ps) > MaxPositions {
		half := len(ps) / 2
		kept := ps[:0]
		for i, q := range ps {
			if i >= half || i%2 == 0 {
				kept = append(kept, q)
			}
		}
		ps = kept
	}
	return ps
}

// Before is the last position whose MaxTS is below ts: the stream
// resumes there and no message with an event time at or after ts is
// missed. ok is false when no position is that early.
func (ps Positions) Before(ts int64) (p Position, ok bool) {
	for _, q := range ps {
		if q.MaxTS >= ts {
			break
		}
		p, ok = q, true
	}
	return p, ok
}
