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
	// held, for a join that outputs build rows (BuildSemi, BuildAnti):
	// where they go out once the probe side has ended.
	held      *dataflow.Capability
	probeDone bool
	batch     int
}

// NewStreamTableJoin makes a join instance; stats may be nil.
func NewStreamTableJoin(spec JoinSpec, left, right *arrow.Schema, fns *functions.Registry, stats *Stats) *StreamTableJoin {
	return &StreamTableJoin{spec: spec, left: left, right: right, fns: fns, stats: stats}
}

func (s *StreamTableJoin) Open(ctx *dataflow.Context, cap *dataflow.Capability) error {
	j, err := NewHashJoin(ctx.Allocator(), s.spec, s.left, s.right, s.fns)
	s.j = j
	if err == nil {
		j.PauseWith(pauseOf(ctx))
	}
	if err == nil && s.spec.Kind.buildOutput() {
		s.held, err = cap.Retain()
	}
	return err
}

// WithBatch sets the rows of the records a build-side semi or anti join
// emits at its end.
func (s *StreamTableJoin) WithBatch(n int) *StreamTableJoin {
	s.batch = n
	return s
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
// batches that waited for it. A join that outputs build rows emits them
// when both inputs have ended.
func (s *StreamTableJoin) OnFrontier(ctx *dataflow.Context, input int, f dataflow.Epoch) error {
	if input == 0 && f == dataflow.Closed {
		s.probeDone = true
	}
	if s.held != nil && s.probeDone && s.j.built {
		defer func() {
			s.held.Drop()
			s.held = nil
		}()
		recs, err := s.j.EmitBuild(max(s.batch, 4096))
		if err != nil {
			return err
		}
		for i, r := range recs {
			if err := ctx.Emit(0, s.held, r); err != nil {
				releaseAll(recs[i+1:])
				return err
			}
		}
		return nil
	}
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
	if s.held != nil && s.probeDone {
		return s.OnFrontier(ctx, 0, dataflow.Closed) // the probe side ended first
	}
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
	if s.held != nil {
		s.held.Drop()
	}
	s.release()
	if s.j != nil {
		s.j.Release()
	}
	return nil
}
