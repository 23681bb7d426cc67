package rel

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/internal/arrowx"
	"github.com/tierflow/tierflow/operators/functions"
)

// SpillJoin is a join of two bounded inputs (left: input 0, probed; right:
// input 1, built) whose build side stays under a memory limit. While the
// right rows it holds, and the left rows that came before the right side
// ended, take at most Limit bytes it is a StreamTableJoin. Past
// that it becomes a grace hash join: right rows, and then left rows, go to
// SpillPartitions pairs of Arrow IPC files by a hash of their join keys
// (cast to the common key type, so equal keys land in the same pair), and
// when both inputs end each pair is joined on its own, holding about
// 1/SpillPartitions of the right side. Rows with a NULL key are partitioned
// like any other and never match, as in memory.
type SpillJoin struct {
	dataflow.Base
	spec        JoinSpec
	left, right *arrow.Schema
	fns         *functions.Registry
	limit       int64
	stats       *SpillStats

	mem   memory.Allocator
	j     *HashJoin // partitions rows, and joins while nothing spilled
	table []arrow.Record
	// heldBytes: the right rows held and the left rows waiting for
	// them, both past the limit spill (the left rows that came first
	// are as much held as the table).
	heldBytes   int64
	acct        *dataflow.Account // the query's budget (over)
	waiting     []arrow.Record    // left rows that came before the right side ended
	waitingAt   []dataflow.Epoch
	built       bool // in memory: the table is indexed
	rightDone   bool
	leftDone    bool
	held        *dataflow.Capability
	dir         string
	build, prob []*spillFile // nil until the right side spills
	// buildRows and buildNull: the right rows written to the partitions,
	// and whether one had a NULL key (a null-aware join's semantics).
	buildRows int64
	buildNull bool
	batch     int
	// Each side's last batch's epoch, and the left frontier: the pairs go
	// out at epochs these decide (at).
	lastOf [2]lastEpoch
	leftAt dataflow.Epoch
}

// NewSpillJoin makes an instance that keeps the right side under limit
// bytes; stats may be nil.
func NewSpillJoin(spec JoinSpec, left, right *arrow.Schema, fns *functions.Registry, limit int64, stats *SpillStats) *SpillJoin {
	return &SpillJoin{spec: spec, left: left, right: right, fns: fns, limit: limit, stats: stats}
}

func (s *SpillJoin) Open(ctx *dataflow.Context, cap *dataflow.Capability) error {
	s.mem, s.acct = ctx.Allocator(), ctx.Memory()
	j, err := NewHashJoin(s.mem, s.spec, s.left, s.right, s.fns)
	if err != nil {
		return err
	}
	j.PauseWith(pauseOf(ctx))
	s.j = j
	s.held, err = cap.Retain()
	return err
}

func (s *SpillJoin) spilled() bool { return s.build != nil }

func (s *SpillJoin) OnBatch(ctx *dataflow.Context, input int, b dataflow.Batch, _ *dataflow.Capability) error {
	rec := b.Record
	s.lastOf[input].take(b.Epoch)
	if input == 1 {
		if s.spilled() {
			defer rec.Release()
			return s.write(s.build, rec, true)
		}
		s.table = append(s.table, rec)
		s.heldBytes += arrowx.RecordBytes(rec)
		if s.over() {
			return s.spill()
		}
		return nil
	}
	switch {
	case s.spilled():
		defer rec.Release()
		return s.write(s.prob, rec, false)
	case s.built:
		defer rec.Release()
		return s.probe(ctx, s.j, rec, s.at(b.Epoch))
	}
	s.waiting = append(s.waiting, rec)
	s.waitingAt = append(s.waitingAt, b.Epoch)
	if s.heldBytes += arrowx.RecordBytes(rec); s.over() {
		return s.spill()
	}
	return nil
}

// over reports whether the rows held must go to disk (spillsOnce).
func (s *SpillJoin) over() bool {
	used, budget := s.acct.Budget()
	return spillsOnce(s.limit, s.heldBytes, used, budget)
}

// spill moves the right rows held, and the left rows waiting, to the
// partition files; rows of both sides go there from now on.
func (s *SpillJoin) spill() error {
	var err error
	if s.dir, err = os.MkdirTemp("", "tierflow-join-spill-*"); err != nil {
		return fmt.Errorf("spill: %w", err)
	}
	open := func(side string, schema *arrow.Schema) ([]*spillFile, error) {
		var fs []*spillFile
		for i := range SpillPartitions {
			p, err := createSpillFile(s.dir, fmt.Sprintf("%s/%s%d.arrow", s.dir, side, i), schema, s.mem)
			if err != nil {
				return fs, err
			}
			fs = append(fs, p)
		}
		return fs, nil
	}
	if s.build, err = open("build", s.right); err != nil {
		return err
	}
	if s.prob, err = open("probe", s.left); err != nil {
		return err
	}
	if s.stats != nil {
		s.stats.Spills.Add(1)
	}
	table, waiting := s.table, s.waiting
	s.table, s.waiting, s.waitingAt, s.heldBytes = nil, nil, nil, 0
	defer releaseAll(table)
	defer releaseAll(waiting)
	for _, r := range table {
		if err := s.write(s.build, r, true); err != nil {
			return err
		}
	}
	for _, r := range waiting {
		if err := s.write(s.prob, r, false); err != nil {
			return err
		}
	}
	return nil
}

// write appends rec's rows to the files of their keys' partitions.
func (s *SpillJoin) write(files []*spillFile, rec arrow.Record, right bool) error {
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	dst := make([]uint32, n)
	nulls, err := s.j.partition(rec, right, SpillPartitions, dst)
	if err != nil {
		return err
	}
	if right {
		s.buildRows += int64(n)
		s.buildNull = s.buildNull || nulls
	}
	if err := writeSplit(s.mem, files, rec, dst); err != nil {
		return err
	}
	if s.stats != nil {
		s.stats.Rows.Add(int64(n))
	}
	return nil
}

func (s *SpillJoin) probe(ctx *dataflow.Context, j *HashJoin, rec arrow.Record, at dataflow.Epoch) error {
	return j.ProbeEach(rec, func(out arrow.Record) error { return s.emitAt(ctx, at, out) })
}

// at is the epoch a left row of epoch e pairs at in memory: e, or the
// right side's last batch's if later (the table it met is the whole right
// side). The pairs joined when both sides have ended (spilled, or a build
// side's rows) go out at the later of the two sides' last epochs (atEnd).
// Each is decided by the data, never by the epoch the join held when the
// frontier last moved: a recovered query's replay, its frontier skipping
// to the end, sent those at earlier epochs than the first run and the
// client dropped them as written (TestSpillJoinRowsGoOutAtTheirBatchesEpoch).
func (s *SpillJoin) at(e dataflow.Epoch) dataflow.Epoch {
	if r := s.lastOf[1]; r.ok {
		e = max(e, r.e)
	}
	return max(e, s.held.Epoch())
}

func (s *SpillJoin) atEnd() dataflow.Epoch {
	e := s.held.Epoch()
	for _, l := range s.lastOf {
		if l.ok {
			e = max(e, l.e)
		}
	}
	return e
}

// follow moves held with the left frontier as far as every pair still to
// go out allows: while rows may wait for the right side, to its last
// epoch so far; once it has ended, to the later of the two sides' last
// epochs so far.
func (s *SpillJoin) follow() error {
	bound, ok := s.lastOf[1].e, s.lastOf[1].ok
	if s.rightDone {
		l := s.lastOf[0]
		bound, ok = max(bound, l.e), ok || l.ok
	}
	if e := min(s.leftAt, bound); ok && e > s.held.Epoch() {
		return s.held.Downgrade(e)
	}
	return nil
}

func (s *SpillJoin) emitAt(ctx *dataflow.Context, at dataflow.Epoch, out arrow.Record) error {
	c, err := s.held.Delayed(at)
	if err != nil {
		out.Release()
		return err
	}
	defer c.Drop()
	return ctx.Emit(0, c, out)
}

// OnFrontier builds the table in memory when the right side ends without
// having spilled, and joins the partitions when both sides have ended after
// it did.
func (s *SpillJoin) OnFrontier(ctx *dataflow.Context, input int, f dataflow.Epoch) error {
	if f != dataflow.Closed {
		if input == 0 {
			s.leftAt = f
			return s.follow()
		}
		return nil
	}
	if input == 1 {
		s.rightDone = true
	} else {
		s.leftDone = true
	}
	if input == 1 && !s.spilled() {
		err := s.j.Build(s.table, s.right)
		releaseAll(s.table)
		s.table, s.built = nil, true
		if err != nil {
			return err
		}
		waiting, waitingAt := s.waiting, s.waitingAt
		s.waiting, s.waitingAt = nil, nil
		for i, r := range waiting {
			err := s.probe(ctx, s.j, r, s.at(waitingAt[i]))
			r.Release()
			if err != nil {
				releaseAll(waiting[i+1:])
				return err
			}
		}
	}
	if !s.rightDone || !s.leftDone {
		return s.follow()
	}
	if s.spilled() {
		if err := s.joinPartitions(ctx); err != nil {
			return err
		}
	} else if err := s.emitBuild(ctx, s.j); err != nil {
		return err
	}
	s.held.Drop()
	return nil
}

// emitBuild outputs a BuildSemi or BuildAnti join's build rows (of one
// partition, or all) once the probe side has been seen.
func (s *SpillJoin) emitBuild(ctx *dataflow.Context, j *HashJoin) error {
	if !s.spec.Kind.buildOutput() {
		return nil
	}
	recs, err := j.EmitBuild(max(s.batch, 4096))
	if err != nil {
		return err
	}
	for i, r := range recs {
		if err := s.emitAt(ctx, s.atEnd(), r); err != nil {
			releaseAll(recs[i+1:])
			return err
		}
	}
	return nil
}

// joinPartitions joins each pair of files in turn.
func (s *SpillJoin) joinPartitions(ctx *dataflow.Context) error {
	for _, fs := range [][]*spillFile{s.build, s.prob} {
		for _, p := range fs {
			if err := p.finish(); err != nil {
				return err
			}
		}
	}
	for i := range SpillPartitions {
		j, err := NewHashJoin(s.mem, s.spec, s.left, s.right, s.fns)
		if err != nil {
			return err
		}
		j.PauseWith(pauseOf(ctx))
		j.SetWholeBuild(s.buildRows == 0, s.buildNull)
		err = s.joinPartition(ctx, j, s.build[i].f, s.prob[i].f)
		if err == nil {
			err = s.emitBuild(ctx, j)
		}
		j.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *SpillJoin) joinPartition(ctx *dataflow.Context, j *HashJoin, build, probe *os.File) error {
	var table []arrow.Record
	err := readSpill(s.mem, build, func(r arrow.Record) error {
		r.Retain()
		table = append(table, r)
		return nil
	})
	if err == nil {
		err = j.Build(table, s.right)
	}
	releaseAll(table)
	if err != nil {
		return err
	}
	return readSpill(s.mem, probe, func(r arrow.Record) error { return s.probe(ctx, j, r, s.atEnd()) })
}

// readSpill calls each with every record of a spill file, from its start.
func readSpill(mem memory.Allocator, f *os.File, each func(arrow.Record) error) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("spill: %w", err)
	}
	r, err := ipc.NewReader(bufio.NewReaderSize(f, spillBuffer), ipc.WithAllocator(mem))
	if err != nil {
		return fmt.Errorf("spill: %w", err)
	}
	defer r.Release()
	for r.Next() {
		if err := each(r.Record()); err != nil {
			return err
		}
	}
	if err := r.Err(); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("spill: %w", err)
	}
	return nil
}

func (s *SpillJoin) Close(*dataflow.Context) error {
	if s.held != nil {
		s.held.Drop()
	}
	releaseAll(s.table)
	releaseAll(s.waiting)
	s.table, s.waiting = nil, nil
	if s.j != nil {
		s.j.Release()
	}
	for _, fs := range [][]*spillFile{s.build, s.prob} {
		for _, p := range fs {
			p.f.Close()
		}
	}
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
	return nil
}

// partition sets dst to each row's partition of parts by a hash of its join
// keys (right: rec is a right side row), after the casts to the common key
// type, so that a left and a right row with equal keys share a partition.
// It says whether some row's key had a NULL.
func (j *HashJoin) partition(rec arrow.Record, right bool, parts int, dst []uint32) (bool, error) {
	evs := j.leftEv
	if right {
		evs = j.rightEv
	}
	keys, err := evalKeys(j.fctx, evs, rec)
	if err != nil {
		return false, err
	}
	defer releaseArrays(keys)
	nulls := false
	for _, k := range keys {
		nulls = nulls || k.NullN() > 0
	}
	fs := make([]arrow.Field, len(keys))
	cols := make([]int, len(keys))
	for i, k := range keys {
		fs[i], cols[i] = arrow.Field{Name: fmt.Sprint("k", i), Type: k.DataType(), Nullable: true}, i
	}
	kr := array.NewRecord(arrow.NewSchema(fs, nil), keys, rec.NumRows())
	defer kr.Release()
	return nulls, dataflow.HashColumns(cols...)(kr, parts, dst)
}
