package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/eval"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/operators/rel"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// ErrUnsupported marks plans the executor cannot run (yet). Its text names
// no executor: a cluster's workers build their parts with this one too, and
// the message reaches the user from there.
var ErrUnsupported = errors.New("not supported")

// Options configure a local run.
type Options struct {
	// Allocator for all records (default memory.DefaultAllocator).
	Allocator memory.Allocator
	// Output receives a plain SELECT's rows (INSERT INTO writes to its sink).
	Output sinks.Writer
	// Stdout is where a STDOUT sink writes (default os.Stdout).
	Stdout io.Writer
	// BaseDir resolves relative file paths (the script's directory).
	BaseDir string
	// OnError is the policy for rows that do not fit their schema.
	OnError sources.OnError
	// MaxDelay is the allowed out-of-orderness of event time in streams.
	MaxDelay time.Duration
	// Clock is the processing clock PROCTIME() reads (default time.Now): a
	// test sets one that steps as it is read, so a processing-time window
	// answers the same every run.
	Clock func() time.Time
	// BatchSize is the rows per source batch (default 4096).
	BatchSize int
	// Functions implements the expressions (default functions.Builtins()).
	Functions *functions.Registry
	// Lateral builds the operator of an ML model call (CROSS JOIN LATERAL
	// m(args) AS c(...)) over input rows of schema in; it returns a factory of
	// operator instances and the output schema (the input's columns, then the
	// model's). The CLI wires operators/ml with runtime/onnx sessions here,
	// since operators may not import runtime. Nil: such plans are
	// ErrUnsupported.
	Lateral func(n *logical.LateralModel, in *arrow.Schema) (func() (dataflow.Operator, error), *arrow.Schema, error)
	// Stream builds the source of a stream the executor cannot read itself
	// (FROM NATS, FROM JETSTREAM): a factory of source instances emitting
	// rows of schema, epochs following et, rows read and bad rows counted
	// in report. schema holds the declared columns the query reads (and
	// the event time), in declared order: cols says where each is among
	// the stream's declared columns (nil: schema is all of them), for a
	// format that finds fields by position (CSV). The CLI and the workers
	// wire runtime/connectors here, since operators may not import NATS.
	// Nil: such streams are ErrUnsupported.
	Stream func(s *catalog.Stream, schema *arrow.Schema, cols []int, et sources.EventTime, report *sources.Report) (func() (dataflow.Operator, error), error)
	// Sink opens the writer of a sink the executor cannot open itself (TO
	// NATS, TO JETSTREAM) for rows of schema. The executor closes it after
	// the run, which flushes what is still unacknowledged. Nil: such sinks
	// are ErrUnsupported.
	Sink func(s *catalog.Sink, schema *arrow.Schema) (sinks.Writer, error)
	// Pace, when set, replays each file stream as it says (EXPLAIN ANALYZE
	// feeds a query at its plan's rates, for a bounded time); tables and
	// external streams are read as they come.
	Pace func(s *catalog.Stream) sources.Pacing
	// MeasureLabels follows each model call whose catalog entry names a
	// label column (Model.Labels) present in its input with a pass-through
	// operator that counts correct predictions (rel.LabelMeter, reported in
	// the instance stats): EXPLAIN ANALYZE's measured accuracy.
	MeasureLabels bool
	// Confine, when set, vets every file the query reads or writes (streams
	// and tables FROM FILE, sinks TO FILE) after its path is resolved: it
	// returns the path to open, or why the file may not be used. A worker
	// confines a submitted query to its data roots; a local run sets none.
	Confine func(path string) (string, error)
	// ConfineWrite, when set, vets the files the query writes (sinks TO
	// FILE) in Confine's place: a shared worker lets its users read the
	// same data but write only their own (security.Roots.ConfineOwner).
	ConfineWrite func(path string) (string, error)
	// Parallelism runs each GROUP BY over plain columns as this many
	// instances, rows exchanged by a hash of the group keys (data-parallel),
	// and any other GROUP BY it can split in two phases (twophase.go) on
	// this many cores; 0 or 1 runs one instance. AllCores splits a GROUP
	// BY of few groups (no key, or string keys) in two phases on every core
	// and runs the others as one instance: what a local run does by
	// default. (A cluster's graph must have the same shape on every
	// machine, so it never depends on the cores of one.)
	Parallelism int
	// MemoryLimit bounds the state of each GROUP BY without a window, in
	// bytes (estimated): past it the groups' partial states go to disk,
	// partitioned by key, and are combined a partition at a time when the
	// input ends (rel.SpillAggregate). It bounds the table of a join of two
	// tables the same way: past it both sides go to disk by a hash of the
	// join keys and are joined a partition at a time (rel.SpillJoin). 0: no
	// limit. Aggregations it cannot split (DISTINCT, other functions),
	// windows and joins of a stream are not bounded.
	MemoryLimit int64
	// Memory, when set, is the run's memory budget: every operator's state
	// counts against it (dataflow.Config.Memory), and Allocator should be
	// its allocator (Memory.Allocator). Nil: nothing is counted.
	Memory *dataflow.Memory
	// Notices, when set, hears about sources that have received nothing
	// yet sources.WaitNotice after they opened, a line each ("-- waiting
	// 3s on stream shelf, NATS subject ..."): a run on a subject nothing
	// publishes to says what it waits on instead of hanging in silence.
	Notices io.Writer
	// StateTTL forgets the state of a key no row has updated for this long
	// in event time (Flink's table.exec.state.ttl): a stream top-N's keys.
	// 0 keeps them as long as the query runs.
	StateTTL time.Duration
	// Context, when set, cancels what Build itself runs: a query's
	// uncorrelated subqueries, answered before the query is built (nil:
	// they run to their end).
	Context context.Context
	// ShapeOnly builds the graph's shape and runs nothing (a coordinator
	// placing a query): each uncorrelated subquery stands for an answer
	// of its type, which shapes the graph as its real answer would.
	ShapeOnly bool
	// Relayed says that the graph's edges may cross a relay (a cluster's
	// workers over NATS), which carries plain columns: no scan then passes
	// a string column on as its dictionary codes (codes.go), which only
	// operators in the same process read.
	Relayed bool
}

// positioned matches a message that starts with FILE:LINE:COL:.
var positioned = regexp.MustCompile(`^\S+:\d+:\d+: `)

// AllCores is the Parallelism of a local run that uses every core where it
// pays (see Options.Parallelism).
const AllCores = -1

// Stats report a run.
type Stats struct {
	RowsRead    int64
	RowsWritten int64
	LateRows    int64
	BadRows     int64
	// Dropped is every row or message the query dropped, by reason
	// (dataflow.DropReasons): LateRows are its "late", BadRows its
	// "malformed", and the rest come from windows (NULL event times) and
	// sources (slow consumers, oversized messages).
	Dropped  dataflow.DropCounts
	Problems []string // first bad-row messages (file:row: why)
	// Spills counts the times an aggregation wrote its state to disk
	// (Options.MemoryLimit), SpilledRows the partial rows it wrote.
	Spills, SpilledRows int64
	// JoinSpills counts the joins whose table went to disk
	// (Options.MemoryLimit), JoinSpilledRows the rows of both sides written.
	JoinSpills, JoinSpilledRows int64
	// SortRuns counts the sorted runs an ORDER BY wrote to disk
	// (Options.MemoryLimit, or its query's budget a third full),
	// SortSpilledRows their rows.
	SortRuns, SortSpilledRows int64
	// WindowSpills counts the OVERs whose rows went to disk by partition
	// (Options.MemoryLimit, or its query's budget a third full),
	// WindowSpilledRows the rows written.
	WindowSpills, WindowSpilledRows int64
}

// Query is a built dataflow ready to run.
type Query struct {
	graph   *dataflow.Graph
	opts    Options
	report  *sources.Report
	stats   []*rel.Stats
	spills  *rel.SpillStats
	joins   *rel.SpillStats // spilling joins
	sorts   *rel.SpillStats // sorts' runs on disk
	windows *rel.SpillStats // OVERs' partitions on disk
	written atomic.Int64
	closers []io.Closer
	writers []sinks.Writer
}

type builder struct {
	// bounds of the filter right over a scan, which a Parquet scan uses to
	// skip row groups (see prune.go)
	bounds map[*logical.Scan][]sources.Bound
	// codes: the string columns of a scan (its output's indexes) that a
	// GROUP BY over it reads only as keys (see codes.go)
	codes      map[*logical.Scan][]int
	q          *Query
	g          *dataflow.Graph
	opts       Options
	finalLimit *logical.Limit
	// par: the instances of the operators built with several (a join's
	// probes), so that what reads them knows their parallelism.
	par map[int]int
	// rankLimits: the rows per key the filter above each stream top-N lets
	// through (rank_stream.go).
	rankLimits map[*logical.WindowFuncs]int64
	// joinFilters: the filter right above each join: an inner join of two
	// streams keeps state under its time bounds as under ON's, a table
	// join leaves out the pairs it drops (rel.JoinSpec.Prune).
	joinFilters map[*logical.Join]expr.Expr
	// common: the aggregations built so far by logical.SubtreeKey; an
	// equal one elsewhere in the plan reads the first's operator.
	common map[string]builtNode
}

// builtNode is a subtree's last operator and its output schema.
type builtNode struct {
	op     int
	schema *arrow.Schema
}

// Build translates plan into a dataflow.
func Build(plan *logical.Plan, opts Options) (*Query, error) {
	if opts.Allocator == nil {
		opts.Allocator = memory.DefaultAllocator
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 4096
	}
	if opts.Functions == nil {
		opts.Functions = functions.Builtins()
	}
	if opts.Clock != nil {
		opts.Functions = opts.Functions.WithClock(opts.Clock)
	}
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	root, err := resolveSubqueries(plan.Root, opts)
	if err != nil {
		return nil, err
	}
	plan = &logical.Plan{Root: root, Objectives: plan.Objectives}
	q := &Query{graph: &dataflow.Graph{Query: "local"}, opts: opts, report: &sources.Report{}, spills: &rel.SpillStats{}, joins: &rel.SpillStats{}, sorts: &rel.SpillStats{}, windows: &rel.SpillStats{}}
	if err := checkUpdating(root); err != nil {
		return nil, err
	}
	b := &builder{q: q, g: q.graph, opts: opts, finalLimit: finalLimit(plan.Root), par: map[int]int{}, rankLimits: map[*logical.WindowFuncs]int64{}, joinFilters: map[*logical.Join]expr.Expr{}, common: map[string]builtNode{}}
	if _, _, err := b.node(plan.Root); err != nil {
		q.closeFiles()
		return nil, err
	}
	return q, nil
}

// finalLimit is the LIMIT that bounds the query's result, if any: under
// nothing but the sink and projections.
func finalLimit(n logical.Node) *logical.Limit {
	for {
		switch x := n.(type) {
		case *logical.Limit:
			return x
		case *logical.Sink:
			n = x.Input
		case *logical.Project:
			n = x.Input
		default:
			return nil
		}
	}
}

// windowed reports whether n's rows come from an aggregation by window, which
// emits each window at the epoch of its end: ORDER BY and LIMIT above it then
// apply to each window (per epoch). Anywhere else they apply to the whole
// result.
func windowed(n logical.Node) bool {
	for {
		switch x := n.(type) {
		case *logical.Aggregate:
			return x.Window != nil
		case *logical.Project:
			n = x.Input
		case *logical.Filter:
			n = x.Input
		case *logical.Sort:
			n = x.Input
		case *logical.Limit:
			n = x.Input
		case *logical.WindowFuncs:
			n = x.Input
		default:
			return false
		}
	}
}

// Graph is the dataflow the plan became.
func (q *Query) Graph() *dataflow.Graph { return q.graph }

// Run executes the query until its sources end or ctx is cancelled; windows
// that closed before a cancellation have been written.
func (q *Query) Run(ctx context.Context) (Stats, error) {
	if q.opts.Notices != nil {
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			WatchSources(stop, q.report, q.opts.Notices)
		}()
		defer func() { close(stop); <-done }()
	}
	err := dataflow.Run(ctx, q.graph, dataflow.Config{Allocator: q.opts.Allocator, Memory: q.opts.Memory})
	for _, w := range q.writers {
		if cerr := sinks.Finish(w, err); cerr != nil && err == nil {
			err = cerr
		}
	}
	q.closeFiles()
	return q.Stats(), err
}

// Silent lists what the query's sources are waiting on: those that have
// received nothing for at least after (sources.Report.Silent).
func (q *Query) Silent(after time.Duration) []sources.Silence {
	return q.report.Silent(time.Now(), after)
}

// WatchSources says on w, once per source, when a source of report has
// received nothing yet sources.WaitNotice after it opened, until stop
// closes. A source that did receive rows and then fell quiet is not news
// (a window's worth of silence is normal); the REPL's status line shows
// any silence as it lasts.
func WatchSources(stop <-chan struct{}, report *sources.Report, w io.Writer) {
	said := map[string]bool{}
	tick := time.NewTicker(sources.WaitNotice / 6)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			for _, s := range report.Silent(now, sources.WaitNotice) {
				if !s.Ever && !said[s.What] {
					said[s.What] = true
					fmt.Fprintf(w, "-- %s\n", s.Text())
				}
			}
		}
	}
}

// TakePositions returns where the query's replayable streams stood as their
// sources took batches since it last ran (sources.Report.Position).
func (q *Query) TakePositions() map[string]sources.Positions { return q.report.TakePositions() }

// DropsFrom has the query ignore what it drops of rows at epochs below e
// (dataflow.Drops.From): a re-deployed part resumed at e.
func (q *Query) DropsFrom(e dataflow.Epoch) { q.report.Drops.From(e) }

// DropsByEpoch is what the query dropped of rows whose epoch is known, by
// epoch (dataflow.Drops.ByEpoch).
func (q *Query) DropsByEpoch() map[dataflow.Epoch]dataflow.DropCounts {
	return q.report.Drops.ByEpoch()
}

// Stats are the query's counts so far: rows read and written, late rows
// dropped, bad rows skipped. A cluster worker, which runs its part of the
// graph without Run, reports them from here.
func (q *Query) Stats() Stats {
	st := Stats{RowsRead: q.report.Rows.Load(), RowsWritten: q.written.Load(), BadRows: q.report.BadRows.Load(), Problems: q.report.Messages(),
		Spills: q.spills.Spills.Load(), SpilledRows: q.spills.Rows.Load(),
		JoinSpills: q.joins.Spills.Load(), JoinSpilledRows: q.joins.Rows.Load(),
		SortRuns: q.sorts.Spills.Load(), SortSpilledRows: q.sorts.Rows.Load(),
		WindowSpills: q.windows.Spills.Load(), WindowSpilledRows: q.windows.Rows.Load()}
	var nulls int64
	for _, s := range q.stats {
		st.LateRows += s.Late.Load()
		nulls += s.NullTimes.Load()
	}
	st.Dropped = q.report.Drops.Snapshot().Merge(dataflow.DropCounts{
		dataflow.DropLate: st.LateRows, dataflow.DropMalformed: st.BadRows, dataflow.DropNullEventTime: nulls})
	return st
}

func (q *Query) closeFiles() {
	for _, c := range q.closers {
		c.Close()
	}
	q.closers = nil
}

func (b *builder) add(name string, inputs int, mk func() (dataflow.Operator, error)) int {
	return b.g.AddOperator(dataflow.OperatorSpec{Name: name, Inputs: inputs, Outputs: 1,
		New: func(dataflow.Instance) (dataflow.Operator, error) { return mk() }})
}

// node builds n and returns its operator and output schema.
func (b *builder) node(n logical.Node) (int, *arrow.Schema, error) {
	at := func(err error) error {
		p := n.Position()
		if p.Line > 0 && !positioned.MatchString(err.Error()) {
			return fmt.Errorf("%s: %w", p, err)
		}
		// An error that names its own cause's position (a model file's
		// catalog entry) is printed there, once.
		return err
	}
	if a, ok := n.(*logical.Aggregate); ok {
		// An aggregation the plan holds twice (q5's two HOP counts of
		// the bid stream) runs once, its rows going to both consumers:
		// the input is read, exchanged and folded once.
		if key, ok := logical.SubtreeKey(a); ok {
			if built, ok := b.common[key]; ok {
				return built.op, built.schema, nil
			}
			op, schema, err := b.aggregate(a, at)
			if err == nil {
				b.common[key] = builtNode{op, schema}
			}
			return op, schema, err
		}
	}
	fns := b.opts.Functions
	switch n := n.(type) {
	case *logical.Scan:
		return b.scan(n)
	case *logical.Values:
		op := b.g.AddOperator(dataflow.OperatorSpec{Name: "values", Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) {
			return sources.NewSource(&oneRow{}, sources.EventTime{Column: -1}, nil), nil
		}})
		return op, n.Schema(), nil
	case *logical.Filter:
		in, schema, pred, err := b.filterInput(n)
		if err != nil {
			return 0, nil, err
		}
		op := b.add("filter", 1, func() (dataflow.Operator, error) { return rel.NewFilter(pred, nil), nil })
		b.g.Connect(in, 0, op, 0)
		return op, schema, nil
	case *logical.Project:
		if f, ok := n.Input.(*logical.Filter); ok && columnsOnly(n.Exprs) {
			return b.filterColumns(n, f)
		}
		in, schema, err := b.node(n.Input)
		if err != nil {
			return 0, nil, err
		}
		return b.project(n, in, schema)
	case *logical.Aggregate:
		return b.aggregate(n, at)
	case *logical.Join:
		return b.join(n, at)
	case *logical.Union:
		var ins []int
		var schema *arrow.Schema
		for _, c := range n.Inputs {
			in, s, err := b.node(c)
			if err != nil {
				return 0, nil, err
			}
			if schema == nil {
				schema = s
			}
			ins = append(ins, in)
		}
		op := b.add("union", len(ins), func() (dataflow.Operator, error) { return rel.NewUnionAll(schema), nil })
		for i, in := range ins {
			b.g.Connect(in, 0, op, i)
		}
		return op, schema, nil
	case *logical.Limit:
		var in int
		var schema *arrow.Schema
		var err error
		s, sorted := n.Input.(*logical.Sort)
		if sorted {
			in, schema, err = b.topN(n, s, at)
		} else {
			in, schema, err = b.node(n.Input)
		}
		if err != nil {
			return 0, nil, err
		}
		mk := func() (dataflow.Operator, error) { return rel.NewLimit(n.N).Skip(n.Offset), nil }
		switch {
		case sorted && windowed(n.Input):
			// ORDER BY ... LIMIT over windows: each window's top rows. A
			// LIMIT without ORDER BY is the first n rows of the whole
			// stream, as DuckDB's: the query ends once it has them.
			mk = func() (dataflow.Operator, error) { return rel.NewLimitPerWindow(n.N).Skip(n.Offset), nil }
		case n == b.finalLimit:
			mk = func() (dataflow.Operator, error) { return rel.NewFinalLimit(n.N).Skip(n.Offset), nil }
		}
		op := b.add("limit", 1, mk)
		b.g.Connect(in, 0, op, 0)
		return op, schema, nil
	case *logical.Sort:
		in, schema, err := b.node(n.Input)
		if err != nil {
			return 0, nil, err
		}
		keys := make([]rel.SortKey, len(n.Keys))
		for i, k := range n.Keys {
			keys[i] = rel.SortKey{Expr: k.Expr, Desc: k.Desc}
		}
		newSort := b.sortAtEnd
		if windowed(n.Input) {
			newSort = rel.NewSort
		}
		if _, err := newSort(keys, schema, fns); err != nil {
			return 0, nil, at(err)
		}
		op := b.add("sort", 1, func() (dataflow.Operator, error) { return newSort(keys, schema, fns) })
		b.g.Connect(in, 0, op, 0)
		return op, schema, nil
	case *logical.Sink:
		return b.sink(n, at)
	case *logical.WindowFuncs:
		return b.windowFuncs(n, at)
	case *logical.Adapt:
		in, schema, err := b.node(n.Input)
		if err != nil {
			return 0, nil, err
		}
		// Checked (and its schema computed) once here; each instance
		// gets its own operator (scratch buffers).
		slo := time.Duration(n.SLOMs * float64(time.Millisecond))
		compute := time.Duration(n.ComputeMs * float64(time.Millisecond))
		newAdapt := func() (*ml.Adapt, error) {
			a, err := ml.NewAdapt(schema, n.Column, n.From, n.To, n.Encoding)
			if err != nil {
				return nil, err
			}
			return a.WithSides(n.Sides, slo, compute, dataflow.Attainment(n.Percentile))
		}
		probe, err := newAdapt()
		if err != nil {
			return 0, nil, at(err)
		}
		name := fmt.Sprintf("adapt %s %dx%d %s", schema.Field(n.Column).Name, n.To, n.To, n.Encoding)
		if len(n.Sides) > 1 {
			name += " by link"
		}
		drops := &b.q.report.Drops
		op := b.add(name, 1, func() (dataflow.Operator, error) {
			a, err := newAdapt()
			if err != nil {
				return nil, err
			}
			a.CountDropsIn(drops) // frames too late for the link, dropped before it
			return a, nil
		})
		b.g.Connect(in, 0, op, 0)
		return op, probe.Schema(), nil
	case *logical.LateralModel:
		if b.opts.Lateral == nil {
			return 0, nil, at(fmt.Errorf("%w: model %s (no model runtime was given to the executor)", ErrUnsupported, n.Name))
		}
		in, schema, err := b.node(n.Input)
		if err != nil {
			return 0, nil, err
		}
		mk, out, err := b.opts.Lateral(n, schema)
		if err != nil {
			return 0, nil, at(err)
		}
		drops := &b.q.report.Drops
		op := b.add("model "+n.Name, 1, func() (dataflow.Operator, error) {
			o, err := mk()
			if d, ok := o.(dataflow.Dropping); ok && err == nil {
				d.CountDropsIn(drops) // lazy drops past the LATENCY bound
			}
			return o, err
		})
		b.g.Connect(in, 0, op, 0)
		if truth := labelColumn(n, schema); b.opts.MeasureLabels && truth >= 0 && len(n.Out) > 0 {
			pred := len(schema.Fields()) // the model's first output
			meter := b.add("labels "+n.Name, 1, func() (dataflow.Operator, error) { return rel.NewLabelMeter(truth, pred), nil })
			b.g.Connect(op, 0, meter, 0)
			return meter, out, nil
		}
		return op, out, nil
	}
	return 0, nil, at(fmt.Errorf("%w: %T", ErrUnsupported, n))
}

// aggregate builds a GROUP BY: in two phases where that pays (twophase.go),
// spilling under a memory limit, exchanged by its keys over
// Options.Parallelism instances, or as one instance.
func (b *builder) aggregate(n *logical.Aggregate, at func(error) error) (int, *arrow.Schema, error) {
	fns := b.opts.Functions
	// split: the cores of a two-phase aggregation (twophase.go), whose
	// filters and projections below run on as many.
	split := 0
	closeKey, closeLag, closing := closingKey(n)
	keys, plain := plainColumns(n.Group)
	if splittable(n) && b.opts.MemoryLimit <= 0 && !closing {
		switch p := b.opts.Parallelism; {
		case p == AllCores && fewGroups(n.Group):
			split = defaultParallelism()
		case p > 1 && !(plain && len(keys) > 0):
			split = p
		}
	}
	var in int
	var schema *arrow.Schema
	var parallelIn bool
	var where *eval.Predicate // a filter the partial aggregations apply
	var err error
	b.noteCodes(n, b.opts.Parallelism > 1 && plain && len(keys) > 0)
	if split > 1 {
		in, schema, parallelIn, where, err = b.fusedMorsels(n.Input, split)
	} else {
		in, schema, err = b.node(n.Input)
	}
	if err != nil {
		return 0, nil, err
	}
	spec := rel.AggregateSpec{Group: n.Group, GroupNames: n.GroupNames, Aggs: n.Aggs, AggNames: n.AggNames}
	if w := n.Window; w != nil {
		ws := &rel.WindowSpec{Time: w.Time, Size: w.Size, Slide: w.Slide}
		switch w.Kind {
		case logical.Tumble:
			ws.Type = expr.Tumble
		case logical.Hop:
			ws.Type = expr.Hop
		case logical.Session:
			ws.Type, ws.Gap = expr.Session, w.Size
		}
		ws.Lag = timeLag(n.Input, w.Time)
		ws.ProcTime = procTime(n.Input, w.Time)
		spec.Window = ws
	}
	if closing {
		// The closing key's grains are the windows (closingKey): a group
		// goes out once the watermark passes its key's grain.
		spec.Window = &rel.WindowSpec{Type: expr.Tumble, Time: n.Group[closeKey], Size: closingGrain,
			Lag: closeLag, ByKey: true, Key: closeKey}
	}
	// Compile once here so plan errors surface before anything runs.
	h, err := rel.NewHashAggregate(b.opts.Allocator, spec, schema, fns)
	if err != nil {
		return 0, nil, at(err)
	}
	out := h.Schema()
	h.Release()
	st := &rel.Stats{}
	b.q.stats = append(b.q.stats, st)
	mk := func(dataflow.Instance) (dataflow.Operator, error) {
		return rel.NewAggregate(spec, schema, fns, st), nil
	}
	if op, ok := b.windowPhases(n, spec.Window, in, schema, out, st); ok {
		return op, out, nil
	}
	if op, ok := b.closingPhases(n, spec.Window, in, schema, out, st); ok {
		return op, out, nil
	}
	if b.opts.MemoryLimit > 0 && !closing {
		if op, ok := b.spilling(n, in, schema, out); ok {
			return op, out, nil
		}
	}
	if split > 1 {
		if op, ok := b.twoPhase(n, in, parallelIn, schema, out, split, where, st); ok {
			return op, out, nil
		}
		if where != nil {
			in, parallelIn = b.filterMorsels(where, in, parallelIn, split), true
		}
		// Not split after all: one aggregation takes every instance's rows.
	}
	if p := b.opts.Parallelism; p > 1 && plain && len(keys) > 0 {
		// Equal keys meet in one instance; every instance sees the same
		// frontier, so each closes its share of a window at the same time.
		op := b.g.AddOperator(dataflow.OperatorSpec{Name: "aggregate", Inputs: 1, Outputs: 1, Workers: make([]int, p), New: mk})
		b.g.AddEdge(dataflow.Edge{From: dataflow.Port{Op: in}, To: dataflow.Port{Op: op}, Kind: dataflow.Exchange, Partition: dataflow.HashColumns(keys...)})
		return op, out, nil
	}
	op := b.g.AddOperator(dataflow.OperatorSpec{Name: "aggregate", Inputs: 1, Outputs: 1, New: mk})
	b.g.Connect(in, 0, op, 0)
	return op, out, nil
}

// labelColumn is the input column holding the true values of model call n's
// first output, or -1.
func labelColumn(n *logical.LateralModel, in *arrow.Schema) int {
	if n.Model == nil || n.Model.Labels == "" {
		return -1
	}
	for i, f := range in.Fields() {
		if f.Name == n.Model.Labels || strings.HasSuffix(f.Name, "."+n.Model.Labels) {
			return i
		}
	}
	return -1
}

// bounded reports whether a subtree reads only tables (files with an end).
func bounded(n logical.Node) bool {
	ok := true
	logical.Walk(n, func(x logical.Node) bool {
		if s, isScan := x.(*logical.Scan); isScan && s.Stream != nil {
			ok = false
		}
		return ok
	})
	return ok
}

func (b *builder) join(n *logical.Join, at func(error) error) (int, *arrow.Schema, error) {
	if n.Window != nil {
		return b.windowJoin(n, at)
	}
	if streamJoin(n) {
		return b.streamJoin(n, at)
	}
	spec, probeN, _, err := kernelSpec(n)
	if err != nil {
		return 0, nil, at(err)
	}
	if f, ok := b.joinFilters[n]; ok && spec.Kind == rel.InnerJoin && !n.BuildLeft {
		// The WHERE right above (ON's comparisons of the two sides, when
		// the join order left no key): the join may leave out the pairs
		// it drops, and index its table by their comparisons.
		spec.Prune = f
	}
	probeBounded := bounded(probeN)
	if n.BuildLeft && !probeBounded {
		return 0, nil, at(fmt.Errorf("%w: a join that builds its left side probes a table", ErrUnsupported))
	}
	// p: the probe instances. A stream probes on one core (its batches
	// keep their order); a table on every core.
	p := 1
	switch par := b.opts.Parallelism; {
	case !probeBounded:
	case par == AllCores:
		p = defaultParallelism()
	case par > 1:
		p = par
	}
	spilling := b.opts.MemoryLimit > 0 && probeBounded
	if spilling || b.opts.Relayed {
		// rel.SpillJoin is one instance; on a cluster a join is one
		// operator (StreamTableJoin) that the placement puts where its
		// probe side runs, with its table broadcast to it.
		p = 1
	}
	// The sides are built in the plan's order, left then right, whichever
	// is probed: a cluster pairs the graph's operators with the plan's
	// nodes in that order (runtime/deploy).
	var l, r int
	var ls, rs *arrow.Schema
	var parallel bool
	side := func(n logical.Node, probe bool) error {
		var err error
		switch {
		case probe && p > 1:
			l, ls, parallel, err = b.morsels(n, p)
		case probe:
			l, ls, err = b.node(n)
		default:
			r, rs, err = b.node(n)
		}
		return err
	}
	if err := side(n.Left, !n.BuildLeft); err != nil {
		return 0, nil, err
	}
	if err := side(n.Right, n.BuildLeft); err != nil {
		return 0, nil, err
	}
	j, err := rel.NewHashJoin(b.opts.Allocator, spec, ls, rs, b.opts.Functions)
	if err != nil {
		return 0, nil, at(err)
	}
	out := j.Schema()
	j.Release()
	fns := b.opts.Functions
	if b.opts.Relayed && !spilling {
		batch := b.opts.BatchSize
		op := b.add("join", 2, func() (dataflow.Operator, error) {
			return rel.NewStreamTableJoin(spec, ls, rs, fns, nil).WithBatch(batch), nil
		})
		b.g.Connect(l, 0, op, 0)
		b.g.Connect(r, 0, op, 1)
		return op, out, nil
	}
	if spilling {
		// Both sides end, so a table past the limit can wait on disk with
		// the probe rows until they do.
		limit, st := b.opts.MemoryLimit, b.q.joins
		op := b.add(SpillingJoin, 2, func() (dataflow.Operator, error) {
			return rel.NewSpillJoin(spec, ls, rs, fns, limit, st), nil
		})
		b.g.Connect(l, 0, op, 0)
		b.g.Connect(r, 0, op, 1)
		return op, out, nil
	}
	users := 1 + p
	if spec.Kind == rel.BuildSemi || spec.Kind == rel.BuildAnti {
		users++
	}
	shared := rel.NewSharedBuild(users, nil)
	build := b.add("join build", 1, func() (dataflow.Operator, error) { return rel.NewJoinBuild(spec, ls, rs, fns, shared), nil })
	b.g.Connect(r, 0, build, 0)
	probe := b.g.AddOperator(dataflow.OperatorSpec{Name: "join probe", Inputs: 2, Outputs: 1, Workers: make([]int, p),
		New: func(dataflow.Instance) (dataflow.Operator, error) {
			return rel.NewJoinProbe(spec, ls, rs, fns, shared), nil
		}})
	switch {
	case p == 1 || parallel:
		b.g.Connect(l, 0, probe, 0)
	default:
		b.g.AddEdge(dataflow.Edge{From: dataflow.Port{Op: l}, To: dataflow.Port{Op: probe}, Kind: dataflow.Balance})
	}
	b.g.AddEdge(dataflow.Edge{From: dataflow.Port{Op: build}, To: dataflow.Port{Op: probe, Port: 1}, Kind: dataflow.Broadcast})
	b.par[probe] = p
	if users == p+1 {
		return probe, out, nil
	}
	batch := b.opts.BatchSize
	emit := b.add("join emit", 1, func() (dataflow.Operator, error) { return rel.NewJoinEmit(shared, batch), nil })
	b.g.Connect(probe, 0, emit, 0)
	return emit, out, nil
}

// kernelSpec is the hash join that runs n: its kind, keys and residual over
// the side it probes with (rel's left) and the side it builds (rel's
// right). A join that builds its left side (BuildLeft) swaps them.
func kernelSpec(n *logical.Join) (rel.JoinSpec, logical.Node, logical.Node, error) {
	nl := n.Left.Schema().NumFields()
	lk, rk, residual := rel.SplitJoinCondition(n.On, nl)
	if n.Kind == logical.CrossJoin || len(lk) == 0 {
		// A cross product is the hash join of one key every row shares:
		// the right table is one bucket, and each left row meets all of it
		// (an ON with no equality, a LEFT JOIN's band, is its residual).
		one, _ := expr.NewLiteral(int64(0))
		lk, rk = []expr.Expr{one}, []expr.Expr{one}
		if n.Kind == logical.CrossJoin {
			residual = nil
		}
	}
	spec := rel.JoinSpec{Kind: rel.InnerJoin, LeftKeys: lk, RightKeys: rk, Residual: residual, NullAware: n.NullAware, Mark: n.Mark}
	switch n.Kind {
	case logical.LeftJoin:
		spec.Kind = rel.LeftJoin
	case logical.SemiJoin:
		spec.Kind = rel.SemiJoin
	case logical.AntiJoin:
		spec.Kind = rel.AntiJoin
	case logical.MarkJoin:
		spec.Kind = rel.MarkJoin
	}
	if !n.BuildLeft {
		return spec, n.Left, n.Right, nil
	}
	switch spec.Kind {
	case rel.SemiJoin:
		spec.Kind = rel.BuildSemi
	case rel.AntiJoin:
		spec.Kind = rel.BuildAnti
	default:
		return spec, nil, nil, fmt.Errorf("%w: building the left side of a %s join", ErrUnsupported, n.Kind)
	}
	if n.NullAware {
		return spec, nil, nil, fmt.Errorf("%w: building the left side of a NOT IN (null-aware) join", ErrUnsupported)
	}
	// The residual reads left ++ right; the kernel's pairs are right ++ left.
	nr := n.Right.Schema().NumFields()
	if residual != nil {
		spec.Residual = expr.Transform(residual, func(x expr.Expr) expr.Expr {
			if c, ok := x.(*expr.Column); ok {
				i := c.Index + nr
				if c.Index >= nl {
					i = c.Index - nl
				}
				return &expr.Column{Index: i, Name: c.Name, DataType: c.DataType}
			}
			return x
		})
	}
	spec.LeftKeys, spec.RightKeys = rk, lk
	return spec, n.Right, n.Left, nil
}

// windowJoin builds a windowed join of two streams.
func (b *builder) windowJoin(n *logical.Join, at func(error) error) (int, *arrow.Schema, error) {
	w := n.Window
	if w.Kind != logical.Tumble {
		return 0, nil, at(fmt.Errorf("%w: %s window joins", ErrUnsupported, w.Kind))
	}
	l, r, ls, rs, spec, err := b.twoStreams(n, at)
	if err != nil {
		return 0, nil, err
	}
	j, err := rel.NewHashJoin(b.opts.Allocator, spec, ls, rs, b.opts.Functions)
	if err != nil {
		return 0, nil, at(err)
	}
	out := j.Schema()
	j.Release()
	fns := b.opts.Functions
	// The window's times are over the joined row; the operator wants the
	// right one over the right input.
	ws := rel.WindowJoinSpec{Join: spec, LeftTime: w.LeftTime, RightTime: shiftColumns(w.RightTime, -ls.NumFields()), Size: w.Size}
	if _, err := rel.NewWindowJoin(ws, ls, rs, fns, nil); err != nil {
		return 0, nil, at(err)
	}
	op := b.twoStreamsOp("join", l, r, func(st *rel.Stats) (dataflow.Operator, error) {
		return rel.NewWindowJoin(ws, ls, rs, fns, st)
	})
	return op, out, nil
}

func (b *builder) path(p, declaredIn string) string {
	return ResolvePath(p, b.opts.BaseDir, declaredIn)
}

// ResolvePath resolves a relative file path of a stream or table: next to the
// script (baseDir), then next to the file that declared it (a catalog YAML
// elsewhere names its data relative to itself), else as given (the working
// directory).
func ResolvePath(p, baseDir, declaredIn string) string {
	if filepath.IsAbs(p) {
		return p
	}
	for _, dir := range []string{baseDir, filepath.Dir(declaredIn)} {
		if dir == "" || dir == "." {
			continue // the working directory comes last
		}
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil || isPattern(p) && globIn(dir, p) {
			return filepath.Join(dir, p)
		}
	}
	return p
}

func declaredSchema(cols []catalog.Column) (*arrow.Schema, error) {
	if len(cols) == 0 {
		return nil, nil
	}
	fs := make([]arrow.Field, len(cols))
	for i, c := range cols {
		f, err := c.Field()
		if err != nil {
			return nil, err
		}
		f.Nullable = true
		fs[i] = f
	}
	return arrow.NewSchema(fs, nil), nil
}

// openReader opens a file source. It is called once at build time to learn the
// schema and once per run of the source instance.
func (b *builder) openReader(path, format string, schema *arrow.Schema, table bool, scan sources.ParquetScan) (sources.Reader, error) {
	switch sources.FormatOf(format, path) {
	case "csv":
		maxLine := b.maxLine()
		if table {
			return sources.OpenCSVTableLimited(path, schema, b.opts.BatchSize, b.opts.OnError, b.q.report, maxLine)
		}
		return sources.OpenCSVLimited(path, schema, b.opts.BatchSize, b.opts.OnError, b.q.report, maxLine)
	case "json":
		return sources.OpenJSONLLimited(path, schema, b.opts.BatchSize, b.opts.OnError, b.q.report, b.maxLine())
	case "parquet":
		if table {
			return sources.OpenParquetScan(path, schema, b.parquetBatch(table), b.opts.Allocator, b.opts.OnError, b.q.report, scan)
		}
		return sources.OpenParquet(path, schema, b.parquetBatch(table), b.opts.Allocator, b.opts.OnError, b.q.report, scan.Bounds...)
	case "arrow":
		return sources.OpenIPC(path, schema, b.opts.Allocator, b.opts.OnError, b.q.report)
	}
	return nil, fmt.Errorf("%w: file format %q", ErrUnsupported, format)
}

// maxLine bounds a line of a file the query reads (0: none): a line is
// held whole to be parsed, outside the charged memory, so none may be
// longer than the query's limit.
func (b *builder) maxLine() int {
	if b.opts.Memory == nil || b.opts.Memory.Limit() <= 0 {
		return 0
	}
	return int(min(b.opts.Memory.Limit(), math.MaxInt32))
}

func (b *builder) scan(n *logical.Scan) (int, *arrow.Schema, error) {
	var path, format, declaredIn string
	var cols []catalog.Column
	isStream := n.Stream != nil
	if isStream {
		if !strings.EqualFold(n.Stream.Source, "file") {
			return b.externalStream(n)
		}
		path, format, cols, declaredIn = n.Stream.Subject, n.Stream.Format, n.Stream.Columns, n.Stream.Pos.File
	} else {
		path, format, cols, declaredIn = n.Table.Path, n.Table.Format, n.Table.Columns, n.Table.Pos.File
	}
	raw := path
	path = b.path(path, declaredIn)
	files := []string{path}
	if isStream {
		// A glob's files are the stream's partitions (partitions.go).
		var err error
		if files, err = PartitionFiles(path); err != nil {
			return 0, nil, fmt.Errorf("%s: stream %s: %w", n.Position(), n.Name(), err)
		}
		if err := checkPartitions(n.Name(), files); err != nil {
			return 0, nil, fmt.Errorf("%s: %w", n.Position(), err)
		}
	}
	if b.opts.Confine != nil {
		for i, f := range files {
			var err error
			if files[i], err = b.opts.Confine(unclean(raw, f)); err != nil {
				return 0, nil, fmt.Errorf("%s: %s %s: %w", n.Position(), map[bool]string{true: "stream", false: "table"}[isStream], n.Name(), err)
			}
		}
	}
	path = files[0]
	declared, err := declaredSchema(cols)
	if err != nil {
		return 0, nil, fmt.Errorf("%s: %w", n.Position(), err)
	}
	probe, err := b.openReader(path, format, declared, !isStream, sources.ParquetScan{})
	if err != nil {
		return 0, nil, fmt.Errorf("%s: %s %s: %w", n.Position(), map[bool]string{true: "stream", false: "table"}[isStream], n.Name(), err)
	}
	schema := probe.Schema()
	probe.Close()
	et := sources.EventTime{Column: -1, MaxDelay: b.opts.MaxDelay}
	if isStream {
		et = b.eventTime(schema)
	}
	var scan sources.ParquetScan
	if !isStream {
		// A stream reads every row: those a skipped row group held would
		// have moved its watermark, so skipping them could change which
		// rows come late.
		scan.Bounds = b.bounds[n]
	}
	codes := b.codes[n]
	if f := sources.FormatOf(format, path); f == "parquet" || f == "csv" {
		// Read only the columns the query uses: Parquet decodes only
		// those, and CSV converts only their fields (the others are
		// skipped unread, as DuckDB's reader does).
		schema, n, et = projectScan(n, schema, et)
	}
	if !isStream && sources.FormatOf(format, path) == "parquet" {
		scan.Codes = codeNames(codes, n, schema)
	}
	report := b.q.report
	var pace sources.Pacing
	if isStream && b.opts.Pace != nil {
		pace = b.opts.Pace(n.Stream)
	}
	name := "scan " + n.Name()
	if len(scan.Codes) > 0 {
		// Said in EXPLAIN ANALYZE's operators: these keys are grouped on codes.
		name += " (codes: " + strings.Join(scan.Codes, ", ") + ")"
	}
	spec := dataflow.OperatorSpec{Name: name, Outputs: 1, New: func(inst dataflow.Instance) (dataflow.Operator, error) {
		// Instance k reads partition k, with a watermark of its own.
		if inst.Parallelism != len(files) {
			return nil, fmt.Errorf("%w: %s has %d partitions, placed as %d instances", ErrUnsupported, name, len(files), inst.Parallelism)
		}
		file := files[inst.Index]
		r, err := b.openReader(file, format, schema, !isStream, scan)
		if err != nil {
			return nil, err
		}
		src := sources.NewPacedSource(r, et, report, pace)
		src.Watch(fmt.Sprintf("%s %s, file %q", kindOf(isStream), n.Name(), file))
		return src, nil
	}}
	if len(files) > 1 {
		spec.Workers = make([]int, len(files))
	}
	src := b.g.AddOperator(spec)
	return b.columns(n, src, schema)
}

func kindOf(isStream bool) string {
	if isStream {
		return "stream"
	}
	return "table"
}

// eventTime is a stream's event time: its first TIMESTAMP column.
func (b *builder) eventTime(schema *arrow.Schema) sources.EventTime {
	et := sources.EventTime{Column: -1, MaxDelay: b.opts.MaxDelay}
	for i, f := range schema.Fields() {
		if f.Type.ID() == arrow.TIMESTAMP {
			et.Column = i
			break
		}
	}
	return et
}

// externalStream builds the source of a stream through Options.Stream; its
// schema is what the stream declares, as nothing can be probed, narrowed
// to the columns the query reads: a message's other fields are skipped,
// not decoded into columns the next operator drops (all 7 of a Nexmark
// bid's for a query reading 2 were most of a NATS source's CPU beside
// nats.go's own).
func (b *builder) externalStream(n *logical.Scan) (int, *arrow.Schema, error) {
	st := n.Stream
	if b.opts.Stream == nil {
		return 0, nil, fmt.Errorf("%s: %w: stream %s FROM %s (no connector was given to the executor)", n.Position(), ErrUnsupported, st.Name, strings.ToUpper(st.Source))
	}
	schema, err := declaredSchema(st.Columns)
	if err != nil {
		return 0, nil, fmt.Errorf("%s: %w", n.Position(), err)
	}
	if schema == nil {
		return 0, nil, fmt.Errorf("%s: %w: stream %s FROM %s declares no columns (a subject has no header to infer them from)", n.Position(), ErrUnsupported, st.Name, strings.ToUpper(st.Source))
	}
	schema, n, et, cols := projectColumns(n, schema, b.eventTime(schema))
	mk, err := b.opts.Stream(st, schema, cols, et, b.q.report)
	if err != nil {
		return 0, nil, fmt.Errorf("%s: stream %s: %w", n.Position(), st.Name, err)
	}
	src := b.add("scan "+n.Name(), 0, mk)
	return b.columns(n, src, schema)
}

// columns keeps only the columns a scan reads, in its order.
func (b *builder) columns(n *logical.Scan, src int, schema *arrow.Schema) (int, *arrow.Schema, error) {
	all := len(n.Columns) == schema.NumFields()
	for i, c := range n.Columns {
		all = all && c == i
	}
	if all || len(n.Columns) == 0 {
		return src, schema, nil
	}
	exprs := make([]expr.Expr, len(n.Columns))
	names := make([]string, len(n.Columns))
	for i, c := range n.Columns {
		if c >= schema.NumFields() {
			return 0, nil, fmt.Errorf("%s: scan of %s reads column %d of %d", n.Position(), n.Name(), c, schema.NumFields())
		}
		f := schema.Field(c)
		exprs[i] = &expr.Column{Index: c, Name: f.Name, DataType: f.Type}
		names[i] = f.Name
	}
	proj, err := eval.NewProjection(exprs, names, schema, b.opts.Functions)
	if err != nil {
		return 0, nil, err
	}
	op := b.add("columns", 1, func() (dataflow.Operator, error) { return rel.NewProject(proj), nil })
	b.g.Connect(src, 0, op, 0)
	return op, proj.Schema(), nil
}

func (b *builder) sink(n *logical.Sink, at func(error) error) (int, *arrow.Schema, error) {
	in, schema, err := b.node(n.Input)
	if err != nil {
		return 0, nil, err
	}
	var w sinks.Writer
	switch {
	case n.Sink == nil:
		w = b.opts.Output
		if w == nil {
			w = sinks.NewTable(b.opts.Stdout)
		}
	case n.Sink.Kind == "stdout":
		format := n.Sink.Format
		if format == "" {
			format = "json"
		}
		if w, err = sinks.New(format, b.opts.Stdout); err != nil {
			return 0, nil, at(err)
		}
	case n.Sink.Kind == "discard":
		w = sinks.Discard{}
	case n.Sink.Kind == "file":
		path := b.outPath(n.Sink.Target)
		confine := b.opts.Confine
		if b.opts.ConfineWrite != nil {
			confine = b.opts.ConfineWrite
		}
		if confine != nil {
			if path, err = confine(unclean(n.Sink.Target, path)); err != nil {
				return 0, nil, at(fmt.Errorf("sink %s: %w", n.Sink.Name, err))
			}
		}
		f, err := os.Create(path)
		if err != nil {
			return 0, nil, at(err)
		}
		b.q.closers = append(b.q.closers, f)
		var fw io.Writer = f
		if confine != nil {
			// A shared worker's disk: the file stops before it fills it.
			fw = rel.DiskGuarded(f)
		}
		if w, err = sinks.New(sources.FormatOf(n.Sink.Format, n.Sink.Target), fw); err != nil {
			return 0, nil, at(err)
		}
	default:
		if b.opts.Sink == nil {
			return 0, nil, at(fmt.Errorf("%w: sink %s TO %s (no connector was given to the executor)", ErrUnsupported, n.Sink.Name, strings.ToUpper(n.Sink.Kind)))
		}
		if w, err = b.opts.Sink(n.Sink, schema); err != nil {
			return 0, nil, at(fmt.Errorf("sink %s: %w", n.Sink.Name, err))
		}
	}
	if rel.IsChangelog(schema) {
		w = opFirstWriter(w)
	}
	b.q.writers = append(b.q.writers, w)
	mu := &sync.Mutex{}
	op := b.g.AddOperator(dataflow.OperatorSpec{Name: "sink", Inputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) {
		if b.opts.Parallelism > 1 {
			return sinks.NewOrderedSink(w, mu, &b.q.written), nil
		}
		return sinks.NewSink(w, mu, &b.q.written), nil
	}})
	b.g.Connect(in, 0, op, 0)
	return op, schema, nil
}

// unclean is what Options.Confine vets: the resolved path, or the name as
// the query wrote it when that climbs with "..", which resolving would
// have cleaned away (a confined query may not climb at all).
func unclean(raw, resolved string) string {
	for _, el := range strings.Split(filepath.ToSlash(raw), "/") {
		if el == ".." {
			return raw
		}
	}
	return resolved
}

func (b *builder) outPath(p string) string {
	if filepath.IsAbs(p) || b.opts.BaseDir == "" {
		return p
	}
	return filepath.Join(b.opts.BaseDir, p)
}

func shiftColumns(e expr.Expr, by int) expr.Expr {
	return expr.Transform(e, func(x expr.Expr) expr.Expr {
		if c, ok := x.(*expr.Column); ok {
			return &expr.Column{Index: c.Index + by, Name: c.Name, DataType: c.DataType}
		}
		return x
	})
}

// plainColumns returns the input columns of group keys that are all bare
// column references.
func plainColumns(es []expr.Expr) ([]int, bool) {
	var out []int
	for _, e := range es {
		c, ok := e.(*expr.Column)
		if !ok {
			return nil, false
		}
		out = append(out, c.Index)
	}
	return out, true
}

// oneRow reads the single row, of no columns, of a SELECT without FROM.
type oneRow struct{ done bool }

func (r *oneRow) Schema() *arrow.Schema { return arrow.NewSchema(nil, nil) }
func (r *oneRow) Close() error          { return nil }
func (r *oneRow) Next(memory.Allocator) (arrow.Record, error) {
	if r.done {
		return nil, nil
	}
	r.done = true
	return array.NewRecord(r.Schema(), nil, 1), nil
}
