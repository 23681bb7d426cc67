// Package logical owns the logical plan: an immutable DAG of relational and ML
// operators (Scan, Filter, Project, Join (windowed for two streams),
// LateralModel, Adapt (a model call's images resized before a link), Aggregate with windows, WindowFuncs (OVER), Union, Limit, Sort, Sink), each with its output schema as an arrow schema and
// Children()/WithChildren() for rewrites, plus the query's objectives. It imports
// the catalog and planner/expr only; never the optimizer, operators or dataflow.
package logical

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/internal/treeprint"
)

// Pos is where in the query a node comes from.
type Pos = catalog.Pos

// Node is a logical operator. Nodes are immutable values: rewrites build new
// ones with WithChildren.
type Node interface {
	// Schema is the node's output.
	Schema() *arrow.Schema
	Children() []Node
	// WithChildren returns a copy with the children replaced (same count).
	WithChildren(children ...Node) Node
	// Describe is the one-line head the tree printer shows.
	Describe() string
	Position() Pos
}

// Plan is a bound query: the operator DAG and what it must reach.
type Plan struct {
	Root       Node
	Objectives Objectives
}

// Objectives are the targets of the query's WITH (...) clause.
type Objectives struct {
	// Accuracy is the lowest acceptable end-to-end accuracy, in the catalog's
	// unit (percent); nil when not set.
	Accuracy *float64 `json:"accuracy,omitempty"`
	// Throughput is the required items per second; 0 when not set.
	Throughput float64 `json:"throughput,omitempty"`
	// LatencyMs and Percentile: an end-to-end latency SLO (recorded for later
	// planners; the cost model of this one does not use it).
	LatencyMs  float64 `json:"latency_ms,omitempty"`
	Percentile float64 `json:"percentile,omitempty"`
	// Budget is the highest acceptable cost per hour; 0 when not set.
	Budget float64 `json:"budget,omitempty"`
	// Priority is REALTIME or BEST_EFFORT ("": neither, scheduled as
	// before): how the worker's inference scheduler treats the query's
	// model calls. REALTIME comes with LatencyMs.
	Priority    string `json:"priority,omitempty"`
	PriorityPos Pos    `json:"-"`
	// DataAware: ACCURACY ... DATA AWARE. A variant's accuracy is its
	// per-class recall weighed by the stream's estimated class mix when the
	// planner is given one (SneakPeek), and the runtime re-plans as the mix
	// shifts.
	DataAware    bool `json:"data_aware,omitempty"`
	DataAwarePos Pos  `json:"-"`
	// Pos is where the WITH (...) clause states them (zero when it does
	// not), AccuracyPos and ThroughputPos where it states those, so that an
	// objective no plan meets is reported at itself.
	Pos           Pos `json:"-"`
	AccuracyPos   Pos `json:"-"`
	ThroughputPos Pos `json:"-"`
	BudgetPos     Pos `json:"-"`
}

func mustLen(kind string, got, want int) {
	if got != want {
		panic(fmt.Sprintf("logical: %s.WithChildren got %d children, want %d", kind, got, want))
	}
}

// ---- Scan ----

// Scan reads a stream or a table.
type Scan struct {
	// Stream or Table is set.
	Stream *catalog.Stream
	Table  *catalog.Table
	Alias  string
	// Columns are the indexes of the source's columns read (all, unless a
	// rewrite pruned some).
	Columns []int
	schema  *arrow.Schema
	Pos     Pos
}

// SourceColumns are the source's declared columns.
func (s *Scan) SourceColumns() []catalog.Column {
	if s.Stream != nil {
		return s.Stream.Columns
	}
	return s.Table.Columns
}

// Name is the stream's or table's name.
func (s *Scan) Name() string {
	if s.Stream != nil {
		return s.Stream.Name
	}
	return s.Table.Name
}

// NewScan reads the given columns (nil: all) of a stream or table.
func NewScan(stream *catalog.Stream, table *catalog.Table, alias string, cols []int, pos Pos) (*Scan, error) {
	s := &Scan{Stream: stream, Table: table, Alias: alias, Pos: pos}
	src := s.SourceColumns()
	if cols == nil {
		for i := range src {
			cols = append(cols, i)
		}
	}
	s.Columns = cols
	fs := make([]arrow.Field, 0, len(cols))
	for _, i := range cols {
		f, err := src[i].Field()
		if err != nil {
			return nil, fmt.Errorf("%s: column %s: %w", s.Name(), src[i].Name, err)
		}
		fs = append(fs, f)
	}
	s.schema = arrow.NewSchema(fs, nil)
	return s, nil
}

func (s *Scan) Schema() *arrow.Schema { return s.schema }
func (s *Scan) Children() []Node      { return nil }
func (s *Scan) WithChildren(ch ...Node) Node {
	mustLen("Scan", len(ch), 0)
	return s
}
func (s *Scan) Position() Pos { return s.Pos }
func (s *Scan) Describe() string {
	kind := "Stream"
	if s.Table != nil {
		kind = "Table"
	}
	head := fmt.Sprintf("Scan %s %s", kind, s.Name())
	if s.Alias != "" && s.Alias != s.Name() {
		head += " AS " + s.Alias
	}
	return head + " [" + fieldNames(s.schema) + "]"
}

// ---- Values ----

// Values is the one row, of no columns, that a SELECT without FROM reads
// (SELECT 1 + 1): its items are computed once.
type Values struct {
	Pos Pos
}

var emptySchema = arrow.NewSchema(nil, nil)

func (v *Values) Schema() *arrow.Schema { return emptySchema }
func (v *Values) Children() []Node      { return nil }
func (v *Values) WithChildren(ch ...Node) Node {
	mustLen("Values", len(ch), 0)
	return v
}
func (v *Values) Position() Pos    { return v.Pos }
func (v *Values) Describe() string { return "Values (one row)" }

// ---- Filter ----

// Filter keeps rows whose predicate is TRUE.
type Filter struct {
	Input Node
	Pred  expr.Expr
	Pos   Pos
}

func (f *Filter) Schema() *arrow.Schema { return f.Input.Schema() }
func (f *Filter) Children() []Node      { return []Node{f.Input} }
func (f *Filter) WithChildren(ch ...Node) Node {
	mustLen("Filter", len(ch), 1)
	c := *f
	c.Input = ch[0]
	return &c
}
func (f *Filter) Position() Pos    { return f.Pos }
func (f *Filter) Describe() string { return "Filter " + f.Pred.String() }

// ---- Project ----

// Project computes a new row from expressions over its input.
type Project struct {
	Input  Node
	Exprs  []expr.Expr
	Names  []string
	schema *arrow.Schema
	Pos    Pos
}

// NewProject builds a projection; names align with exprs.
func NewProject(in Node, exprs []expr.Expr, names []string, pos Pos) *Project {
	fs := make([]arrow.Field, len(exprs))
	for i, e := range exprs {
		fs[i] = arrow.Field{Name: names[i], Type: e.Type(), Nullable: true}
		if c, ok := e.(*expr.Column); ok && c.Index < len(in.Schema().Fields()) {
			fs[i].Metadata = in.Schema().Field(c.Index).Metadata
		}
	}
	return &Project{Input: in, Exprs: exprs, Names: names, schema: arrow.NewSchema(fs, nil), Pos: pos}
}

func (p *Project) Schema() *arrow.Schema { return p.schema }
func (p *Project) Children() []Node      { return []Node{p.Input} }
func (p *Project) WithChildren(ch ...Node) Node {
	mustLen("Project", len(ch), 1)
	c := *p
	c.Input = ch[0]
	return &c
}
func (p *Project) Position() Pos { return p.Pos }
func (p *Project) Describe() string {
	parts := make([]string, len(p.Exprs))
	for i, e := range p.Exprs {
		s := e.String()
		if s != p.Names[i] {
			s += " AS " + p.Names[i]
		}
		parts[i] = s
	}
	return "Project " + strings.Join(parts, ", ")
}

// ---- Join ----

// JoinKind is the kind of a join.
type JoinKind int

// Join kinds. Semi, anti and mark joins (what decorrelated EXISTS, IN and
// NOT IN become) output the left rows only: a semi join each left row that
// some right row matches (On is TRUE), an anti join each that none
// matches, a mark join every left row with a BOOLEAN column, Mark, saying
// whether one does.
const (
	InnerJoin JoinKind = iota
	LeftJoin
	CrossJoin
	SemiJoin
	AntiJoin
	MarkJoin
)

func (k JoinKind) String() string {
	switch k {
	case LeftJoin:
		return "Left"
	case CrossJoin:
		return "Cross"
	case SemiJoin:
		return "Semi"
	case AntiJoin:
		return "Anti"
	case MarkJoin:
		return "Mark"
	}
	return "Inner"
}

// LeftOnly reports whether the join outputs the left columns only (semi,
// anti), or them and a mark (mark).
func (k JoinKind) LeftOnly() bool { return k == SemiJoin || k == AntiJoin || k == MarkJoin }

// Join combines two inputs; the output is the left columns then the right
// (semi and anti: the left columns; mark: the left columns and Mark).
type Join struct {
	Kind        JoinKind
	Left, Right Node
	// On is nil for a cross join.
	On expr.Expr
	// NullAware gives an anti or mark join the NULL semantics of NOT IN
	// and IN over its equalities (all of On's conjuncts, which must be
	// equalities of a left and a right expression): a left row with a
	// NULL key, or one no right row matches while some right key is NULL,
	// is not known to be out of the set, so an anti join drops it and a
	// mark join marks it NULL; over no right rows at all, NOT IN is TRUE.
	NullAware bool
	// Mark names a mark join's BOOLEAN column.
	Mark string
	// BuildLeft, for a semi or anti join of two tables, builds the hash
	// table from the left input (the rows it outputs) and probes it with
	// the right, marking the left rows that match: a planner's choice
	// when the left side is the smaller.
	BuildLeft bool
	// Window, when set, makes a join of two streams windowed: rows join only
	// when they also fall in the same window (Flink's window join). Nil for
	// a stream-table join.
	Window *JoinWindow
	schema *arrow.Schema
	Pos    Pos
}

// JoinWindow is the window of a windowed stream-stream join: TUMBLE windows
// of Size on each side's event time. LeftTime and RightTime are over the
// join's combined row (left columns, then right), like On, so that one
// column remapping serves all three.
type JoinWindow struct {
	Kind      WindowKind
	LeftTime  expr.Expr
	RightTime expr.Expr
	Size      time.Duration
}

func (w *JoinWindow) String() string {
	return fmt.Sprintf("%s(%s | %s, %s)", w.Kind, w.LeftTime, w.RightTime, w.Size)
}

// NewWindowJoin builds a windowed join of two streams.
func NewWindowJoin(kind JoinKind, l, r Node, on expr.Expr, w *JoinWindow, pos Pos) *Join {
	j := NewJoin(kind, l, r, on, pos)
	j.Window = w
	return j
}

// NewJoin builds a join (a mark join's column is called "mark"; see
// NewMarkJoin).
func NewJoin(kind JoinKind, l, r Node, on expr.Expr, pos Pos) *Join {
	j := &Join{Kind: kind, Left: l, Right: r, On: on, Pos: pos}
	if kind == MarkJoin {
		j.Mark = "mark"
	}
	j.schema = j.makeSchema()
	return j
}

// NewMarkJoin builds a mark join whose BOOLEAN column is called mark.
func NewMarkJoin(l, r Node, on expr.Expr, mark string, nullAware bool, pos Pos) *Join {
	j := &Join{Kind: MarkJoin, Left: l, Right: r, On: on, Mark: mark, NullAware: nullAware, Pos: pos}
	j.schema = j.makeSchema()
	return j
}

func (j *Join) makeSchema() *arrow.Schema {
	fs := append([]arrow.Field(nil), j.Left.Schema().Fields()...)
	switch j.Kind {
	case SemiJoin, AntiJoin:
	case MarkJoin:
		fs = append(fs, arrow.Field{Name: j.Mark, Type: expr.Bool, Nullable: true})
	default:
		fs = append(fs, j.Right.Schema().Fields()...)
	}
	return arrow.NewSchema(fs, nil)
}

// WithOn is j with another condition.
func (j *Join) WithOn(on expr.Expr) *Join {
	c := *j
	c.On = on
	return &c
}

func (j *Join) Schema() *arrow.Schema { return j.schema }
func (j *Join) Children() []Node      { return []Node{j.Left, j.Right} }
func (j *Join) WithChildren(ch ...Node) Node {
	mustLen("Join", len(ch), 2)
	c := *j
	c.Left, c.Right = ch[0], ch[1]
	c.schema = c.makeSchema()
	return &c
}
func (j *Join) Position() Pos { return j.Pos }
func (j *Join) Describe() string {
	s := j.Kind.String() + " Join"
	if j.NullAware {
		s += " (null-aware)"
	}
	if j.BuildLeft {
		s += " (build left)"
	}
	if j.On != nil {
		s += " ON " + j.On.String()
	}
	if j.Kind == MarkJoin {
		s += " MARK " + j.Mark
	}
	if j.Window != nil {
		s += " WINDOW " + j.Window.String()
	}
	return s
}

// ---- LateralModel ----

// LateralModel applies an ML model to each row of its input (CROSS JOIN
// LATERAL m(args) AS alias(cols)): the output is the input's columns followed
// by the model's output columns, OutputRatio rows per input row.
type LateralModel struct {
	Input Node
	Model *catalog.Model
	// Name is the operator's name in plans: the model's name, or the alias
	// when one query calls a model twice.
	Name  string
	Args  []expr.Expr
	Alias string
	Out   []arrow.Field
	// Batch is the call's own dynamic batching, from LATERAL m(...) WITH
	// (max_batch = ..., max_delay_ms = ...); zero fields leave the runtime's.
	Batch  CallBatch
	schema *arrow.Schema
	Pos    Pos
}

// CallBatch is a model call's batching policy; zero fields are unset.
type CallBatch struct {
	MaxBatch int
	MaxDelay time.Duration
}

func (c CallBatch) String() string {
	var parts []string
	if c.MaxBatch > 0 {
		parts = append(parts, fmt.Sprintf("max_batch=%d", c.MaxBatch))
	}
	if c.MaxDelay > 0 {
		parts = append(parts, "max_delay="+c.MaxDelay.String())
	}
	return strings.Join(parts, " ")
}

// NewLateralModel builds the ML operator; out are its output columns.
func NewLateralModel(in Node, m *catalog.Model, name string, args []expr.Expr, alias string, out []arrow.Field, pos Pos) *LateralModel {
	fs := append(append([]arrow.Field(nil), in.Schema().Fields()...), out...)
	return &LateralModel{Input: in, Model: m, Name: name, Args: args, Alias: alias, Out: out, schema: arrow.NewSchema(fs, nil), Pos: pos}
}

func (l *LateralModel) Schema() *arrow.Schema { return l.schema }
func (l *LateralModel) Children() []Node      { return []Node{l.Input} }
func (l *LateralModel) WithChildren(ch ...Node) Node {
	mustLen("LateralModel", len(ch), 1)
	n := NewLateralModel(ch[0], l.Model, l.Name, l.Args, l.Alias, l.Out, l.Pos)
	n.Batch = l.Batch
	return n
}
func (l *LateralModel) Position() Pos { return l.Pos }
func (l *LateralModel) Describe() string {
	args := make([]string, len(l.Args))
	for i, a := range l.Args {
		args[i] = a.String()
	}
	outs := make([]string, len(l.Out))
	for i, f := range l.Out {
		outs[i] = f.Name
	}
	vs := make([]string, len(l.Model.Variants))
	for i, v := range l.Model.Variants {
		vs[i] = v.Name
	}
	s := fmt.Sprintf("LateralModel %s(%s) AS %s(%s) variants=[%s]", l.Model.Name, strings.Join(args, ", "), l.Alias, strings.Join(outs, ", "), strings.Join(vs, " "))
	if l.Name != l.Model.Name {
		s += " name=" + l.Name
	}
	if b := l.Batch.String(); b != "" {
		s += " " + b
	}
	return s
}

// ---- Aggregate ----

// WindowKind is a streaming window.
type WindowKind int

// Window kinds.
const (
	Tumble WindowKind = iota + 1
	Hop
	Session
)

func (k WindowKind) String() string {
	return [...]string{"", "TUMBLE", "HOP", "SESSION"}[k]
}

// Window groups rows by event time: Size for TUMBLE, Size and Slide for HOP,
// Gap (in Size) for SESSION.
type Window struct {
	Kind  WindowKind
	Time  expr.Expr
	Size  time.Duration
	Slide time.Duration
}

func (w *Window) String() string {
	switch w.Kind {
	case Hop:
		return fmt.Sprintf("HOP(%s, %s, %s)", w.Time, w.Size, w.Slide)
	}
	return fmt.Sprintf("%s(%s, %s)", w.Kind, w.Time, w.Size)
}

// Aggregate groups its input (optionally per window) and computes aggregates.
// Output: the group keys, then window_start and window_end when windowed, then
// the aggregates.
type Aggregate struct {
	Input      Node
	Group      []expr.Expr
	GroupNames []string
	Window     *Window
	Aggs       []*expr.Aggregate
	AggNames   []string
	schema     *arrow.Schema
	Pos        Pos
}

// NewAggregate builds a grouping.
func NewAggregate(in Node, group []expr.Expr, groupNames []string, w *Window, aggs []*expr.Aggregate, aggNames []string, pos Pos) *Aggregate {
	var fs []arrow.Field
	for i, g := range group {
		fs = append(fs, arrow.Field{Name: groupNames[i], Type: g.Type(), Nullable: true})
	}
	if w != nil {
		fs = append(fs, arrow.Field{Name: "window_start", Type: expr.Timestamp}, arrow.Field{Name: "window_end", Type: expr.Timestamp})
	}
	for i, a := range aggs {
		fs = append(fs, arrow.Field{Name: aggNames[i], Type: a.Type(), Nullable: true})
	}
	return &Aggregate{Input: in, Group: group, GroupNames: groupNames, Window: w, Aggs: aggs, AggNames: aggNames, schema: arrow.NewSchema(fs, nil), Pos: pos}
}

func (a *Aggregate) Schema() *arrow.Schema { return a.schema }
func (a *Aggregate) Children() []Node      { return []Node{a.Input} }
func (a *Aggregate) WithChildren(ch ...Node) Node {
	mustLen("Aggregate", len(ch), 1)
	return NewAggregate(ch[0], a.Group, a.GroupNames, a.Window, a.Aggs, a.AggNames, a.Pos)
}
func (a *Aggregate) Position() Pos { return a.Pos }
func (a *Aggregate) Describe() string {
	var keys []string
	for _, g := range a.Group {
		keys = append(keys, g.String())
	}
	if a.Window != nil {
		keys = append(keys, a.Window.String())
	}
	var aggs []string
	for i, x := range a.Aggs {
		aggs = append(aggs, x.String()+" AS "+a.AggNames[i])
	}
	return fmt.Sprintf("Aggregate group=[%s] aggs=[%s]", strings.Join(keys, ", "), strings.Join(aggs, ", "))
}

// ---- Union ----

// Union is UNION ALL of inputs with the same column types.
type Union struct {
	Inputs []Node
	Pos    Pos
}

func (u *Union) Schema() *arrow.Schema { return u.Inputs[0].Schema() }
func (u *Union) Children() []Node      { return u.Inputs }
func (u *Union) WithChildren(ch ...Node) Node {
	mustLen("Union", len(ch), len(u.Inputs))
	return &Union{Inputs: ch, Pos: u.Pos}
}
func (u *Union) Position() Pos    { return u.Pos }
func (u *Union) Describe() string { return "Union All" }

// ---- Limit ----

// Limit passes the first N rows after skipping Offset (OFFSET). N is
// NoLimit for an OFFSET without LIMIT.
type Limit struct {
	Input  Node
	N      int64
	Offset int64
	Pos    Pos
}

// NoLimit is Limit.N for OFFSET k alone: every row after the first k.
const NoLimit = math.MaxInt64

func (l *Limit) Schema() *arrow.Schema { return l.Input.Schema() }
func (l *Limit) Children() []Node      { return []Node{l.Input} }
func (l *Limit) WithChildren(ch ...Node) Node {
	mustLen("Limit", len(ch), 1)
	c := *l
	c.Input = ch[0]
	return &c
}
func (l *Limit) Position() Pos { return l.Pos }
func (l *Limit) Describe() string {
	s := "Limit"
	if l.N != NoLimit {
		s += fmt.Sprintf(" %d", l.N)
	}
	if l.Offset > 0 {
		s += fmt.Sprintf(" OFFSET %d", l.Offset)
	}
	return s
}

// ---- Sort ----

// SortKey is one ORDER BY item.
type SortKey struct {
	Expr expr.Expr
	Desc bool
}

// Sort orders rows (per epoch, on a stream).
type Sort struct {
	Input Node
	Keys  []SortKey
	Pos   Pos
}

func (s *Sort) Schema() *arrow.Schema { return s.Input.Schema() }
func (s *Sort) Children() []Node      { return []Node{s.Input} }
func (s *Sort) WithChildren(ch ...Node) Node {
	mustLen("Sort", len(ch), 1)
	c := *s
	c.Input = ch[0]
	return &c
}
func (s *Sort) Position() Pos { return s.Pos }
func (s *Sort) Describe() string {
	parts := make([]string, len(s.Keys))
	for i, k := range s.Keys {
		parts[i] = k.Expr.String()
		if k.Desc {
			parts[i] += " DESC"
		}
	}
	return "Sort " + strings.Join(parts, ", ")
}

// ---- Sink ----

// Sink writes the query's result: to a catalog sink for INSERT INTO, or back
// to the client (Sink nil) for a plain SELECT.
type Sink struct {
	Input Node
	Sink  *catalog.Sink
	Pos   Pos
}

func (s *Sink) Schema() *arrow.Schema { return s.Input.Schema() }
func (s *Sink) Children() []Node      { return []Node{s.Input} }
func (s *Sink) WithChildren(ch ...Node) Node {
	mustLen("Sink", len(ch), 1)
	c := *s
	c.Input = ch[0]
	return &c
}
func (s *Sink) Position() Pos { return s.Pos }
func (s *Sink) Describe() string {
	if s.Sink == nil {
		return "Sink client"
	}
	return fmt.Sprintf("Sink %s (%s)", s.Sink.Name, s.Sink.Kind)
}

// ---- printing and walking ----

func fieldNames(s *arrow.Schema) string {
	names := make([]string, len(s.Fields()))
	for i, f := range s.Fields() {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

// Format prints a plan as an indented tree; annotate, when non-nil, adds
// detail lines under each node (estimated rates, for instance).
func Format(n Node, annotate func(Node) []string) string {
	return tree(n, annotate).String()
}

func tree(n Node, annotate func(Node) []string) *treeprint.Node {
	t := &treeprint.Node{Head: n.Describe()}
	if annotate != nil {
		t.Details = annotate(n)
	}
	for _, c := range n.Children() {
		t.Children = append(t.Children, tree(c, annotate))
	}
	return t
}

// Walk visits n and its descendants depth-first, parents first, until fn
// returns false.
func Walk(n Node, fn func(Node) bool) {
	if !fn(n) {
		return
	}
	for _, c := range n.Children() {
		Walk(c, fn)
	}
}

// Transform rebuilds the tree bottom-up, replacing each node with fn's result.
func Transform(n Node, fn func(Node) Node) Node {
	return fn(MapChildren(n, func(c Node) Node { return Transform(c, fn) }))
}

// MapChildren is n with each child replaced by fn's result: n itself when
// fn changed none (a rewrite that finds nothing to do allocates nothing).
func MapChildren(n Node, fn func(Node) Node) Node {
	ch := n.Children()
	if len(ch) == 0 {
		return n
	}
	nc := make([]Node, len(ch))
	changed := false
	for i, c := range ch {
		nc[i] = fn(c)
		changed = changed || nc[i] != c
	}
	if !changed {
		return n
	}
	return n.WithChildren(nc...)
}
