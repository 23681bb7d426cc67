package dataflow

import (
	"errors"
	"fmt"
)

// Graph describes a dataflow: operators, the edges between their ports, and
// where each operator instance runs. It is a plain value so that a physical
// plan fragment (operator -> workers with traffic shares) translates into it
// directly; every worker of a query builds from the same Graph.
type Graph struct {
	// Query names the dataflow on the wire (ChannelID.Query).
	Query     string
	Operators []OperatorSpec
	Edges     []Edge
}

// OperatorSpec describes one logical operator and its instances.
type OperatorSpec struct {
	Name    string
	Inputs  int
	Outputs int
	// Connectivity[i][o] says whether data on input i can lead to output on
	// output o; an output's frontier only waits for connected inputs. Nil
	// connects every input to every output.
	Connectivity [][]bool
	// Workers[k] is the worker that runs instance k; len(Workers) is the
	// operator's parallelism. Nil means one instance on worker 0. Several
	// instances may share a worker.
	Workers []int
	// New makes the logic of one instance. It is called once per instance,
	// on the worker that runs it, at build time.
	New func(Instance) (Operator, error)
}

// Parallelism is the number of instances.
func (s *OperatorSpec) Parallelism() int {
	if len(s.Workers) == 0 {
		return 1
	}
	return len(s.Workers)
}

// WorkerOf is the worker that runs instance k.
func (s *OperatorSpec) WorkerOf(k int) int {
	if len(s.Workers) == 0 {
		return 0
	}
	return s.Workers[k]
}

// Instance identifies one operator instance to its constructor.
type Instance struct {
	Query       string
	Operator    string
	OperatorID  int // index into Graph.Operators
	Index       int // instance index, 0 <= Index < Parallelism
	Parallelism int
	Worker      int
}

// Port is one input or output of an operator.
type Port struct {
	Op   int // index into Graph.Operators
	Port int
}

// EdgeKind says how an edge routes batches from sender instances to
// receiver instances.
type EdgeKind uint8

const (
	// Pipeline sends instance k's output to instance k of the receiver
	// (equal parallelism), or every sender to the single receiver instance
	// (merge). Records are passed on untouched.
	Pipeline EdgeKind = iota
	// Exchange hash-partitions every batch's rows over the receiver
	// instances with Edge.Partition.
	Exchange
	// Broadcast sends every batch to every receiver instance.
	Broadcast
	// Balance sends whole batches to receiver instances in proportion to
	// Edge.Shares (rows), e.g. the traffic shares of a physical plan.
	Balance
)

func (k EdgeKind) String() string {
	switch k {
	case Pipeline:
		return "pipeline"
	case Exchange:
		return "exchange"
	case Broadcast:
		return "broadcast"
	case Balance:
		return "balance"
	}
	return fmt.Sprintf("edgekind(%d)", uint8(k))
}

// Edge connects an output port to an input port.
type Edge struct {
	From Port
	To   Port
	Kind EdgeKind
	// Partition assigns rows to receiver instances (Exchange only).
	Partition PartitionFunc
	// Shares weights receiver instances (Balance only; nil = equal).
	Shares []float64
}

// AddOperator appends spec and returns its index.
func (g *Graph) AddOperator(spec OperatorSpec) int {
	g.Operators = append(g.Operators, spec)
	return len(g.Operators) - 1
}

// Connect adds a Pipeline edge from output port out of operator from to input
// port in of operator to, and returns its index.
func (g *Graph) Connect(from, out, to, in int) int {
	return g.AddEdge(Edge{From: Port{from, out}, To: Port{to, in}, Kind: Pipeline})
}

// AddEdge appends e and returns its index.
func (g *Graph) AddEdge(e Edge) int {
	g.Edges = append(g.Edges, e)
	return len(g.Edges) - 1
}

// Workers is the number of workers the graph names (highest index + 1).
func (g *Graph) Workers() int {
	n := 1
	for i := range g.Operators {
		for _, w := range g.Operators[i].Workers {
			n = max(n, w+1)
		}
	}
	return n
}

// Validate checks the graph: ports in range, every input fed, routing
// compatible with the parallelism at both ends, no cycles. All problems are
// reported at once, each naming the operator or edge.
func (g *Graph) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidGraph}, args...)...))
	}
	for i := range g.Operators {
		s := &g.Operators[i]
		name := fmt.Sprintf("operator %d (%s)", i, s.Name)
		if s.Inputs < 0 || s.Outputs < 0 {
			bad("%s: negative port count", name)
		}
		if s.New == nil {
			bad("%s: no constructor", name)
		}
		if s.Connectivity != nil {
			if len(s.Connectivity) != s.Inputs {
				bad("%s: connectivity has %d rows for %d inputs", name, len(s.Connectivity), s.Inputs)
			}
			for r, row := range s.Connectivity {
				if len(row) != s.Outputs {
					bad("%s: connectivity row %d has %d entries for %d outputs", name, r, len(row), s.Outputs)
				}
			}
		}
		if s.Workers != nil && len(s.Workers) == 0 {
			bad("%s: empty worker list", name)
		}
		for k, w := range s.Workers {
			if w < 0 {
				bad("%s: instance %d on negative worker %d", name, k, w)
			}
		}
	}
	fed := make(map[Port]bool)
	for i, e := range g.Edges {
		name := fmt.Sprintf("edge %d", i)
		if e.From.Op < 0 || e.From.Op >= len(g.Operators) || e.To.Op < 0 || e.To.Op >= len(g.Operators) {
			bad("%s: operator index out of range (%d -> %d)", name, e.From.Op, e.To.Op)
			continue
		}
		src, dst := &g.Operators[e.From.Op], &g.Operators[e.To.Op]
		name = fmt.Sprintf("edge %d (%s.out%d -> %s.in%d)", i, src.Name, e.From.Port, dst.Name, e.To.Port)
		if e.From.Port < 0 || e.From.Port >= src.Outputs {
			bad("%s: %s has %d outputs", name, src.Name, src.Outputs)
		}
		if e.To.Port < 0 || e.To.Port >= dst.Inputs {
			bad("%s: %s has %d inputs", name, dst.Name, dst.Inputs)
		}
		fed[e.To] = true
		ps, pr := src.Parallelism(), dst.Parallelism()
		switch e.Kind {
		case Pipeline:
			if ps != pr && pr != 1 {
				bad("%s: pipeline from %d to %d instances (needs equal parallelism or one receiver; use exchange or balance)", name, ps, pr)
			}
		case Exchange:
			if e.Partition == nil {
				bad("%s: exchange without a partition function", name)
			}
		case Broadcast:
		case Balance:
			if e.Shares != nil && len(e.Shares) != pr {
				bad("%s: %d shares for %d receiver instances", name, len(e.Shares), pr)
			}
			total := 0.0
			for _, s := range e.Shares {
				if s < 0 {
					bad("%s: negative share %v", name, s)
				}
				total += s
			}
			if e.Shares != nil && total <= 0 {
				bad("%s: shares sum to %v", name, total)
			}
		default:
			bad("%s: unknown kind %v", name, e.Kind)
		}
	}
	for i := range g.Operators {
		for p := 0; p < g.Operators[i].Inputs; p++ {
			if !fed[Port{i, p}] {
				bad("operator %d (%s): input %d has no incoming edge", i, g.Operators[i].Name, p)
			}
		}
	}
	if cyc := g.cycle(); cyc != "" {
		bad("cycle through %s (dataflow graphs must be acyclic)", cyc)
	}
	if len(errs) == 0 {
		return nil
	}
	return errors.Join(errs...)
}

// cycle returns the name of an operator on a cycle, or "".
func (g *Graph) cycle() string {
	const (
		white = iota
		grey
		black
	)
	succ := make([][]int, len(g.Operators))
	for _, e := range g.Edges {
		if e.From.Op >= 0 && e.From.Op < len(g.Operators) && e.To.Op >= 0 && e.To.Op < len(g.Operators) {
			succ[e.From.Op] = append(succ[e.From.Op], e.To.Op)
		}
	}
	color := make([]int, len(g.Operators))
	var visit func(int) string
	visit = func(n int) string {
		color[n] = grey
		for _, m := range succ[n] {
			switch color[m] {
			case grey:
				return g.Operators[m].Name
			case white:
				if c := visit(m); c != "" {
					return c
				}
			}
		}
		color[n] = black
		return ""
	}
	for n := range g.Operators {
		if color[n] == white {
			if c := visit(n); c != "" {
				return c
			}
		}
	}
	return ""
}

// sendersTo lists the sender instances of edge e that feed receiver
// instance r.
func (g *Graph) sendersTo(e *Edge, r int) []int {
	ps := g.Operators[e.From.Op].Parallelism()
	pr := g.Operators[e.To.Op].Parallelism()
	if e.Kind == Pipeline && ps == pr && pr != 1 {
		return []int{r}
	}
	out := make([]int, ps)
	for i := range out {
		out[i] = i
	}
	return out
}

// receiversOf lists the receiver instances edge e connects sender s to.
func (g *Graph) receiversOf(e *Edge, s int) []int {
	ps := g.Operators[e.From.Op].Parallelism()
	pr := g.Operators[e.To.Op].Parallelism()
	if e.Kind == Pipeline {
		if ps == pr {
			return []int{s}
		}
		return []int{0}
	}
	out := make([]int, pr)
	for i := range out {
		out[i] = i
	}
	return out
}
