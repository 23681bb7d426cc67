// Package infra owns the infrastructure specification: tiers in order (edge <
// hub < cloud) with their location fan-out, worker types (vCPUs, GPU, memory,
// hourly price), workers, links between tiers (cost per GB, bandwidth cap) and
// the tier where sources sit. It loads and saves the YAML form, reporting every
// problem at once as file:line:col. It must not import the optimizer, operators,
// dataflow or anything that runs.
package infra

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/tierflow/tierflow/planner/internal/yamlx"
)

// ErrInvalid is the kind of every problem in an infrastructure file.
var ErrInvalid = yamlx.ErrInvalid

// Pos is a position in an infrastructure file.
type Pos = yamlx.Pos

// Infra is one partition of a tiered infrastructure (JellyBean section 3).
type Infra struct {
	Notes string `yaml:"notes,omitempty"`
	// Tiers, lowest (where the data sources are) first.
	Tiers       []*Tier       `yaml:"tiers"`
	WorkerTypes []*WorkerType `yaml:"worker_types"`
	Workers     []*Worker     `yaml:"workers"`
	Links       []*Link       `yaml:"links,omitempty"`
	// DefaultLink prices the traffic between two tiers that no link names.
	// Without it such a pair is an error in the file: traffic over it would
	// cost nothing, silently. JellyBean's prototype reads a pair missing from
	// its CSV files as multiplier 0; files imported from it say so here.
	DefaultLink *DefaultLink `yaml:"default_link,omitempty"`
	// SourceTier is where a stream sits when the catalog does not say; empty:
	// the lowest tier.
	SourceTier string `yaml:"source_tier,omitempty"`
}

// Tier is a group of similar, well-connected resources.
type Tier struct {
	Name string `yaml:"name"`
	// Locations is the fan-out: how many locations of this tier sit under each
	// location of the next higher tier (0 or 1: one). It gives TCoeff.
	Locations int `yaml:"locations,omitempty"`
	Pos       Pos `yaml:"-"`
}

// WorkerType is a kind of machine; catalog latencies are keyed by its name.
type WorkerType struct {
	Name     string  `yaml:"name"`
	VCPUs    int     `yaml:"vcpus,omitempty"`
	GPU      string  `yaml:"gpu,omitempty"`
	MemoryGB float64 `yaml:"memory_gb,omitempty"`
	// Price per hour, in the unit all costs are reported in.
	Price float64 `yaml:"price"`
	Pos   Pos     `yaml:"-"`
}

// Worker is one machine (or Count identical ones) in a tier.
type Worker struct {
	Name     string `yaml:"name"`
	Type     string `yaml:"type"`
	Tier     string `yaml:"tier"`
	Location string `yaml:"location,omitempty"`
	// Count > 1 expands to workers Name-1 ... Name-Count.
	Count int `yaml:"count,omitempty"`
	// Threads is the intra-op thread count the worker runs a model
	// session with (0: its type's vcpus): what the planner takes a
	// variant's latency profile at (catalog.Latency.ForThreads). A cluster
	// fills it from what each worker reports.
	Threads int `yaml:"threads,omitempty"`
	Pos     Pos `yaml:"-"`
}

// Link prices traffic. From and To name two tiers (the common case), two
// workers, or a stream (source) and a worker; the most specific entry wins.
type Link struct {
	From      string  `yaml:"from"`
	To        string  `yaml:"to"`
	CostPerGB float64 `yaml:"cost_per_gb"`
	// BandwidthMbps caps a tier link in megabits per second; 0: unlimited.
	BandwidthMbps float64 `yaml:"bandwidth_mbps,omitempty"`
	Pos           Pos     `yaml:"-"`
}

// DefaultLink is the price (and bandwidth cap) of every tier pair without a
// link of its own.
type DefaultLink struct {
	CostPerGB     float64 `yaml:"cost_per_gb"`
	BandwidthMbps float64 `yaml:"bandwidth_mbps,omitempty"`
	Pos           Pos     `yaml:"-"`
}

// TierLinks are the links between tiers: those the file names, then the
// default link for every other pair of distinct tiers, lower to higher
// (assumption A2: traffic never flows down).
func (in *Infra) TierLinks() []*Link {
	var out []*Link
	named := map[[2]string]bool{}
	for _, l := range in.Links {
		if in.Tier(l.From) != nil && in.Tier(l.To) != nil {
			out = append(out, l)
			named[[2]string{l.From, l.To}] = true
		}
	}
	if in.DefaultLink == nil {
		return out
	}
	for i, a := range in.Tiers {
		for _, b := range in.Tiers[i+1:] {
			if !named[[2]string{a.Name, b.Name}] {
				out = append(out, &Link{From: a.Name, To: b.Name, CostPerGB: in.DefaultLink.CostPerGB,
					BandwidthMbps: in.DefaultLink.BandwidthMbps, Pos: in.DefaultLink.Pos})
			}
		}
	}
	return out
}

// unpricedPairs are the pairs of distinct tiers (lower first) that neither a
// tier link nor worker links for every pair of their workers price.
func (in *Infra) unpricedPairs() [][2]*Tier {
	named := map[[2]string]bool{}
	for _, l := range in.Links {
		named[[2]string{l.From, l.To}] = true
	}
	byTier := map[string][]string{}
	for _, m := range in.Machines() {
		byTier[m.Tier] = append(byTier[m.Tier], m.Name)
	}
	covered := func(a, b string) bool {
		if named[[2]string{a, b}] {
			return true
		}
		if len(byTier[a]) == 0 || len(byTier[b]) == 0 {
			return false
		}
		for _, x := range byTier[a] {
			for _, y := range byTier[b] {
				if !named[[2]string{x, y}] {
					return false
				}
			}
		}
		return true
	}
	var out [][2]*Tier
	for i, a := range in.Tiers {
		for _, b := range in.Tiers[i+1:] {
			if a.Name != b.Name && !covered(a.Name, b.Name) {
				out = append(out, [2]*Tier{a, b})
			}
		}
	}
	return out
}

// Tier returns the tier called name, or nil.
func (in *Infra) Tier(name string) *Tier {
	for _, t := range in.Tiers {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// TierIndex returns the position of tier name (0 = lowest), or -1.
func (in *Infra) TierIndex(name string) int {
	for i, t := range in.Tiers {
		if t.Name == name {
			return i
		}
	}
	return -1
}

// WorkerType returns the worker type called name, or nil.
func (in *Infra) WorkerType(name string) *WorkerType {
	for _, t := range in.WorkerTypes {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// DefaultSourceTier is the tier of a stream that names none.
func (in *Infra) DefaultSourceTier() string {
	if in.SourceTier != "" {
		return in.SourceTier
	}
	if len(in.Tiers) > 0 {
		return in.Tiers[0].Name
	}
	return ""
}

// Machine is one expanded worker.
type Machine struct {
	Name     string
	Type     *WorkerType
	Tier     string
	Location string
	// Threads is the worker's model session threads (Worker.Threads).
	Threads int
}

// ModelThreads is the intra-op threads the machine's model sessions run
// with: as said, else its type's vcpus (0: not known).
func (m Machine) ModelThreads() int {
	if m.Threads > 0 {
		return m.Threads
	}
	if m.Type != nil {
		return m.Type.VCPUs
	}
	return 0
}

// Machines expands Count and resolves types, in file order.
func (in *Infra) Machines() []Machine {
	var out []Machine
	for _, w := range in.Workers {
		t := in.WorkerType(w.Type)
		if t == nil {
			t = &WorkerType{Name: w.Type}
		}
		if w.Count <= 1 {
			out = append(out, Machine{w.Name, t, w.Tier, w.Location, w.Threads})
			continue
		}
		for i := 1; i <= w.Count; i++ {
			out = append(out, Machine{fmt.Sprintf("%s-%d", w.Name, i), t, w.Tier, w.Location, w.Threads})
		}
	}
	return out
}

// MaxCount bounds a worker's count and a tier's locations: each becomes
// named machines and places in the plan.
const MaxCount = 10000

// LoadFile reads an infrastructure YAML file.
func LoadFile(path string) (*Infra, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, src)
}

// Parse decodes infrastructure YAML, reporting every problem at once.
func Parse(file string, src []byte) (*Infra, error) {
	d := &yamlx.Decoder{File: file}
	in := &Infra{}
	root := d.Parse(src)
	if root == nil {
		if err := d.Err(); err != nil {
			return nil, err
		}
		return nil, yamlx.Problems{{Pos: Pos{File: file}, Msg: "empty infrastructure file: want tiers, worker_types and workers"}}
	}
	fs := d.Map(root, "infrastructure", "notes", "tiers", "worker_types", "workers", "links", "default_link", "source_tier")
	in.Notes = d.Str(fs["notes"], "notes")
	for _, n := range d.Seq(d.Required(root, fs, "tiers", "infrastructure").Value, "tiers") {
		tf := d.Map(n, "tier", "name", "locations")
		t := &Tier{
			Name:      d.Str(d.Required(n, tf, "name", "tier"), "tier.name"),
			Locations: d.Int(tf["locations"], "tier.locations", 0),
			Pos:       d.Pos(n),
		}
		if t.Locations > MaxCount {
			d.Errorf(tf["locations"].Value, "tier.locations: %d locations is more than %d", t.Locations, MaxCount)
			t.Locations = 1
		}
		in.Tiers = append(in.Tiers, t)
	}
	for _, n := range d.Seq(d.Required(root, fs, "worker_types", "infrastructure").Value, "worker_types") {
		tf := d.Map(n, "worker type", "name", "vcpus", "gpu", "memory_gb", "price")
		in.WorkerTypes = append(in.WorkerTypes, &WorkerType{
			Name:     d.Str(d.Required(n, tf, "name", "worker type"), "worker_type.name"),
			VCPUs:    d.Int(tf["vcpus"], "worker_type.vcpus", 0),
			GPU:      d.Str(tf["gpu"], "worker_type.gpu"),
			MemoryGB: d.NonNegFloat(tf["memory_gb"], "worker_type.memory_gb", 0),
			Price:    d.NonNegFloat(d.Required(n, tf, "price", "worker type"), "worker_type.price", 0),
			Pos:      d.Pos(n),
		})
	}
	wfields := map[*Worker]map[string]yamlx.Field{}
	for _, n := range d.Seq(d.Required(root, fs, "workers", "infrastructure").Value, "workers") {
		wf := d.Map(n, "worker", "name", "type", "tier", "location", "count", "threads")
		w := &Worker{
			Name:     d.Str(d.Required(n, wf, "name", "worker"), "worker.name"),
			Type:     d.Str(d.Required(n, wf, "type", "worker"), "worker.type"),
			Tier:     d.Str(d.Required(n, wf, "tier", "worker"), "worker.tier"),
			Location: d.Str(wf["location"], "worker.location"),
			Count:    d.Int(wf["count"], "worker.count", 0),
			Threads:  d.Int(wf["threads"], "worker.threads", 0),
			Pos:      d.Pos(n),
		}
		if f := wf["threads"]; f.Value != nil && (w.Threads < 1 || w.Threads > 1024) {
			d.Errorf(f.Value, "worker.threads: %d is not a thread count (1..1024)", w.Threads)
		}
		if w.Count < 0 {
			d.Errorf(wf["count"].Value, "worker.count: must not be negative")
		}
		if w.Count > MaxCount {
			// Every machine gets a name here and a place in the plan: a
			// count this large would hang the loader, not describe a site.
			d.Errorf(wf["count"].Value, "worker.count: %d machines is more than %d", w.Count, MaxCount)
			w.Count = 1
		}
		wfields[w] = wf
		in.Workers = append(in.Workers, w)
	}
	lfields := map[*Link]map[string]yamlx.Field{}
	for _, n := range d.Seq(fs["links"].Value, "links") {
		lf := d.Map(n, "link", "from", "to", "cost_per_gb", "bandwidth_mbps")
		l := &Link{
			From:          d.Str(d.Required(n, lf, "from", "link"), "link.from"),
			To:            d.Str(d.Required(n, lf, "to", "link"), "link.to"),
			CostPerGB:     d.NonNegFloat(d.Required(n, lf, "cost_per_gb", "link"), "link.cost_per_gb", 0),
			BandwidthMbps: d.NonNegFloat(lf["bandwidth_mbps"], "link.bandwidth_mbps", 0),
			Pos:           d.Pos(n),
		}
		lfields[l] = lf
		in.Links = append(in.Links, l)
	}
	if n := fs["default_link"].Value; n != nil {
		df := d.Map(n, "default_link", "cost_per_gb", "bandwidth_mbps")
		in.DefaultLink = &DefaultLink{
			CostPerGB:     d.NonNegFloat(d.Required(n, df, "cost_per_gb", "default_link"), "default_link.cost_per_gb", 0),
			BandwidthMbps: d.NonNegFloat(df["bandwidth_mbps"], "default_link.bandwidth_mbps", 0),
			Pos:           d.Pos(n),
		}
	}
	in.SourceTier = d.Str(fs["source_tier"], "source_tier")

	// Cross references, each reported at the token that names the unknown thing.
	tierNames := make([]string, 0, len(in.Tiers))
	seen := map[string]Pos{}
	for _, t := range in.Tiers {
		if q, ok := seen[t.Name]; ok {
			d.ErrorAt(t.Pos, "tier %q: already defined at %s", t.Name, q)
		}
		seen[t.Name] = t.Pos
		tierNames = append(tierNames, t.Name)
	}
	if len(in.Tiers) == 0 && fs["tiers"].Value != nil {
		d.Errorf(fs["tiers"].Value, "tiers: want at least one tier")
	}
	typeNames := []string{}
	tseen := map[string]Pos{}
	for _, t := range in.WorkerTypes {
		if q, ok := tseen[t.Name]; ok {
			d.ErrorAt(t.Pos, "worker type %q: already defined at %s", t.Name, q)
		}
		tseen[t.Name] = t.Pos
		typeNames = append(typeNames, t.Name)
	}
	unknown := func(f yamlx.Field, kind, name string, known []string) {
		msg := fmt.Sprintf("unknown %s %q", kind, name)
		if s := yamlx.Suggest(name, known); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		} else if len(known) > 0 {
			msg += fmt.Sprintf(" (have %s)", strings.Join(known, ", "))
		}
		d.Errorf(f.Value, "%s", msg)
	}
	wseen := map[string]Pos{}
	var workerNames []string
	for _, w := range in.Workers {
		wf := wfields[w]
		if w.Type != "" && in.WorkerType(w.Type) == nil {
			unknown(wf["type"], "worker type", w.Type, typeNames)
		}
		if w.Tier != "" && in.Tier(w.Tier) == nil {
			unknown(wf["tier"], "tier", w.Tier, tierNames)
		}
		for _, m := range (&Infra{Workers: []*Worker{w}}).Machines() {
			if q, ok := wseen[m.Name]; ok {
				d.ErrorAt(w.Pos, "worker %q: name already used at %s", m.Name, q)
			}
			wseen[m.Name] = w.Pos
			workerNames = append(workerNames, m.Name)
		}
	}
	for _, l := range in.Links {
		lf := lfields[l]
		fromTier, toTier := in.Tier(l.From) != nil, in.Tier(l.To) != nil
		_, fromWorker := wseen[l.From]
		_, toWorker := wseen[l.To]
		switch {
		case fromTier && toTier:
			if in.TierIndex(l.To) < in.TierIndex(l.From) {
				d.Errorf(lf["to"].Value, "link %s -> %s goes down the tiers: assumption A2 forbids that flow, so it can carry nothing", l.From, l.To)
			}
		case toWorker && (fromWorker || !fromTier):
			// worker -> worker, or source (a stream name, checked against the
			// catalog when planning) -> worker.
			if l.BandwidthMbps > 0 {
				d.Errorf(lf["bandwidth_mbps"].Value, "bandwidth caps apply to tier links only")
			}
		case fromTier:
			unknown(lf["to"], "tier", l.To, tierNames)
		default:
			if l.From != "" && !fromWorker && toTier {
				unknown(lf["from"], "tier", l.From, tierNames)
			} else if l.To != "" {
				unknown(lf["to"], "tier or worker", l.To, append(append([]string(nil), tierNames...), workerNames...))
			}
		}
	}
	if in.DefaultLink == nil && d.Err() == nil {
		// Reported at the higher tier: its traffic from below is unpriced.
		for _, p := range in.unpricedPairs() {
			d.ErrorAt(p[1].Pos, "no link prices traffic from tier %s to tier %s (it would cost nothing): add a link {from: %s, to: %s, cost_per_gb: ...} or a default_link {cost_per_gb: ...}",
				p[0].Name, p[1].Name, p[0].Name, p[1].Name)
		}
	}
	if f := fs["source_tier"]; f.Value != nil && in.Tier(in.SourceTier) == nil {
		unknown(f, "tier", in.SourceTier, tierNames)
	}
	if err := d.Err(); err != nil {
		return nil, err
	}
	return in, nil
}

// Marshal encodes the infrastructure as YAML (the schema Parse reads).
func (in *Infra) Marshal() ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(in); err != nil {
		return nil, err
	}
	return b.Bytes(), enc.Close()
}

// TCoeff is JellyBean's throughput coefficient of tier i: the product of the
// location fan-outs from tier i up to the top.
func (in *Infra) TCoeff(i int) float64 {
	k := 1.0
	for j := i; j < len(in.Tiers); j++ {
		if n := in.Tiers[j].Locations; n > 1 {
			k *= float64(n)
		}
	}
	return k
}
