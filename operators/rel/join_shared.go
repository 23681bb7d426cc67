package rel

import (
	"sync/atomic"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/functions"
)

// A hash join whose probe side runs on every core: one JoinBuild instance
// reads the build (right) side and indexes it once, and the JoinProbe
// instances, each fed a share of the probe (left) batches, probe that one
// table at the same time (HashJoin.Share: read-only, each with its own
// scratch). The table's readiness travels as dataflow progress, not as a
// lock: JoinBuild holds its output back until the table is built, and each
// JoinProbe's second input is JoinBuild's output, so when that input's
// frontier closes the table is there; probe batches that come before wait.
// A join that outputs build rows (BuildSemi, BuildAnti) ends with one
// JoinEmit instance, whose input closes once every probe instance has
// marked its rows.
//
//	build side ──> JoinBuild ──(broadcast: progress only)──┐
//	probe side ──(a share each)──> JoinProbe x P <─────────┘ ──> [JoinEmit]

// SharedBuild is the table one JoinBuild makes for its JoinProbes (and a
// JoinEmit). Every instance that holds it lets go in Close (done); the last
// frees the table.
type SharedBuild struct {
	users atomic.Int32
	j     *HashJoin // set by JoinBuild before its output closes
	stats *JoinStats
}

// JoinStats count what a shared join did, for EXPLAIN ANALYZE.
type JoinStats struct {
	BuildRows, ProbeRows, OutRows atomic.Int64
}

// NewSharedBuild is the table of a join whose build, probes and emitter are
// users instances in all.
func NewSharedBuild(users int, stats *JoinStats) *SharedBuild {
	s := &SharedBuild{stats: stats}
	s.users.Store(int32(users))
	return s
}

func (s *SharedBuild) done() {
	if s.users.Add(-1) == 0 && s.j != nil {
		s.j.Release()
		s.j = nil
	}
}

// JoinBuild reads a join's build side (its one input) and builds the
// shared table when that input ends. It emits nothing.
type JoinBuild struct {
	dataflow.Base
	spec        JoinSpec
	left, right *arrow.Schema
	fns         *functions.Registry
	shared      *SharedBuild
	recs        []arrow.Record
	held        *dataflow.Capability
}

// NewJoinBuild makes the build instance of a shared join.
func NewJoinBuild(spec JoinSpec, left, right *arrow.Schema, fns *functions.Registry, shared *SharedBuild) *JoinBuild {
	return &JoinBuild{spec: spec, left: left, right: right, fns: fns, shared: shared}
}

// Open holds the output back until the table is built.
func (b *JoinBuild) Open(_ *dataflow.Context, cap *dataflow.Capability) error {
	var err error
	b.held, err = cap.Retain()
	return err
}

func (b *JoinBuild) OnBatch(_ *dataflow.Context, _ int, batch dataflow.Batch, _ *dataflow.Capability) error {
	b.recs = append(b.recs, batch.Record)
	return nil
}

func (b *JoinBuild) OnFrontier(ctx *dataflow.Context, _ int, f dataflow.Epoch) error {
	if f != dataflow.Closed || b.held == nil {
		return nil
	}
	j, err := NewHashJoin(ctx.Allocator(), b.spec, b.left, b.right, b.fns)
	if err != nil {
		return err
	}
	err = j.Build(b.recs, b.right)
	releaseAll(b.recs)
	b.recs = nil
	if err != nil {
		j.Release()
		return err
	}
	if st := b.shared.stats; st != nil {
		st.BuildRows.Add(int64(j.Rows()))
	}
	b.shared.j = j
	b.held.Drop() // the table is there: let the probes know
	b.held = nil
	return nil
}

func (b *JoinBuild) Close(*dataflow.Context) error {
	releaseAll(b.recs)
	b.recs = nil
	if b.held != nil {
		b.held.Drop()
	}
	b.shared.done()
	return nil
}

// JoinProbe probes the shared table with its share of the probe side (input
// 0); input 1 is JoinBuild's output, which carries no rows: its frontier
// closing says the table is built.
type JoinProbe struct {
	dataflow.Base
	spec        JoinSpec
	left, right *arrow.Schema
	fns         *functions.Registry
	shared      *SharedBuild
	j           *HashJoin
	waiting     []dataflow.Batch
	waitCaps    []*dataflow.Capability
}

// NewJoinProbe makes a probe instance of a shared join.
func NewJoinProbe(spec JoinSpec, left, right *arrow.Schema, fns *functions.Registry, shared *SharedBuild) *JoinProbe {
	return &JoinProbe{spec: spec, left: left, right: right, fns: fns, shared: shared}
}

func (p *JoinProbe) Open(ctx *dataflow.Context, _ *dataflow.Capability) error {
	j, err := NewHashJoin(ctx.Allocator(), p.spec, p.left, p.right, p.fns)
	p.j = j
	if err == nil {
		j.PauseWith(pauseOf(ctx))
	}
	return err
}

func (p *JoinProbe) OnBatch(ctx *dataflow.Context, input int, b dataflow.Batch, cap *dataflow.Capability) error {
	if input == 1 {
		b.Record.Release()
		return nil
	}
	if !p.j.built {
		c, err := cap.Retain()
		if err != nil {
			b.Record.Release()
			return err
		}
		p.waiting = append(p.waiting, b)
		p.waitCaps = append(p.waitCaps, c)
		return nil
	}
	return p.probe(ctx, b.Record, b.Ingest, cap)
}

func (p *JoinProbe) probe(ctx *dataflow.Context, rec arrow.Record, ingest int64, cap *dataflow.Capability) error {
	st := p.shared.stats
	if st != nil {
		st.ProbeRows.Add(rec.NumRows())
	}
	defer rec.Release()
	return p.j.ProbeEach(rec, func(out arrow.Record) error {
		if st != nil {
			st.OutRows.Add(out.NumRows())
		}
		return ctx.EmitIngest(0, cap, out, ingest)
	})
}

// OnFrontier takes the table once it is built and probes the batches that
// waited for it.
func (p *JoinProbe) OnFrontier(ctx *dataflow.Context, input int, f dataflow.Epoch) error {
	if input != 1 || f != dataflow.Closed || p.j.built || p.shared.j == nil {
		return nil
	}
	p.j.Share(p.shared.j)
	waiting, caps := p.waiting, p.waitCaps
	p.waiting, p.waitCaps = nil, nil
	for i, b := range waiting {
		err := p.probe(ctx, b.Record, b.Ingest, caps[i])
		caps[i].Drop()
		if err != nil {
			for k := i + 1; k < len(waiting); k++ {
				waiting[k].Record.Release()
				caps[k].Drop()
			}
			return err
		}
	}
	return nil
}

func (p *JoinProbe) Close(*dataflow.Context) error {
	for i, b := range p.waiting {
		b.Record.Release()
		p.waitCaps[i].Drop()
	}
	p.waiting, p.waitCaps = nil, nil
	if p.j != nil {
		p.j.Release()
	}
	p.shared.done()
	return nil
}

// JoinEmit outputs a BuildSemi or BuildAnti join's build rows once every
// probe instance is done (its input, the probes' output, closes).
type JoinEmit struct {
	dataflow.Base
	shared *SharedBuild
	batch  int
	held   *dataflow.Capability
}

// NewJoinEmit makes the emitter of a shared join; batch bounds its records'
// rows.
func NewJoinEmit(shared *SharedBuild, batch int) *JoinEmit {
	return &JoinEmit{shared: shared, batch: max(batch, 1)}
}

func (e *JoinEmit) Open(_ *dataflow.Context, cap *dataflow.Capability) error {
	var err error
	e.held, err = cap.Retain()
	return err
}

func (e *JoinEmit) OnFrontier(ctx *dataflow.Context, _ int, f dataflow.Epoch) error {
	if f != dataflow.Closed || e.held == nil {
		return nil
	}
	defer func() {
		e.held.Drop()
		e.held = nil
	}()
	if e.shared.j == nil {
		return nil
	}
	recs, err := e.shared.j.EmitBuild(e.batch)
	if err != nil {
		return err
	}
	for i, r := range recs {
		if st := e.shared.stats; st != nil {
			st.OutRows.Add(r.NumRows())
		}
		if err := ctx.Emit(0, e.held, r); err != nil {
			releaseAll(recs[i+1:])
			return err
		}
	}
	return nil
}

func (e *JoinEmit) Close(*dataflow.Context) error {
	if e.held != nil {
		e.held.Drop()
	}
	e.shared.done()
	return nil
}
