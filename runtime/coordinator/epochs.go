package coordinator

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/relay/frame"
	"github.com/tierflow/tierflow/runtime/connectors"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// epochs is the client's side of per-epoch commits: it holds each epoch's
// result batches until every sink instance of the newest generation has
// passed the epoch (its commit marker), then writes the epoch, in epoch
// order. After a recovery the new generation replays from the start; the
// epochs already written are dropped, and what the old generation sent of
// an epoch it did not commit is thrown away, so no row is written twice
// and none is missing.
type epochs struct {
	out sinks.Writer
	mem memory.Allocator
	err error // the first write error (writing stops there)
	asm connectors.Assembler

	gen                int
	sinks, sinkWorkers int               // of generation gen
	frontier           map[string]uint64 // by sink instance, generation gen
	ends               int               // end markers of generation gen
	pending            map[uint64][]arrow.Record
	written            uint64 // every epoch below it is written
	// minGen: results of older generations are stale (the client lost
	// its connection while they ran; expect).
	minGen int
}

func newEpochs(out sinks.Writer, mem memory.Allocator) *epochs {
	return &epochs{out: out, mem: mem, frontier: map[string]uint64{}, pending: map[uint64][]arrow.Record{}}
}

func headerInt(m *nats.Msg, key string) (uint64, bool) {
	v := m.Header.Get(key)
	if v == "" {
		return 0, false
	}
	n, err := strconv.ParseUint(v, 10, 64)
	return n, err == nil
}

// receive takes one message of the results subject.
func (e *epochs) receive(m *nats.Msg) error {
	gen64, _ := headerInt(m, deploy.HeaderGen)
	gen := int(gen64)
	if gen < e.gen || gen < e.minGen {
		return nil // an aborted (or stale) generation's leftovers
	}
	if gen > e.gen {
		e.switchTo(gen, m)
	}
	if m.Header.Get(deploy.HeaderEnd) != "" {
		e.ends++
		if e.ended() {
			e.flushAll()
		}
		return nil
	}
	if f, ok := headerInt(m, deploy.HeaderFrontier); ok {
		e.frontier[m.Header.Get(deploy.HeaderSink)] = f
		e.commit()
		return nil
	}
	epoch, _ := headerInt(m, deploy.HeaderEpoch)
	if epoch < e.written {
		return nil // written before a recovery replayed it
	}
	data := m.Data
	if m.Header.Get(connectors.ChunkHeader) != "" {
		// One row over the max payload, in chunks.
		whole, complete, err := e.asm.Add(m.Header, m.Data)
		if err != nil || !complete {
			return err
		}
		data = whole
	}
	rec, err := frame.DecodeRecord(data, e.mem)
	if err != nil {
		return err
	}
	e.pending[epoch] = append(e.pending[epoch], rec)
	return nil
}

// switchTo drops what an older generation left uncommitted and expects the
// new one's sinks.
func (e *epochs) switchTo(gen int, m *nats.Msg) {
	for k, recs := range e.pending {
		for _, r := range recs {
			r.Release()
		}
		delete(e.pending, k)
	}
	e.gen, e.ends = gen, 0
	e.frontier = map[string]uint64{}
	if n, ok := headerInt(m, deploy.HeaderSinks); ok {
		e.sinks = int(n)
	}
	if n, ok := headerInt(m, deploy.HeaderSinkWorkers); ok {
		e.sinkWorkers = int(n)
	}
}

// expect makes every generation before gen stale: after an outage the
// client may have missed some of their results, so it writes nothing more
// of them and waits for gen, which replays what it has not written.
func (e *epochs) expect(gen int) {
	if gen <= e.minGen {
		return
	}
	e.minGen = gen
	if gen > e.gen {
		for k, recs := range e.pending {
			for _, r := range recs {
				r.Release()
			}
			delete(e.pending, k)
		}
		e.frontier, e.ends = map[string]uint64{}, 0
	}
}

// ended: every sink worker of the current generation sent its end marker.
func (e *epochs) ended() bool { return e.ends >= e.sinkWorkers }

// commit writes the epochs every sink instance has passed.
func (e *epochs) commit() {
	if len(e.frontier) < e.sinks {
		return
	}
	var low uint64
	first := true
	for _, f := range e.frontier {
		if first || f < low {
			low, first = f, false
		}
	}
	if first {
		return
	}
	e.flush(func(epoch uint64) bool { return epoch < low })
	if low > e.written {
		e.written = low
	}
}

// flushAll writes every epoch held (the query ended).
func (e *epochs) flushAll() {
	var last uint64
	e.flush(func(epoch uint64) bool {
		last = max(last, epoch)
		return true
	})
	if len(e.pending) == 0 && last+1 > e.written {
		e.written = last + 1
	}
}

func (e *epochs) flush(ready func(uint64) bool) {
	var keys []uint64
	for k := range e.pending {
		if ready(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, r := range e.pending[k] {
			if e.err == nil {
				if err := e.out.Write(r); err != nil {
					e.err = fmt.Errorf("writing results: %w", err)
				}
			}
			r.Release()
		}
		delete(e.pending, k)
	}
}
