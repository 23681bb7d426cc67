package deploy

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/planner/lower"
	"github.com/tierflow/tierflow/planner/physical"
)

// Error kinds.
var (
	// ErrNoWorkers: no worker can take an operator.
	ErrNoWorkers = errors.New("deploy: no worker to place on")
	// ErrMismatch: a graph does not have the shape its placement was made for.
	ErrMismatch = errors.New("deploy: graph does not match placement")
)

// Worker is a worker as the placer sees it.
type Worker struct {
	Name     string `json:"name"`
	Tier     string `json:"tier"`
	Location string `json:"location,omitempty"`
	Type     string `json:"type,omitempty"`
	// Threads is the intra-op threads of its model sessions (0: unknown).
	Threads int `json:"threads,omitempty"`
}

// Placement says where every operator instance of one query runs.
type Placement struct {
	Query string `json:"query"`
	// Workers names the query's dataflow workers: index i is worker i.
	Workers   []string       `json:"workers"`
	Operators []OperatorPlan `json:"operators"`
	Edges     []EdgePlan     `json:"edges"`
}

// OperatorPlan places one dataflow operator.
type OperatorPlan struct {
	Name string `json:"name"`
	// Workers[k] runs instance k (indices into Placement.Workers).
	Workers []int  `json:"workers"`
	Tier    string `json:"tier"`
	// Stage is the plan's stage the operator belongs to (a model call and
	// the relational operators fused with it, or a source), when the
	// optimizer placed the query: what EXPLAIN ANALYZE holds its
	// measurements against.
	Stage string `json:"stage,omitempty"`
}

// EdgePlan routes one dataflow edge.
type EdgePlan struct {
	// From and To are the operators the edge connects.
	From int    `json:"from"`
	To   int    `json:"to"`
	Kind string `json:"kind"` // pipeline, exchange, broadcast, balance
	// Keys are the hashed columns of an exchange, KeyNames their names in
	// the sending operator's output (what EXPLAIN shows).
	Keys     []int    `json:"keys,omitempty"`
	KeyNames []string `json:"key_names,omitempty"`
	// Shares weight a balance's receiver instances.
	Shares []float64 `json:"shares,omitempty"`
}

// LinkEnds names the workers at the two ends of a link of edge, from
// instance sender of its source operator to instance receiver of its
// target ("" where the placement does not say): the names a link's relay
// subjects carry, so that each worker may publish only as itself.
func (p *Placement) LinkEnds(edge, sender, receiver int) (from, to string) {
	if edge < 0 || edge >= len(p.Edges) {
		return "", ""
	}
	e := p.Edges[edge]
	return p.instanceWorker(e.From, sender), p.instanceWorker(e.To, receiver)
}

// instanceWorker is the name of the worker that runs instance i of
// operator op ("" where the placement does not say).
func (p *Placement) instanceWorker(op, i int) string {
	if op < 0 || op >= len(p.Operators) || i < 0 || i >= len(p.Operators[op].Workers) {
		return ""
	}
	if wi := p.Operators[op].Workers[i]; wi >= 0 && wi < len(p.Workers) {
		return p.Workers[wi]
	}
	return ""
}

// Options steer placement.
type Options struct {
	// Tiers in order, lowest (sources) first. Required.
	Tiers []string
	// SourceTier is where streams without a tier sit (default Tiers[0]).
	SourceTier string
	// Physical and Lowered, when set, place every stage where the optimizer
	// put it, with its traffic shares.
	Physical *physical.Plan
	Lowered  *lower.Result
	// Load is how many operator instances of other running queries each
	// worker runs. A tier's least loaded worker comes first, so that what
	// runs once (a file's scan, a global aggregate, the sink) goes where
	// the cluster's other queries are not; equal loads keep name order.
	Load map[string]int
}

// Place computes the placement of g (built by operators/exec from plan) on
// workers.
//
// Without a physical plan, it follows JellyBean's shape by default: a scan
// runs once on a worker of its stream's tier, stateless operators (columns,
// filter, project) and stream-table joins stay on the workers of their input
// (fused, no network hop), keyed aggregates run on every worker of the next
// tier up, hash-exchanged by their group columns, and global operators (sort,
// limit, union) and the sink run once on a worker of the top tier, where the
// results leave for the client.
func Place(query string, g *dataflow.Graph, plan *logical.Plan, workers []Worker, o Options) (*Placement, error) {
	if len(o.Tiers) == 0 {
		// No tier has a worker: none has registered with the coordinator.
		return nil, fmt.Errorf("%w: no worker has registered with the coordinator yet (start one: tierflow worker --nats <its NATS URL> --tier edge)", ErrNoWorkers)
	}
	if o.SourceTier == "" {
		o.SourceTier = o.Tiers[0]
	}
	nodes, err := Nodes(g, plan)
	if err != nil {
		return nil, err
	}
	ws := ByLoad(workers, o.Load)
	pl := &placer{query: query, g: g, nodes: nodes, workers: ws, o: o, used: map[string]int{}, split: map[int][][]int{}}
	pl.p = &Placement{Query: query, Operators: make([]OperatorPlan, len(g.Operators)), Edges: make([]EdgePlan, len(g.Edges))}
	if o.Physical != nil && o.Lowered != nil {
		pl.stages = stageIndex(o.Lowered)
	}
	inputs := make([][]int, len(g.Operators)) // edge indices by target input port
	for i := range g.Operators {
		inputs[i] = make([]int, g.Operators[i].Inputs)
	}
	for ei, e := range g.Edges {
		if e.To.Op < len(inputs) && e.To.Port < len(inputs[e.To.Op]) {
			inputs[e.To.Op][e.To.Port] = ei
		}
	}
	// exec adds operators after their inputs, so index order is topological.
	for i := range g.Operators {
		if err := pl.operator(i, inputs[i]); err != nil {
			return nil, err
		}
	}
	for i, e := range g.Edges {
		pl.p.Edges[i].From, pl.p.Edges[i].To = e.From.Op, e.To.Op
	}
	return pl.p, nil
}

// ByLoad orders workers by load (the fewest instances of other queries
// first), then by name: the order a placement takes workers in.
func ByLoad(workers []Worker, load map[string]int) []Worker {
	ws := slices.Clone(workers)
	sort.SliceStable(ws, func(i, j int) bool {
		if li, lj := load[ws[i].Name], load[ws[j].Name]; li != lj {
			return li < lj
		}
		return ws[i].Name < ws[j].Name
	})
	return ws
}

type placer struct {
	query   string
	g       *dataflow.Graph
	nodes   []logical.Node
	workers []Worker
	o       Options
	p       *Placement
	used    map[string]int
	stages  map[logical.Node]*lower.Stage
	// split holds, by operator, the sets of its output columns its
	// instances' rows are split by (a row with the same values on a set is
	// always in the same instance): a partitioned join's keys, carried
	// through what is fused after it (place_join.go).
	split map[int][][]int
}

// index returns the dataflow worker index of worker w, adding it on first use.
func (pl *placer) index(w Worker) int {
	if i, ok := pl.used[w.Name]; ok {
		return i
	}
	i := len(pl.p.Workers)
	pl.used[w.Name] = i
	pl.p.Workers = append(pl.p.Workers, w.Name)
	return i
}

func (pl *placer) onTier(tier string) []Worker {
	var out []Worker
	for _, w := range pl.workers {
		if w.Tier == tier {
			out = append(out, w)
		}
	}
	return out
}

func (pl *placer) tierIndex(t string) int {
	for i, n := range pl.o.Tiers {
		if n == t {
			return i
		}
	}
	return -1
}

// tierFrom returns the first tier at or above from (in direction dir) that
// has workers, falling back the other way.
func (pl *placer) tierFrom(from int, dir int) (string, error) {
	for _, d := range []int{dir, -dir} {
		for i := from; i >= 0 && i < len(pl.o.Tiers); i += d {
			if len(pl.onTier(pl.o.Tiers[i])) > 0 {
				return pl.o.Tiers[i], nil
			}
		}
	}
	return "", fmt.Errorf("%w: no worker registered on any tier of %v", ErrNoWorkers, pl.o.Tiers)
}

func (pl *placer) place(op int, tier string, ws []Worker) {
	idx := make([]int, len(ws))
	for k, w := range ws {
		idx[k] = pl.index(w)
	}
	pl.p.Operators[op] = OperatorPlan{Name: pl.g.Operators[op].Name, Workers: idx, Tier: tier}
}

// placeScan places a scan on tier t: a file is read once (several
// instances of one reader would each read all of it), so a scan runs once,
// or, over a stream of several partitions (a glob's files, operators/exec),
// as one instance per partition, spread over the tier's workers in turn.
// The partitions, not the workers, decide which rows are late, so the
// spread changes only the speed.
func (pl *placer) placeScan(i int, t string) {
	ws := pl.onTier(t)
	parts := pl.g.Operators[i].Parallelism()
	inst := make([]Worker, parts)
	for k := range inst {
		inst[k] = ws[k%len(ws)]
	}
	pl.place(i, t, inst)
}

func (pl *placer) operator(i int, in []int) error {
	spec := pl.g.Operators[i]
	node := pl.nodes[i]
	if pl.stages != nil {
		if ok, err := pl.fromPlan(i, in); ok || err != nil {
			if st := pl.stages[node]; st != nil {
				pl.p.Operators[i].Stage = st.Name
			}
			return err
		}
	}
	first := func() OperatorPlan { return pl.p.Operators[pl.g.Edges[in[0]].From.Op] }
	switch {
	case strings.HasPrefix(spec.Name, "scan "):
		tier := pl.o.SourceTier
		if s, ok := node.(*logical.Scan); ok && s.Stream != nil && s.Stream.Tier != "" {
			tier = s.Stream.Tier
		}
		t, err := pl.tierFrom(max(pl.tierIndex(tier), 0), +1)
		if err != nil {
			return err
		}
		pl.placeScan(i, t)
		return nil
	case rowLocal(spec.Name) || spec.Name == PartialAggregate:
		up := first()
		pl.p.Operators[i] = OperatorPlan{Name: spec.Name, Workers: up.Workers, Tier: up.Tier}
		pl.p.Edges[in[0]] = EdgePlan{Kind: "pipeline"}
		return nil
	case spec.Name == "join" && len(in) == 2:
		up := first()
		pl.p.Operators[i] = OperatorPlan{Name: spec.Name, Workers: up.Workers, Tier: up.Tier}
		pl.p.Edges[in[0]] = EdgePlan{Kind: "pipeline"}
		pl.p.Edges[in[1]] = EdgePlan{Kind: "broadcast"}
		return nil
	case spec.Name == "aggregate" || spec.Name == exec.SpillingAggregate:
		// A spilling GROUP BY's instances each spill their keys' share.
		up := first()
		t, err := pl.tierFrom(min(pl.tierIndex(up.Tier)+1, len(pl.o.Tiers)-1), +1)
		if err != nil {
			return err
		}
		ws := pl.onTier(t)
		keys := groupColumns(node)
		if keys == nil {
			ws = ws[:1]
		}
		pl.place(i, t, ws)
		if len(ws) > 1 {
			pl.p.Edges[in[0]] = EdgePlan{Kind: "exchange", Keys: keys, KeyNames: inputNames(node, 0, keys)}
		} else {
			pl.p.Edges[in[0]] = EdgePlan{Kind: "pipeline"}
		}
		return nil
	case strings.HasPrefix(spec.Name, "model "):
		// A model call without a plan goes to the top tier, where the
		// bigger machines are, on all its workers with equal shares.
		t, err := pl.tierFrom(len(pl.o.Tiers)-1, -1)
		if err != nil {
			return err
		}
		ws := pl.onTier(t)
		pl.place(i, t, ws)
		for _, e := range in {
			pl.p.Edges[e] = EdgePlan{Kind: "pipeline"}
			if len(ws) > 1 {
				pl.p.Edges[e] = EdgePlan{Kind: "balance"}
			}
		}
		return nil
	}
	// sort, limit, union, sink and anything else: once, at the top.
	t, err := pl.tierFrom(len(pl.o.Tiers)-1, -1)
	if err != nil {
		return err
	}
	pl.place(i, t, pl.onTier(t)[:1])
	for _, e := range in {
		pl.p.Edges[e] = EdgePlan{Kind: "pipeline"}
	}
	return nil
}

// groupColumns returns the input columns an aggregate groups by, or nil when
// it groups by computed expressions (or nothing) and must run once.
func groupColumns(n logical.Node) []int {
	a, ok := n.(*logical.Aggregate)
	if !ok || len(a.Group) == 0 {
		return nil
	}
	return columns(a.Group)
}

// keyColumns returns the input columns a keyed operator's instances split
// its rows by: an aggregate's group columns, or the PARTITION BY columns
// every window function of a SELECT shares (a Top-N's, an OVER's): each
// key's rows then all reach one instance. nil: it must run once.
func keyColumns(n logical.Node) []int {
	w, ok := n.(*logical.WindowFuncs)
	if !ok {
		return groupColumns(n)
	}
	var keys []int
	for i, f := range w.Funcs {
		cols := columns(f.Partition)
		if cols == nil {
			return nil
		}
		if i == 0 {
			keys = cols
			continue
		}
		keys = slices.DeleteFunc(keys, func(k int) bool { return !slices.Contains(cols, k) })
	}
	if len(keys) == 0 {
		return nil
	}
	return keys
}

// columns returns the input columns es are, or nil when one is computed
// (or there are none).
func columns(es []expr.Expr) []int {
	if len(es) == 0 {
		return nil
	}
	var cols []int
	for _, e := range es {
		c, ok := e.(*expr.Column)
		if !ok {
			return nil
		}
		cols = append(cols, c.Index)
	}
	return cols
}

// inputNames are the names of columns cols of n's input port.
func inputNames(n logical.Node, port int, cols []int) []string {
	if ch := n.Children(); port < len(ch) {
		return columnNames(ch[port], cols)
	}
	return nil
}

// rowLocal reports whether the operator named name answers each row alone
// (a projection, a filter, a model call's labels): its instances may each
// take any share of the rows.
func rowLocal(name string) bool {
	return name == "columns" || name == "filter" || name == "project" || strings.HasPrefix(name, "labels ") || strings.HasPrefix(name, "adapt ")
}

// Apply sets g's placement: the query name, every operator's workers and
// every edge's routing. It checks that g has the shape p was computed for.
func (p *Placement) Apply(g *dataflow.Graph) error {
	if len(g.Operators) != len(p.Operators) || len(g.Edges) != len(p.Edges) {
		return fmt.Errorf("%w: %d operators and %d edges, placement has %d and %d", ErrMismatch, len(g.Operators), len(g.Edges), len(p.Operators), len(p.Edges))
	}
	for i := range g.Operators {
		if g.Operators[i].Name != p.Operators[i].Name {
			return fmt.Errorf("%w: operator %d is %q, placement has %q", ErrMismatch, i, g.Operators[i].Name, p.Operators[i].Name)
		}
	}
	g.Query = p.Query
	for i := range g.Operators {
		g.Operators[i].Workers = append([]int(nil), p.Operators[i].Workers...)
	}
	for i, e := range p.Edges {
		ge := &g.Edges[i]
		switch e.Kind {
		case "pipeline", "":
			ge.Kind = dataflow.Pipeline
		case "exchange":
			ge.Kind, ge.Partition = dataflow.Exchange, dataflow.HashColumns(e.Keys...)
		case "broadcast":
			ge.Kind = dataflow.Broadcast
		case "balance":
			ge.Kind, ge.Shares = dataflow.Balance, append([]float64(nil), e.Shares...)
		default:
			return fmt.Errorf("%w: edge %d has unknown kind %q", ErrMismatch, i, e.Kind)
		}
	}
	return g.Validate()
}

// WorkerIndex is the dataflow index of the named worker, or -1 when the
// placement gives it nothing to run.
func (p *Placement) WorkerIndex(name string) int {
	for i, n := range p.Workers {
		if n == name {
			return i
		}
	}
	return -1
}

// TierOf returns the tier of the worker running instance k of operator op.
func (p *Placement) TierOf(op int) string { return p.Operators[op].Tier }

// Describe prints the placement one operator per line, for logs and tests.
func (p *Placement) Describe() string {
	var b strings.Builder
	for i, o := range p.Operators {
		var names []string
		for _, w := range o.Workers {
			names = append(names, p.Workers[w])
		}
		fmt.Fprintf(&b, "%d %s @%s %s\n", i, o.Name, o.Tier, strings.Join(names, ","))
	}
	for i, e := range p.Edges {
		fmt.Fprintf(&b, "edge %d %s", i, e.Kind)
		if len(e.Keys) > 0 {
			fmt.Fprintf(&b, " keys=%v", e.Keys)
		}
		if len(e.KeyNames) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(e.KeyNames, ", "))
		}
		if len(e.Shares) > 0 {
			fmt.Fprintf(&b, " shares=%v", e.Shares)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// endTiers returns the tiers of edge e's two operators.
func (p *Placement) endTiers(e int) (string, string) {
	ed := p.Edges[e]
	if ed.From >= len(p.Operators) || ed.To >= len(p.Operators) {
		return "?", "?"
	}
	return p.Operators[ed.From].Tier, p.Operators[ed.To].Tier
}

// StageWorkers are, by the optimizer's stage name, the workers the stage's
// operators run their instances on, each once, in the order they first
// take one: where the placement runs a stage wider than the plan gave it
// (a join of two streams split over its inputs' instances, place_join.go),
// this is what EXPLAIN's plan shows. Stages the placement did not place
// from the plan are absent.
func (p *Placement) StageWorkers() map[string][]string {
	out := map[string][]string{}
	for _, o := range p.Operators {
		if o.Stage == "" {
			continue
		}
		for _, wi := range o.Workers {
			if wi < 0 || wi >= len(p.Workers) {
				continue
			}
			if name := p.Workers[wi]; !slices.Contains(out[o.Stage], name) {
				out[o.Stage] = append(out[o.Stage], name)
			}
		}
	}
	return out
}
