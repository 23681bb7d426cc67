// Package importjb converts the JellyBean prototype's optimizer inputs (read by
// planner/jellybean) into tierflow's catalog, infrastructure and a query, keeping
// the prototype's cost model: worker names, prices, link multipliers (times the
// communication scaling factor, as cost per GB), message sizes, throughput
// ratios, measured end-to-end accuracies and P50/P75/P90 latencies. Planning the
// imported files gives the same totals as planning the prototype directly. It
// imports the planner's catalog, infra and jellybean packages only.
package importjb

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/planner/jellybean"
)

// ErrUnsupported: the prototype's inputs use something tierflow's catalog
// cannot express faithfully.
var ErrUnsupported = errors.New("cannot import")

// Result is the imported catalog, infrastructure and query text.
type Result struct {
	Catalog *catalog.Catalog
	Infra   *infra.Infra
	Query   string
	// Notes are what the importer had to assume, for the user.
	Notes []string
}

// Convert imports a loaded prototype directory.
func Convert(pr *jellybean.Prototype) (*Result, error) {
	c := &converter{pr: pr, res: &Result{Catalog: &catalog.Catalog{}, Infra: &infra.Infra{}}}
	c.res.Notes = append(c.res.Notes, pr.Notes...)
	c.infra()
	c.catalog()
	c.query()
	if len(c.errs) > 0 {
		return nil, errors.Join(c.errs...)
	}
	return c.res, nil
}

type converter struct {
	pr       *jellybean.Prototype
	res      *Result
	errs     []error
	tiers    []string
	tierOf   map[string]int
	sources  map[string]bool
	consumer map[string][]string // node -> downstream nodes
	inputs   map[string][]string // node -> upstream nodes
	outCol   map[string]string   // node -> the column its output is called
}

func (c *converter) fail(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf("%s: %w: "+format, append([]any{c.pr.Dir, ErrUnsupported}, args...)...))
}

func (c *converter) scaling() float64 {
	if s := c.pr.Config.CommCostScaling; s != 0 {
		return s
	}
	return 0
}

func (c *converter) infra() {
	in := c.res.Infra
	c.tiers = jellybean.TierNames(len(c.pr.Partition))
	c.tierOf = map[string]int{}
	for i, t := range c.tiers {
		in.Tiers = append(in.Tiers, &infra.Tier{Name: t})
		for _, w := range c.pr.Partition[i] {
			c.tierOf[w] = i
		}
	}
	in.Notes = fmt.Sprintf("Imported from the JellyBean prototype inputs in %s. One worker type per worker "+
		"(the prototype prices and profiles each worker on its own); link costs are the prototype's "+
		"multipliers times COMM_COST_SCALING_FACTOR %g, per GB.", c.pr.Dir, c.pr.Config.CommCostScaling)
	for _, w := range c.pr.Workers {
		t, ok := c.tierOf[w.Name]
		if !ok {
			c.fail("worker %s is in no tier of workers_partition.json", w.Name)
			continue
		}
		in.WorkerTypes = append(in.WorkerTypes, &infra.WorkerType{Name: w.Name, Price: w.Price})
		in.Workers = append(in.Workers, &infra.Worker{Name: w.Name, Type: w.Name, Tier: c.tiers[t]})
	}
	// The prototype reads a pair missing from its CSV files as multiplier 0:
	// the imported file says so, so that it keeps that meaning.
	in.DefaultLink = &infra.DefaultLink{CostPerGB: 0}
	// Worker links: a tier pair whose every worker pair has the same
	// multiplier becomes one tier link; otherwise every pair is kept.
	mult := map[[2]string]float64{}
	for _, l := range c.pr.WorkerLinks {
		mult[[2]string{l.From, l.To}] = l.Multiplier
	}
	tierMult := map[[2]int]float64{}
	for i := range c.tiers {
		for j := i + 1; j < len(c.tiers); j++ {
			uniform, first, set := true, 0.0, false
			for _, a := range c.pr.Partition[i] {
				for _, b := range c.pr.Partition[j] {
					m := mult[[2]string{a, b}]
					if !set {
						first, set = m, true
					} else if m != first {
						uniform = false
					}
				}
			}
			if uniform {
				tierMult[[2]int{i, j}] = first
				in.Links = append(in.Links, &infra.Link{From: c.tiers[i], To: c.tiers[j], CostPerGB: first * c.scaling()})
				continue
			}
			for _, a := range c.pr.Partition[i] {
				for _, b := range c.pr.Partition[j] {
					in.Links = append(in.Links, &infra.Link{From: a, To: b, CostPerGB: mult[[2]string{a, b}] * c.scaling()})
				}
			}
			tierMult[[2]int{i, j}] = -1
		}
	}
	// Source links: kept per pair where they differ from the tier link the
	// source would otherwise use (sources sit in the lowest tier).
	smult := map[[2]string]float64{}
	for _, l := range c.pr.SourceLinks {
		smult[[2]string{l.From, l.To}] = l.Multiplier
	}
	for _, r := range c.pr.Rates {
		for j := 1; j < len(c.tiers); j++ {
			for _, w := range c.pr.Partition[j] {
				m := smult[[2]string{r.Source, w}]
				if tm, ok := tierMult[[2]int{0, j}]; ok && tm == m {
					continue
				}
				in.Links = append(in.Links, &infra.Link{From: r.Source, To: w, CostPerGB: m * c.scaling()})
			}
		}
	}
	if c.pr.Config.LatencyOverestimateRatio != 0 && c.pr.Config.LatencyOverestimateRatio != 1 {
		c.res.Notes = append(c.res.Notes, fmt.Sprintf("latencies multiplied by LATENCY_OVERESTIMATE_RATIO %g", c.pr.Config.LatencyOverestimateRatio))
	}
}

// columnName turns an operator name into a column name: ReadImage -> image,
// ExtractImageFeature -> extract_image_feature.
func columnName(op string) string {
	s := strings.TrimPrefix(op, "Read")
	if s == "" {
		s = op
	}
	var b strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		if unicode.IsUpper(r) {
			if i > 0 && (unicode.IsLower(rs[i-1]) || (i+1 < len(rs) && unicode.IsLower(rs[i+1]) && unicode.IsUpper(rs[i-1]))) {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
		} else if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

func (c *converter) catalog() {
	cat := c.res.Catalog
	pr := c.pr
	cat.Notes = fmt.Sprintf("Imported from the JellyBean prototype inputs in %s: latencies (ms per item at "+
		"P50/P75/P90), proxy costs, accuracy profiles and the measured end-to-end accuracies are the "+
		"prototype's, unchanged. Column names and types are invented: the prototype does not describe rows.", pr.Dir)
	c.sources = map[string]bool{}
	rate := map[string]float64{}
	for _, r := range pr.Rates {
		c.sources[r.Source] = true
		rate[r.Source] = r.RPS
	}
	c.consumer = map[string][]string{}
	c.inputs = map[string][]string{}
	for _, e := range pr.Graph {
		c.consumer[e.From] = append(c.consumer[e.From], e.To)
		c.inputs[e.To] = append(c.inputs[e.To], e.From)
	}
	ratio := map[[2]string]float64{}
	for _, r := range pr.Ratios {
		ratio[[2]string{r.From, r.To}] = r.Ratio
	}
	c.outCol = map[string]string{}
	sizeDefault := func(from string) (float64, bool) {
		for _, m := range pr.MessageSizes {
			if m.From == from && m.FromVariant == "default" && m.ToVariant == "default" {
				return m.KB, true
			}
		}
		return 0, false
	}
	for _, r := range pr.Rates {
		s := r.Source
		col := columnName(s)
		c.outCol[s] = col
		kb, ok := sizeDefault(s)
		if !ok {
			c.fail("no message size for source %s", s)
		}
		for _, to := range c.consumer[s] {
			if r, ok := ratio[[2]string{s, to}]; ok && r != 1 {
				c.fail("throughput ratio %g from source %s: a source's items go one to one to its consumer in tierflow", r, s)
			}
		}
		cat.Streams = append(cat.Streams, &catalog.Stream{
			Name: s, Source: "nats", Subject: strings.ToLower(s), Format: "arrow",
			Tier: c.tiers[0], Rate: rate[s], ItemKB: kb,
			Columns: []catalog.Column{{Name: "request_id", Type: "BIGINT"}, {Name: col, Type: "BLOB"}},
		})
	}
	rows, err := pr.Profile("p75")
	if err != nil {
		c.fail("%v", err)
		return
	}
	byPct := map[string][]jellybean.ExecRow{"p75": rows}
	for _, p := range []string{"p50", "p90"} {
		if r, err := pr.Profile(p); err == nil {
			byPct[p] = r
		} else {
			c.res.Notes = append(c.res.Notes, fmt.Sprintf("no %s execution profile: the P75 latencies stand in for it", p))
			byPct[p] = rows
		}
	}
	lat := map[string]map[string]map[string]*catalog.Latency{} // op -> variant -> worker
	over := pr.Config.LatencyOverestimateRatio
	if over == 0 {
		over = 1
	}
	for pct, rs := range byPct {
		for _, r := range rs {
			if lat[r.Operator] == nil {
				lat[r.Operator] = map[string]map[string]*catalog.Latency{}
			}
			if lat[r.Operator][r.Variant] == nil {
				lat[r.Operator][r.Variant] = map[string]*catalog.Latency{}
			}
			l := lat[r.Operator][r.Variant][r.Worker]
			if l == nil {
				l = &catalog.Latency{}
				lat[r.Operator][r.Variant][r.Worker] = l
			}
			v := r.LatencyMs * over
			switch pct {
			case "p50":
				l.P50 = v
			case "p75":
				l.P75 = v
			case "p90":
				l.P90 = v
			}
		}
	}
	accOf := map[string]*jellybean.AccuracyOp{}
	for i := range pr.Accuracy.Operators {
		accOf[pr.Accuracy.Operators[i].Name] = &pr.Accuracy.Operators[i]
	}
	// Operators in the order of first appearance in the graph, like the
	// prototype.
	seen := map[string]bool{}
	for _, e := range pr.Graph {
		for _, n := range []string{e.From, e.To} {
			if seen[n] || c.sources[n] {
				continue
			}
			seen[n] = true
			c.outCol[n] = columnName(n)
			cat.Models = append(cat.Models, c.model(n, accOf[n], lat[n], ratio))
		}
	}
	if e := pr.Accuracy.EndToEnd; e != nil {
		sink := cat.Model(pr.Accuracy.Sink)
		if sink == nil {
			sink = cat.Model(pr.Requirement.Sink)
		}
		if sink == nil {
			c.fail("end-to-end accuracies for sink %q, which is no operator", pr.Accuracy.Sink)
		} else {
			ee := &catalog.EndToEnd{Models: e.Operators}
			for _, r := range e.Accuracy {
				ee.Rows = append(ee.Rows, catalog.EndToEndRow{Variants: r.Variants, Accuracy: r.Accuracy})
			}
			sink.EndToEnd = ee
		}
	}
}

func (c *converter) model(name string, ao *jellybean.AccuracyOp, lat map[string]map[string]*catalog.Latency, ratio map[[2]string]float64) *catalog.Model {
	m := &catalog.Model{Name: name, Task: "imported"}
	for _, u := range c.inputs[name] {
		m.Inputs = append(m.Inputs, catalog.Column{Name: c.outCol[u], Type: "BLOB"})
	}
	m.Outputs = []catalog.Column{{Name: columnName(name), Type: "BLOB"}}
	if len(c.consumer[name]) > 1 {
		c.fail("operator %s feeds %d operators: the query language has no common table expressions yet", name, len(c.consumer[name]))
	}
	for _, to := range c.consumer[name] {
		if r, ok := ratio[[2]string{name, to}]; ok && r != 1 {
			m.OutputRatio = r
		}
	}
	var variants []string
	if ao != nil {
		for v := range ao.Cost {
			variants = append(variants, v)
		}
		for v := range ao.Accuracy {
			if _, ok := ao.Cost[v]; !ok {
				variants = append(variants, v)
			}
		}
		// The prototype orders variants by proxy cost.
		sort.Slice(variants, func(i, j int) bool {
			ci, cj := ao.Cost[variants[i]], ao.Cost[variants[j]]
			return ci < cj || ci == cj && variants[i] < variants[j]
		})
		if len(ao.Inputs) > 0 && !equalStrings(ao.Inputs, c.inputs[name]) {
			c.fail("operator %s: accuracy inputs %v differ from its graph inputs %v", name, ao.Inputs, c.inputs[name])
		}
	} else {
		for v := range lat {
			variants = append(variants, v)
		}
		sort.Strings(variants)
	}
	for _, vn := range variants {
		v := &catalog.Variant{Name: vn, Latency: map[string]catalog.Latency{}}
		for w, l := range lat[vn] {
			v.Latency[w] = *l
		}
		if ao != nil {
			v.ProxyCost = ao.Cost[vn]
			for _, s := range ao.Accuracy[vn] {
				if len(s.InputAccuracies) == 0 {
					v.Accuracy = s.OutputAccuracy
					continue
				}
				v.Profile = append(v.Profile, catalog.ProfileRow{Inputs: s.InputAccuracies, Output: s.OutputAccuracy})
			}
		}
		v.OutputKB = c.outputKB(name, vn)
		m.Variants = append(m.Variants, v)
	}
	return m
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// outputKB is the message size of op's variant on its out-edge.
func (c *converter) outputKB(op, variant string) float64 {
	var def, exact float64
	var haveDef, haveExact bool
	for _, m := range c.pr.MessageSizes {
		if m.From != op {
			continue
		}
		if m.ToVariant != "default" {
			c.fail("message size %s -> %s depends on the receiver's variant %q: not expressible", m.From, m.To, m.ToVariant)
		}
		switch m.FromVariant {
		case variant:
			exact, haveExact = m.KB, true
		case "default":
			def, haveDef = m.KB, true
		}
	}
	if haveExact {
		return exact
	}
	if !haveDef && len(c.consumer[op]) > 0 {
		c.fail("no message size for %s variant %s", op, variant)
	}
	return def
}

// query writes the workflow as nested SELECTs: a chain is a run of CROSS
// JOIN LATERAL calls; an operator with several inputs joins its input
// branches on request_id.
func (c *converter) query() {
	sink := c.pr.Requirement.Sink
	if sink == "" {
		sink = c.pr.Accuracy.Sink
	}
	if sink == "" {
		c.fail("no sink in accuracy_requirement.json")
		return
	}
	alias := 0
	next := func() string {
		alias++
		return fmt.Sprintf("t%d", alias)
	}
	// branch returns a FROM clause producing node's output as column
	// c.outCol[node] next to request_id, and the alias that qualifies them.
	var branch func(node string, indent string) (string, string)
	branch = func(node, indent string) (string, string) {
		ins := c.inputs[node]
		if c.sources[node] {
			a := next()
			return fmt.Sprintf("%s AS %s", node, a), a
		}
		if len(ins) == 1 {
			from, a := branch(ins[0], indent)
			out := next()
			return fmt.Sprintf("%s\n%sCROSS JOIN LATERAL %s(%s.%s) AS %s(%s)", from, indent, node, a, c.outCol[ins[0]], out, c.outCol[node]), out
		}
		var parts, args []string
		var first string
		for i, u := range ins {
			sub := next()
			from, a := branch(u, indent+"    ")
			parts = append(parts, fmt.Sprintf("(\n%s  SELECT %s.request_id, %s.%s\n%s  FROM %s\n%s) AS %s", indent, firstAlias(from), a, c.outCol[u], indent, from, indent, sub))
			args = append(args, sub+"."+c.outCol[u])
			if i == 0 {
				first = sub
			} else {
				parts[i] = fmt.Sprintf("%sJOIN %s ON %s.request_id = %s.request_id", indent, parts[i], first, sub)
			}
		}
		out := next()
		return fmt.Sprintf("%s\n%s\n%sCROSS JOIN LATERAL %s(%s) AS %s(%s)", parts[0], strings.Join(parts[1:], "\n"), indent, node, strings.Join(args, ", "), out, c.outCol[node]), out
	}
	from, a := branch(sink, "")
	// The sources' own rates stand; the objective restates the smallest, which
	// is the sink's demand when every ratio is 1 (a source of the prototype
	// feeds its operator one to one).
	rates := 0.0
	for i, r := range c.pr.Rates {
		if i == 0 || r.RPS < rates {
			rates = r.RPS
		}
	}
	c.res.Query = fmt.Sprintf(`-- Imported from the JellyBean prototype inputs in %s.
-- Plan it with: tierflow explain --catalog catalog.yaml --infra infra.yaml query.sql
SELECT %s.request_id, %s.%s
FROM %s
WITH (ACCURACY >= %g, THROUGHPUT >= %g PER SECOND);
`, c.pr.Dir, firstAlias(from), a, c.outCol[sink], from, c.pr.Requirement.Threshold, rates)
}

// firstAlias is the alias of the first relation of a FROM clause ("X AS t1
// ..." or "(...) AS t1 ...").
func firstAlias(from string) string {
	depth := 0
	for i := 0; i < len(from); i++ {
		switch from[i] {
		case '(':
			depth++
		case ')':
			depth--
		}
		if depth == 0 && strings.HasPrefix(from[i:], " AS ") {
			rest := from[i+4:]
			end := strings.IndexAny(rest, " \n(")
			if end < 0 {
				end = len(rest)
			}
			return rest[:end]
		}
	}
	return ""
}
