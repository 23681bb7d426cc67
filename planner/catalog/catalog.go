// Package catalog owns what a query can name: ML models with their variants and
// profiles (accuracy, latency per worker type, output sizes), streams, tables and
// sinks. It loads and saves the catalog YAML (every problem reported at once as
// file:line:col) and applies CREATE/DROP statements. It must not import the
// optimizer, operators, dataflow or anything that runs.
package catalog

import (
	"errors"
	"fmt"
	"sort"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/internal/yamlx"
)

// Error kinds.
var (
	// ErrInvalid: a malformed catalog file or statement.
	ErrInvalid = yamlx.ErrInvalid
	// ErrUnknown: a name that the catalog does not hold.
	ErrUnknown = errors.New("unknown name")
	// ErrExists: a CREATE of a name that is already taken.
	ErrExists = errors.New("already exists")
)

// Pos is a position in a catalog file or query.
type Pos = yamlx.Pos

// Catalog is every model, stream, table and sink a query can name. Names are
// case-sensitive as written; lookups also accept a case-insensitive match, as
// SQL identifiers are.
type Catalog struct {
	// Notes is free text: where the numbers come from, and how derived ones
	// were derived.
	Notes   string    `yaml:"notes,omitempty"`
	Models  []*Model  `yaml:"models,omitempty"`
	Streams []*Stream `yaml:"streams,omitempty"`
	Tables  []*Table  `yaml:"tables,omitempty"`
	Sinks   []*Sink   `yaml:"sinks,omitempty"`
	Views   []*View   `yaml:"views,omitempty"`
	// Functions are measured sizes of what SQL functions make, for the
	// planner's bytes on a link (a crop of a frame: what it costs to send
	// depends on the frames and the boxes, not on the type BLOB).
	Functions []*Function `yaml:"functions,omitempty"`
	// Files reads the columns of a file that a table or file stream names
	// without a column list. The planner runs nothing, so whoever builds the
	// catalog next to the files supplies it (operators/exec does, for the
	// CLI, the REPL and the cluster); nil means a column list is required.
	Files FileSchemas `yaml:"-"`
	// Stats gives tables' statistics to the planner's cost-based rules
	// (the join order); nil: the textbook defaults. Supplied like Files.
	Stats StatsSource `yaml:"-"`
	// BaseFile, when set, names the catalog file the entries were loaded
	// from because it lies beside the script (not named by --catalog): a
	// script's CREATE of a name one of those entries has replaces it, as
	// the script's own definition is the more specific one. An entry of a
	// catalog the user named, or one the script made, is kept and the
	// CREATE fails.
	BaseFile string `yaml:"-"`
}

// FileSchemas infers a file's columns, as DuckDB's read_csv does: names from
// the header (or the file's own schema), types from a sample of the rows.
// declaredIn is the file that named path (a script or catalog YAML), for
// resolving a relative path.
type FileSchemas interface {
	FileColumns(path, format, declaredIn string) ([]Column, error)
}

// ErrNoColumns: a table or stream without a column list whose schema cannot
// be inferred.
var ErrNoColumns = errors.New("no columns")

// Column is a named, typed column. Type is the query language's spelling
// (INT, DOUBLE, VARCHAR, TENSOR(FLOAT, 3, 224, 224), ...).
type Column struct {
	Name string `yaml:"name"`
	Type string `yaml:"type"`
	// Values, on a model's output column, is the fraction of rows with each
	// value, measured on a validation set: what an equality filter on the
	// column keeps, where the planner would otherwise guess 0.1.
	Values map[string]float64 `yaml:"values,omitempty"`
	Pos    Pos                `yaml:"-"`
}

// Model is an ML operator that a query calls with CROSS JOIN LATERAL m(args).
type Model struct {
	Name    string   `yaml:"name"`
	Task    string   `yaml:"task,omitempty"`
	Inputs  []Column `yaml:"inputs,omitempty"`
	Outputs []Column `yaml:"outputs,omitempty"`
	// OutputRatio is items out per item in (e.g. detections per frame); 0 means 1.
	OutputRatio float64    `yaml:"output_ratio,omitempty"`
	Variants    []*Variant `yaml:"variants"`
	// EndToEnd holds measured accuracies of whole workflows that end in this
	// model, by the variants of the upstream models; they override the
	// profile-based estimate (JellyBean 4.1).
	EndToEnd *EndToEnd `yaml:"end_to_end,omitempty"`
	// Labels names the stream column that holds the true value of the
	// model's first output, where a stream carries labels: EXPLAIN ANALYZE
	// then measures the accuracy of the rows that reach the model.
	Labels string `yaml:"labels,omitempty"`
	// MaxBatch and MaxDelayMs are the model's dynamic batching defaults
	// (0: the runtime's); a call's WITH (max_batch, max_delay_ms) wins.
	MaxBatch   int     `yaml:"max_batch,omitempty"`
	MaxDelayMs float64 `yaml:"max_delay_ms,omitempty"`
	// Image, for a model called on encoded images (a BLOB of PNG or JPEG
	// bytes), is how the call makes its input tensor: each variant's
	// input_size is the tensor's [height, width].
	Image *ImageInput `yaml:"image,omitempty"`
	// Decode, when set, names the model's post-processing: the step that
	// turns its raw output into the query's rows (a detector's boxes, a
	// recogniser's text).
	Decode     *Decode `yaml:"decode,omitempty"`
	Provenance string  `yaml:"provenance,omitempty"`
	Pos        Pos     `yaml:"-"`
}

// ImageInput is how encoded images become a vision model's input tensor
// [3, height, width]: resized by Fit (long_side: the whole image inside,
// aspect kept; height: scaled to the height, aspect kept, up to the width),
// scaled to [0, 1], normalised by Mean and Std per channel, BGR or RGB.
type ImageInput struct {
	Fit  string    `yaml:"fit"`
	Mean []float64 `yaml:"mean,flow,omitempty"`
	Std  []float64 `yaml:"std,flow,omitempty"`
	BGR  bool      `yaml:"bgr,omitempty"`
	Pos  Pos       `yaml:"-"`
}

// Decode is a model's post-processing step: Kind "db" turns a
// differentiable-binarisation text detector's probability map into one
// row per text box (Threshold binarises the map, BoxThreshold is the least
// mean probability of a kept box, UnclipRatio grows a box back to the text
// around its shrunk kernel); Kind "ctc" turns a recogniser's per-step
// class probabilities into text by greedy CTC decoding over Dictionary (a
// file of one symbol a line; class 0 is the blank).
type Decode struct {
	Kind         string  `yaml:"kind"`
	Dictionary   string  `yaml:"dictionary,omitempty"`
	Threshold    float64 `yaml:"threshold,omitempty"`
	BoxThreshold float64 `yaml:"box_threshold,omitempty"`
	UnclipRatio  float64 `yaml:"unclip_ratio,omitempty"`
	MinSize      float64 `yaml:"min_size,omitempty"`
	Pos          Pos     `yaml:"-"`
}

// Variant is one interchangeable implementation of a model.
type Variant struct {
	Name string `yaml:"name"`
	File string `yaml:"file,omitempty"`
	// Accuracy is the standalone accuracy (in the catalog's unit, percent by
	// convention) when the inputs are exact.
	Accuracy float64 `yaml:"accuracy"`
	// Profile maps accuracies of the upstream models' outputs to this model's
	// output accuracy (JellyBean 4.1, looked up conservatively).
	Profile []ProfileRow `yaml:"profile,omitempty"`
	// OutputKB is the size of one output item in KiB (what crosses a link).
	OutputKB float64 `yaml:"output_kb"`
	// ProxyCost ranks variants before workers are known (model selection).
	ProxyCost float64 `yaml:"proxy_cost,omitempty"`
	// Latency per item in milliseconds, by worker type (or worker) name.
	Latency map[string]Latency `yaml:"latency_ms"`
	// Classes is the variant's recall on each true class of a labelled
	// validation set, with the class's support there (`tierflow profile`
	// measures it). Its accuracy is sum_c freq_c * recall_c for the set's
	// class frequencies; a data-aware plan puts the live stream's estimated
	// frequencies in their place (SneakPeek, eq. 9).
	Classes    []ClassRecall `yaml:"classes,omitempty"`
	Provenance string        `yaml:"provenance,omitempty"`
	// InputSize, when set, is the [height, width] the variant takes its
	// images at: a sender resizes frames to it before they cross a link
	// (data adaptation, Jellyfish 7.3), so a smaller size is fewer bytes.
	InputSize []int `yaml:"input_size,flow,omitempty"`
	Pos       Pos   `yaml:"-"`
}

// ClassRecall is a variant's recall (percent) on one true class, measured
// on Support rows of that class.
type ClassRecall struct {
	Class   string  `yaml:"class"`
	Recall  float64 `yaml:"recall"`
	Support int     `yaml:"support"`
}

// Recall returns the variant's recall on class c and whether it was
// profiled.
func (v *Variant) Recall(c string) (float64, bool) {
	for _, r := range v.Classes {
		if r.Class == c {
			return r.Recall, true
		}
	}
	return 0, false
}

// ExpectedAccuracy is the variant's accuracy (percent) on data with the
// given class frequencies (any non-negative weights; they are normalised):
// sum_c freq_c * recall_c over the profiled classes (SneakPeek, eq. 9).
// Without a per-class profile, or with no weight on a profiled class, it is
// the profiled accuracy.
func (v *Variant) ExpectedAccuracy(freq map[string]float64) float64 {
	if len(v.Classes) == 0 {
		return v.Accuracy
	}
	var sum, w float64
	for _, r := range v.Classes {
		f := freq[r.Class]
		sum += f * r.Recall
		w += f
	}
	if w <= 0 {
		return v.Accuracy
	}
	return sum / w
}

// Latency is a latency distribution in milliseconds per item.
type Latency struct {
	P50 float64 `yaml:"p50"`
	P75 float64 `yaml:"p75"`
	P90 float64 `yaml:"p90"`
	// ByBatch, when measured (`tierflow profile`), is the latency of one
	// whole call at each batch size, in milliseconds: model latency grows
	// with the batch, sub-linearly, and a latency SLO has to pick the batch
	// size from it (Jellyfish 4.1: l_j(b)). Batch.go reads it.
	ByBatch map[int]Latency `yaml:"by_batch,omitempty"`
	// Threads is the intra-op thread count of the session these numbers
	// were measured with (0: not said); ByThreads the same measurements
	// with other thread counts (`tierflow profile --threads 1,2`). A
	// worker runs its model sessions with a thread count of its own (its
	// share of the machine's cores), and a real-size network's time
	// depends on it: the planner takes the profile of the worker's count
	// (ForThreads).
	Threads   int             `yaml:"threads,omitempty"`
	ByThreads map[int]Latency `yaml:"by_threads,omitempty"`
}

// ForThreads is the latency of a session with n intra-op threads: the
// profile measured with n, else with the most threads under n (more
// threads are not slower), else l itself (n 0: unknown).
func (l Latency) ForThreads(n int) Latency {
	if n <= 0 || len(l.ByThreads) == 0 || n == l.Threads {
		return l
	}
	best, bt := l, l.Threads
	if bt > n {
		bt = 0 // the top level was measured with more threads than n has
	}
	for t, x := range l.ByThreads {
		if t <= n && t > bt {
			best, bt = x, t
		}
	}
	if bt == 0 {
		// Every profile has more threads than n: the fewest is the closest.
		for t, x := range l.ByThreads {
			if bt == 0 || t < bt {
				best, bt = x, t
			}
		}
		if l.Threads > 0 && l.Threads < bt {
			return l
		}
	}
	best.Threads, best.ByThreads = bt, l.ByThreads
	return best
}

// At returns the latency at percentile p (50, 75 or 90).
func (l Latency) At(p int) float64 {
	switch p {
	case 50:
		return l.P50
	case 90:
		return l.P90
	}
	return l.P75
}

// ProfileRow is one accuracy sample: upstream accuracies -> output accuracy.
type ProfileRow struct {
	Inputs []float64 `yaml:"inputs,flow"`
	Output float64   `yaml:"output"`
}

// EndToEnd is a table of measured workflow accuracies.
type EndToEnd struct {
	Models []string      `yaml:"models,flow"`
	Rows   []EndToEndRow `yaml:"rows"`
	Pos    Pos           `yaml:"-"`
}

// EndToEndRow is the accuracy of one combination of variants (one per model of
// EndToEnd.Models, in order).
type EndToEndRow struct {
	Variants []string `yaml:"variants,flow"`
	Accuracy float64  `yaml:"accuracy"`
}

// Stream is an unbounded source.
type Stream struct {
	Name    string   `yaml:"name"`
	Columns []Column `yaml:"columns,omitempty"`
	// Source is where the rows come from: nats, jetstream or file.
	Source  string `yaml:"source,omitempty"`
	Subject string `yaml:"subject,omitempty"`
	Format  string `yaml:"format,omitempty"`
	// Tier where the stream's producers sit; empty: the infrastructure's
	// source tier.
	Tier      string `yaml:"tier,omitempty"`
	Locations int    `yaml:"locations,omitempty"`
	// Rate is items per second (all locations together).
	Rate float64 `yaml:"rate,omitempty"`
	// ItemKB is the mean size of one item in KiB.
	ItemKB     float64 `yaml:"item_kb,omitempty"`
	Provenance string  `yaml:"provenance,omitempty"`
	// SourceMaxDelayMs bounds how long a message source (NATS, JetStream)
	// waits to fill a partial batch before it emits it; 0: the runtime's
	// default (or `--source-max-delay`). It is the latency a quiet stream
	// pays for batching.
	SourceMaxDelayMs float64 `yaml:"source_max_delay_ms,omitempty"`
	Pos              Pos     `yaml:"-"`
}

// Table is a bounded relation read from a file.
type Table struct {
	Name    string   `yaml:"name"`
	Columns []Column `yaml:"columns,omitempty"`
	Path    string   `yaml:"path"`
	Format  string   `yaml:"format,omitempty"`
	Pos     Pos      `yaml:"-"`
}

// Sink is where INSERT INTO writes.
type Sink struct {
	Name   string `yaml:"name"`
	Kind   string `yaml:"kind"` // nats, jetstream, file, stdout, discard
	Target string `yaml:"target,omitempty"`
	Format string `yaml:"format,omitempty"`
	Pos    Pos    `yaml:"-"`
}

// Ratio returns items out per item in.
func (m *Model) Ratio() float64 {
	if m.OutputRatio == 0 {
		return 1
	}
	return m.OutputRatio
}

// Variant returns the variant called name, or nil.
func (m *Model) Variant(name string) *Variant {
	for _, v := range m.Variants {
		if v.Name == name {
			return v
		}
	}
	return nil
}

// View is a named query (CREATE VIEW name [(columns)] AS query): a FROM
// that names it reads its query as a subquery, bound anew at each use, so
// a view over a stream is a stream and one over tables a table.
type View struct {
	Name string `yaml:"name"`
	// Columns rename the query's columns, in order (those not named keep
	// their names).
	Columns []string `yaml:"columns,omitempty"`
	// SQL is the query's text; Query, when set, is it parsed (a view
	// created by a script keeps the positions of its text there).
	SQL   string      `yaml:"sql"`
	Query *lang.Query `yaml:"-" json:"-"`
	Pos   Pos         `yaml:"-"`
}

// View returns the view called name, or nil.
func (c *Catalog) View(name string) *View {
	return find(c.Views, name, func(v *View) string { return v.Name })
}

// Function is what the catalog knows of a SQL function's results: their
// mean size, measured on the data the query reads (a stream's item_kb and a
// variant's output_kb are the same kind of number).
type Function struct {
	Name string `yaml:"name"`
	// OutputKB is the mean size of one result in KiB.
	OutputKB   float64 `yaml:"output_kb"`
	Provenance string  `yaml:"provenance,omitempty"`
	Pos        Pos     `yaml:"-"`
}

// Function returns the measured function called name, or nil.
func (c *Catalog) Function(name string) *Function {
	return find(c.Functions, name, func(f *Function) string { return f.Name })
}

// Model returns the model called name (case-insensitively), or nil.
func (c *Catalog) Model(name string) *Model {
	return find(c.Models, name, func(m *Model) string { return m.Name })
}

// Stream returns the stream called name, or nil.
func (c *Catalog) Stream(name string) *Stream {
	return find(c.Streams, name, func(s *Stream) string { return s.Name })
}

// Table returns the table called name, or nil.
func (c *Catalog) Table(name string) *Table {
	return find(c.Tables, name, func(t *Table) string { return t.Name })
}

// Sink returns the sink called name, or nil.
func (c *Catalog) Sink(name string) *Sink {
	return find(c.Sinks, name, func(s *Sink) string { return s.Name })
}

// Names returns every name in the catalog (for "did you mean" hints).
func (c *Catalog) Names() []string {
	var out []string
	for _, m := range c.Models {
		out = append(out, m.Name)
	}
	for _, s := range c.Streams {
		out = append(out, s.Name)
	}
	for _, t := range c.Tables {
		out = append(out, t.Name)
	}
	for _, s := range c.Sinks {
		out = append(out, s.Name)
	}
	for _, v := range c.Views {
		out = append(out, v.Name)
	}
	sort.Strings(out)
	return out
}

// Suggest returns the catalog name closest to name, or "".
func (c *Catalog) Suggest(name string) string { return yamlx.Suggest(name, c.Names()) }

// Clone returns a copy that can be changed (by CREATE statements) without
// touching c. Models and variants are shared: they are never mutated in place.
func (c *Catalog) Clone() *Catalog {
	if c == nil {
		return &Catalog{}
	}
	return &Catalog{
		Views:     append([]*View(nil), c.Views...),
		Notes:     c.Notes,
		Models:    append([]*Model(nil), c.Models...),
		Streams:   append([]*Stream(nil), c.Streams...),
		Tables:    append([]*Table(nil), c.Tables...),
		Sinks:     append([]*Sink(nil), c.Sinks...),
		Functions: append([]*Function(nil), c.Functions...),
		Files:     c.Files,
		Stats:     c.Stats,
		BaseFile:  c.BaseFile,
	}
}

// TableColumns returns t's columns, inferred from its file when it declares
// none. t itself is not changed: a catalog loaded from YAML may be shared.
func (c *Catalog) TableColumns(t *Table) ([]Column, error) {
	if len(t.Columns) > 0 {
		return t.Columns, nil
	}
	return c.fileColumns("table", t.Name, t.Path, t.Format, t.Pos)
}

// StreamColumns returns s's columns, inferred from its file when it is a
// file stream that declares none.
func (c *Catalog) StreamColumns(s *Stream) ([]Column, error) {
	if len(s.Columns) > 0 {
		return s.Columns, nil
	}
	if !equalFold(s.Source, "file") {
		return nil, fmt.Errorf("%w: stream %s reads %s and needs a column list (only FROM FILE infers one)", ErrNoColumns, s.Name, s.Source)
	}
	return c.fileColumns("stream", s.Name, s.Subject, s.Format, s.Pos)
}

func (c *Catalog) fileColumns(kind, name, path, format string, p Pos) ([]Column, error) {
	if c.Files == nil {
		return nil, fmt.Errorf("%w: %s %s needs a column list (no schema inference here)", ErrNoColumns, kind, name)
	}
	cols, err := c.Files.FileColumns(path, format, p.File)
	if err != nil {
		return nil, err
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("%w: %s %s: %s has no columns", ErrNoColumns, kind, name, path)
	}
	return cols, nil
}

func find[T any](xs []T, name string, key func(T) string) T {
	var zero T
	for _, x := range xs {
		if key(x) == name {
			return x
		}
	}
	for _, x := range xs {
		if equalFold(key(x), name) {
			return x
		}
	}
	return zero
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// Errorf builds a positioned error of kind ErrInvalid.
func Errorf(p Pos, format string, args ...any) error {
	return yamlx.Problems{{Pos: p, Msg: fmt.Sprintf(format, args...)}}
}
