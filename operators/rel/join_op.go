package rel

import (
	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/functions"
)

// StreamTableJoin joins a stream (input 0) with a bounded table (input 1): the
// table is read completely and indexed when its input closes; stream batches
// arriving before that wait, under a retained capability, and are then probed in
// arrival order. Run it with parallelism 1, or with the table broadcast.
type StreamTableJoin struct {
	dataflow.Base
	spec        JoinSpec
	left, right *arrow.Schema
	fns         *functions.Registry
	j           *HashJoin
	table       []arrow.Record
	waiting     []dataflow.Batch
	waitCaps    []*dataflow.Capability
	stats       *Stats
}

// NewStreamTableJoin makes a join instance; stats may be nil.
func NewStreamTableJoin(spec JoinSpec, left, right *arrow.Schema, fns *functions.Registry, stats *Stats) *StreamTableJoin {
	return &StreamTableJoin{spec: spec, left: left, right: right, fns: fns, stats: stats}
}

func (s *StreamTableJoin) Open(ctx *dataflow.Context, _ *dataflow.Capability) error {
	j, err := NewHashJoin(ctx.Allocator(), s.spec, s.left, s.right, s.fns)
	s.j = j
	return err
}

func (s *StreamTableJoin) OnBatch(ctx *dataflow.Context, input int, b dataflow.Batch, cap *dataflow.Capability) error {
	if input == 1 {
		s.table = append(s.table, b.Record)
		return nil
	}
	if !s.j.built {
		c, err := cap.Retain()
		if err != nil {
			b.Record.Release()
			return err
		}
		s.waiting = append(s.waiting, b)
		s.waitCaps = append(s.waitCaps, c)
		return nil
	}
	return s.probe(ctx, b.Record, b.Ingest, cap)
}

func (s *StreamTableJoin) probe(ctx *dataflow.Context, rec arrow.Record, ingest int64, cap *dataflow.Capability) error {
	if s.stats != nil {
		s.stats.RowsIn.Add(rec.NumRows())
	}
	defer rec.Release()
	return s.j.ProbeEach(rec, func(out arrow.Record) error {
		if s.stats != nil {
			s.stats.RowsOut.Add(out.NumRows())
		}
		// A batch that waited for the table keeps its own ingest time.
		return ctx.EmitIngest(0, cap, out, ingest)
	})
}

// OnFrontier builds the table once its input is complete and drains the stream
// batches that waited for it.
func (s *StreamTableJoin) OnFrontier(ctx *dataflow.Context, input int, f dataflow.Epoch) error {
	if input != 1 || f != dataflow.Closed || s.j.built {
		return nil
	}
	err := s.j.Build(s.table, s.right)
	for _, r := range s.table {
		r.Release()
	}
	s.table = nil
	if err != nil {
		return err
	}
	for i, b := range s.waiting {
		err = s.probe(ctx, b.Record, b.Ingest, s.waitCaps[i])
		s.waitCaps[i].Drop()
		s.waiting[i].Record = nil
		if err != nil {
			s.release()
			return err
		}
	}
	s.waiting, s.waitCaps = nil, nil
	return nil
}

func (s *StreamTableJoin) release() {
	for i, b := range s.waiting {
		if b.Record != nil {
			b.Record.Release()
		}
		s.waitCaps[i].Drop()
	}
	s.waiting, s.waitCaps = nil, nil
	for _, r := range s.table {
		r.Release()
	}
	s.table = nil
}

func (s *StreamTableJoin) Close(*dataflow.Context) error {
	s.release()
	if s.j != nil {
		s.j.Release()
	}
	return nil
}
