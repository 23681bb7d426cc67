package inference

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/internal/arrowx"
	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/runtime/onnx"
)

// ErrProfile is wrapped by profiling errors that are the input's fault: a data
// file without the model's input or truth column, a model without variants.
var ErrProfile = errors.New("inference: cannot profile")

// Data is a labelled validation set: one record holding every row (an Arrow
// IPC file such as examples/fashion/data/shelf.arrow).
type Data struct {
	Path   string
	Record arrow.Record
}

// LoadData reads an Arrow IPC file into one record. Release it when done.
func LoadData(path string, mem memory.Allocator) (*Data, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := ipc.NewFileReader(f, ipc.WithAllocator(mem))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: not an Arrow IPC file: %v", ErrProfile, path, err)
	}
	defer r.Close()
	var recs []arrow.Record
	defer func() {
		for _, rec := range recs {
			rec.Release()
		}
	}()
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.RecordAt(i)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: record %d: %v", ErrProfile, path, i, err)
		}
		recs = append(recs, rec)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w: %s has no rows", ErrProfile, path)
	}
	schema := r.Schema()
	cols := make([]arrow.Array, schema.NumFields())
	for c := range cols {
		parts := make([]arrow.Array, len(recs))
		for i, rec := range recs {
			parts[i] = rec.Column(c)
		}
		if cols[c], err = array.Concatenate(parts, mem); err != nil {
			for _, x := range cols[:c] {
				x.Release()
			}
			return nil, fmt.Errorf("%w: %s: column %s: %v", ErrProfile, path, schema.Field(c).Name, err)
		}
	}
	var n int64
	for _, rec := range recs {
		n += rec.NumRows()
	}
	rec := array.NewRecord(schema, cols, n)
	for _, c := range cols {
		c.Release()
	}
	return &Data{Path: path, Record: rec}, nil
}

// Release frees the data's record.
func (d *Data) Release() { d.Record.Release() }

// Rows is the number of rows.
func (d *Data) Rows() int { return int(d.Record.NumRows()) }

// Strings returns a utf8 column's values (the true labels).
func (d *Data) Strings(name string) ([]string, error) {
	idx := d.Record.Schema().FieldIndices(name)
	if len(idx) == 0 {
		return nil, fmt.Errorf("%w: %s has no column %q", ErrProfile, d.Path, name)
	}
	col, ok := d.Record.Column(idx[0]).(*array.String)
	if !ok {
		return nil, fmt.Errorf("%w: %s: column %q is %s, want a string column of true labels", ErrProfile, d.Path, name, d.Record.Column(idx[0]).DataType())
	}
	out := make([]string, col.Len())
	for i := range out {
		out[i] = col.Value(i)
	}
	return out, nil
}

// Profiler measures the variants of catalog models on a validation set, or,
// without one (Data nil), on inputs made up from their declared shapes.
type Profiler struct {
	Env     *onnx.Env
	Options onnx.Options
	Mem     memory.Allocator
	Data    *Data // nil: synthetic inputs, no accuracy
	// BaseDir resolves relative model files (see ModelFile).
	BaseDir string
	// Iterations per (variant, batch) latency point, after Warmup calls.
	Iterations, Warmup int
}

// Latency is the measured time of one batch size.
type Latency struct {
	Batch          int
	P50, P75, P90  time.Duration // per batch
	ItemsPerSecond float64       // Batch / P50
}

// PerItemMS is the per-item latency in milliseconds at P50/P75/P90.
func (l Latency) PerItemMS() catalog.Latency {
	f := func(d time.Duration) float64 { return float64(d) / 1e6 / float64(l.Batch) }
	return catalog.Latency{P50: f(l.P50), P75: f(l.P75), P90: f(l.P90)}
}

// VariantProfile is what was measured of one variant.
type VariantProfile struct {
	Model, Variant, Provider string
	Latency                  []Latency
	OutputKB                 float64
	// Predicted holds the predicted label of every row (classification
	// heads), for accuracy and the combinations of upstream variants.
	Predicted []string
}

// Accuracy compares predictions with the truth, in percent, over the rows
// where keep is true (nil keeps all); it returns the rows counted.
func Accuracy(pred, truth []string, keep []bool) (float64, int) {
	n, ok := 0, 0
	for i := range pred {
		if keep != nil && !keep[i] {
			continue
		}
		n++
		if pred[i] == truth[i] {
			ok++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return 100 * float64(ok) / float64(n), n
}

// inputColumns are the columns that feed the variant's inputs, in the
// model's input order: the catalog's declared inputs, else the model's own
// input names.
func inputColumns(m *catalog.Model, v *catalog.Variant, sess *onnx.Session) ([]string, error) {
	ins := sess.Inputs()
	var cols []string
	for _, c := range m.Inputs {
		cols = append(cols, c.Name)
	}
	if len(cols) == 0 {
		for _, in := range ins {
			cols = append(cols, in.Name)
		}
	}
	if len(cols) != len(ins) {
		return nil, fmt.Errorf("%w: model %s declares %d inputs (%s) but variant %s (%s) has %d %v; the profiler feeds one tensor column per model input",
			ErrProfile, m.Name, len(cols), strings.Join(cols, ", "), v.Name, sess.Path(), len(ins), ins)
	}
	return cols, nil
}

// SyntheticRows is the number of rows the profiler makes up for a model
// without a validation set when no batch asks for more.
const SyntheticRows = 64

// synthesize makes rows of random inputs for the model: one tensor column per
// input, shaped as the catalog declares it (TENSOR(FLOAT, d...)), else as the
// model does. Latency and output size need no labels; accuracy does.
func (p *Profiler) synthesize(m *catalog.Model, v *catalog.Variant, sess *onnx.Session, cols []string, rows int) (arrow.Record, error) {
	rng := rand.New(rand.NewPCG(uint64(len(m.Name)), 7))
	fields := make([]arrow.Field, len(cols))
	arrs := make([]arrow.Array, len(cols))
	defer func() {
		for _, a := range arrs {
			if a != nil {
				a.Release()
			}
		}
	}()
	for i, in := range sess.Inputs() {
		var shape []int64
		if i < len(m.Inputs) {
			for _, d := range catalog.TensorShape(m.Inputs[i].Type) {
				shape = append(shape, int64(d))
			}
			// A variant that takes its images at a size of its own
			// (input_size) gets them at that size.
			if n := len(shape); n >= 2 && len(v.InputSize) == 2 {
				shape[n-2], shape[n-1] = int64(v.InputSize[0]), int64(v.InputSize[1])
			}
		}
		if shape == nil {
			if in.DType != ml.Float32 || len(in.Shape) < 2 {
				return nil, fmt.Errorf("%w: model %s variant %s: input %s is not a float32 [N, ...] tensor the profiler can make up; give --data", ErrProfile, m.Name, v.Name, in)
			}
			for _, d := range in.Shape[1:] {
				if d < 0 {
					return nil, fmt.Errorf("%w: model %s variant %s: input %s has a dynamic dimension; declare its shape in the catalog (TENSOR(FLOAT, ...)) or give --data", ErrProfile, m.Name, v.Name, in)
				}
				shape = append(shape, d)
			}
		}
		size := 1
		for _, d := range shape {
			size *= int(d)
		}
		vals := make([]float32, rows*size)
		for k := range vals {
			vals[k] = rng.Float32()
		}
		a, err := ml.NewTensorColumn(p.Mem, shape, vals)
		if err != nil {
			return nil, err
		}
		arrs[i] = a
		fields[i] = ml.TensorField(cols[i], shape)
	}
	return array.NewRecord(arrow.NewSchema(fields, nil), arrs, int64(rows)), nil
}

// input is the record the variant runs on: the validation set, or made-up
// rows when there is none. The caller releases it.
func (p *Profiler) input(m *catalog.Model, v *catalog.Variant, sess *onnx.Session, cols []string, batches []int) (arrow.Record, string, error) {
	if p.Data == nil {
		rows := SyntheticRows
		if len(batches) > 0 {
			rows = max(rows, slices.Max(batches))
		}
		rec, err := p.synthesize(m, v, sess, cols, rows)
		return rec, "synthetic inputs", err
	}
	schema := p.Data.Record.Schema()
	for _, c := range cols {
		if len(schema.FieldIndices(c)) == 0 {
			return nil, "", fmt.Errorf("%w: %s has no column %q (an input of model %s)", ErrProfile, p.Data.Path, c, m.Name)
		}
	}
	p.Data.Record.Retain()
	return p.Data.Record, p.Data.Path, nil
}

func (p *Profiler) bind(m *catalog.Model, v *catalog.Variant, sess *onnx.Session, schema *arrow.Schema, cols []string, maxBatch int) (*ml.Model, error) {
	outs := make([]arrow.Field, len(m.Outputs))
	for i, c := range m.Outputs {
		t, err := catalog.ParseType(c.Type)
		if err != nil {
			return nil, fmt.Errorf("%w: model %s output %s: %v", ErrProfile, m.Name, c.Name, err)
		}
		outs[i] = arrow.Field{Name: "out." + c.Name, Type: t}
	}
	// As Lateral does: a network of free spatial sizes is fixed at its
	// column's shape.
	var ms ml.Session = sess
	if len(cols) == 1 && len(v.InputSize) == 0 {
		if i := schema.FieldIndices(cols[0]); len(i) > 0 {
			if shape, err := ml.FieldShape(schema.Field(i[0])); err == nil && freeInputDims(sess, shape) {
				if ms, err = fixShapes(sess, shape); err != nil {
					return nil, fmt.Errorf("model %s variant %s: %w", m.Name, v.Name, err)
				}
			}
		}
	}
	heads, err := ml.PlanHeads(ms, outs)
	if err != nil {
		return nil, fmt.Errorf("model %s variant %s: %w", m.Name, v.Name, err)
	}
	bm, err := ml.Bind(ms, schema, ml.Config{Inputs: cols, Heads: heads, NoErrorColumn: true, MaxBatch: maxBatch})
	if err != nil {
		return nil, fmt.Errorf("model %s variant %s: %w", m.Name, v.Name, err)
	}
	return bm, nil
}

// Variant measures one variant: per-batch latency for each batch size,
// output size per row, and the predicted label of every row. tick is called
// after each timed call (progress). Without Data the inputs are made up from
// their declared shapes and Predicted is of no use for accuracy.
func (p *Profiler) Variant(m *catalog.Model, v *catalog.Variant, batches []int, tick func()) (*VariantProfile, error) {
	path, err := ModelFile(v, p.BaseDir)
	if err != nil {
		return nil, err
	}
	sess, err := p.Env.Session(path, p.Options)
	if err != nil {
		return nil, err
	}
	cols, err := inputColumns(m, v, sess)
	if err != nil {
		return nil, err
	}
	if isImageModel(m) {
		return p.imageVariant(m, v, sess, cols[0], batches, tick)
	}
	rec, source, err := p.input(m, v, sess, cols, batches)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	bm, err := p.bind(m, v, sess, rec.Schema(), cols, 64)
	if err != nil {
		return nil, err
	}
	vp := &VariantProfile{Model: m.Name, Variant: v.Name, Provider: sess.Provider()}
	out, err := bm.Infer(p.Mem, rec)
	if err != nil {
		return nil, err
	}
	var bytes int
	for c := int(rec.NumCols()); c < int(out.NumCols()); c++ {
		bytes += dataBytes(out.Column(c).Data())
		if s, ok := out.Column(c).(*array.String); ok && vp.Predicted == nil {
			vp.Predicted = make([]string, s.Len())
			for i := range vp.Predicted {
				vp.Predicted[i] = s.Value(i)
			}
		}
	}
	vp.OutputKB = float64(bytes) / float64(rec.NumRows()) / 1024
	out.Release()
	for _, b := range batches {
		if b > int(rec.NumRows()) {
			return nil, fmt.Errorf("%w: batch %d is larger than the %d rows of %s", ErrProfile, b, rec.NumRows(), source)
		}
		bb, err := p.bind(m, v, sess, rec.Schema(), cols, b)
		if err != nil {
			return nil, err
		}
		slice := rec.NewSlice(0, int64(b))
		times := make([]time.Duration, 0, p.Iterations)
		for i := 0; i < p.Warmup+p.Iterations; i++ {
			start := time.Now()
			r, err := bb.Infer(p.Mem, slice)
			d := time.Since(start)
			if err != nil {
				slice.Release()
				return nil, err
			}
			r.Release()
			if i >= p.Warmup {
				times = append(times, d)
				if tick != nil {
					tick()
				}
			}
		}
		slice.Release()
		vp.Latency = append(vp.Latency, latencyOf(b, times))
	}
	return vp, nil
}

// imageVariant measures a variant of a model called on encoded images the
// way the model operator runs it (decode and resize, the call, the
// decoding of its output into the query's rows), on the images of column
// col of the validation set, which it needs: made-up bytes are no image.
// OutputKB is per output row (a detector's box), Predicted the first text
// output of every output row (a recogniser's reading, one per input row).
func (p *Profiler) imageVariant(m *catalog.Model, v *catalog.Variant, sess *onnx.Session, col string, batches []int, tick func()) (*VariantProfile, error) {
	if p.Data == nil {
		return nil, fmt.Errorf("%w: model %s takes encoded images (its input %s is a BLOB): give --data, an Arrow IPC file with a column %s of them", ErrProfile, m.Name, col, col)
	}
	rec := p.Data.Record
	idx := rec.Schema().FieldIndices(col)
	if len(idx) == 0 {
		return nil, fmt.Errorf("%w: %s has no column %q (the images of model %s)", ErrProfile, p.Data.Path, col, m.Name)
	}
	pl, err := bindImage(m, v, sess, rec.Schema(), idx[0], max(64, int(rec.NumRows())))
	if err != nil {
		return nil, err
	}
	vp := &VariantProfile{Model: m.Name, Variant: v.Name, Provider: sess.Provider()}
	out, err := pl.run(p.Mem, rec)
	if err != nil {
		return nil, err
	}
	var bytes int
	first := int(out.NumCols()) - len(m.Outputs)
	for c := first; c < int(out.NumCols()); c++ {
		bytes += dataBytes(out.Column(c).Data())
		if s, ok := out.Column(c).(*array.String); ok && vp.Predicted == nil && out.NumRows() == rec.NumRows() {
			vp.Predicted = make([]string, s.Len())
			for i := range vp.Predicted {
				vp.Predicted[i] = s.Value(i)
			}
		}
	}
	if out.NumRows() > 0 {
		vp.OutputKB = float64(bytes) / float64(out.NumRows()) / 1024
	}
	out.Release()
	for _, b := range batches {
		if b > int(rec.NumRows()) {
			return nil, fmt.Errorf("%w: batch %d is larger than the %d rows of %s", ErrProfile, b, rec.NumRows(), p.Data.Path)
		}
		bp, err := bindImage(m, v, sess, rec.Schema(), idx[0], b)
		if err != nil {
			return nil, err
		}
		times := make([]time.Duration, 0, p.Iterations)
		for i := 0; i < p.Warmup+p.Iterations; i++ {
			// Each call on the next b images, round the set: a detector's
			// time depends on what is in its frames.
			off := int64(i*b) % (rec.NumRows() - int64(b) + 1)
			slice := rec.NewSlice(off, off+int64(b))
			start := time.Now()
			r, err := bp.run(p.Mem, slice)
			d := time.Since(start)
			slice.Release()
			if err != nil {
				return nil, err
			}
			r.Release()
			if i >= p.Warmup {
				times = append(times, d)
				if tick != nil {
					tick()
				}
			}
		}
		vp.Latency = append(vp.Latency, latencyOf(b, times))
	}
	return vp, nil
}

// latencyOf is the percentiles of the times of calls of b rows.
func latencyOf(b int, times []time.Duration) Latency {
	slices.Sort(times)
	q := func(f float64) time.Duration { return times[min(len(times)-1, int(f*float64(len(times))))] }
	l := Latency{Batch: b, P50: q(0.50), P75: q(0.75), P90: q(0.90)}
	l.ItemsPerSecond = float64(b) / l.P50.Seconds()
	return l
}

// Combination is the measured accuracy of a workflow for one choice of
// variants (one per model of a catalog end_to_end table, in order).
type Combination struct {
	Variants []string
	Accuracy float64 // percent
	Rows     int     // rows that reached the last model
}

// Combinations measures every combination of variants of models (upstream
// first, the profiled model last): a row reaches the last model when each
// upstream model's label is in keep[model] (no entry: every row passes), and
// the last model's labels are compared with truth on those rows.
func Combinations(models []string, preds map[string][]*VariantProfile, keep map[string][]string, truth []string) ([]Combination, error) {
	for _, m := range models {
		if len(preds[m]) == 0 {
			return nil, fmt.Errorf("%w: no measured variants of model %s", ErrProfile, m)
		}
	}
	var out []Combination
	idx := make([]int, len(models))
	for {
		keepRow := make([]bool, len(truth))
		for i := range keepRow {
			keepRow[i] = true
		}
		names := make([]string, len(models))
		for k, m := range models {
			vp := preds[m][idx[k]]
			names[k] = vp.Variant
			if k == len(models)-1 || len(keep[m]) == 0 {
				continue
			}
			if vp.Predicted == nil {
				return nil, fmt.Errorf("%w: model %s has no label output to filter on", ErrProfile, m)
			}
			for i, l := range vp.Predicted {
				if !slices.Contains(keep[m], l) {
					keepRow[i] = false
				}
			}
		}
		last := preds[models[len(models)-1]][idx[len(models)-1]]
		if last.Predicted == nil {
			return nil, fmt.Errorf("%w: model %s has no label output to score", ErrProfile, last.Model)
		}
		acc, n := Accuracy(last.Predicted, truth, keepRow)
		out = append(out, Combination{Variants: names, Accuracy: acc, Rows: n})
		// Next combination, the last model varying fastest.
		k := len(models) - 1
		for k >= 0 {
			idx[k]++
			if idx[k] < len(preds[models[k]]) {
				break
			}
			idx[k] = 0
			k--
		}
		if k < 0 {
			break
		}
	}
	return out, nil
}

// ApplyCombinations writes measured combinations into the catalog model m
// (the last of models): its end_to_end table, and on each of its variants the
// accuracy profile rows (accuracies of the upstream variants -> measured
// output accuracy), replacing what was there.
func ApplyCombinations(cat *catalog.Catalog, models []string, combos []Combination) error {
	m := cat.Model(models[len(models)-1])
	if m == nil {
		return fmt.Errorf("%w: no model %s in the catalog", ErrProfile, models[len(models)-1])
	}
	e2e := &catalog.EndToEnd{Models: append([]string(nil), models...)}
	prof := map[string][]catalog.ProfileRow{}
	for _, c := range combos {
		e2e.Rows = append(e2e.Rows, catalog.EndToEndRow{Variants: append([]string(nil), c.Variants...), Accuracy: round(c.Accuracy, 2)})
		var in []float64
		for k, name := range c.Variants[:len(c.Variants)-1] {
			um := cat.Model(models[k])
			if um == nil || um.Variant(name) == nil {
				return fmt.Errorf("%w: no variant %s of model %s in the catalog", ErrProfile, name, models[k])
			}
			in = append(in, um.Variant(name).Accuracy)
		}
		last := c.Variants[len(c.Variants)-1]
		prof[last] = append(prof[last], catalog.ProfileRow{Inputs: in, Output: round(c.Accuracy, 2)})
	}
	m.EndToEnd = e2e
	for _, v := range m.Variants {
		if rows, ok := prof[v.Name]; ok {
			sort.SliceStable(rows, func(i, j int) bool { return slices.Compare(rows[i].Inputs, rows[j].Inputs) < 0 })
			v.Profile = rows
		}
	}
	return nil
}

func round(x float64, digits int) float64 {
	p := 1.0
	for range digits {
		p *= 10
	}
	return float64(int64(x*p+0.5)) / p
}

// dataBytes counts the buffers of d and of its children (a tensor column's
// values sit in its child).
func dataBytes(d arrow.ArrayData) int { return int(arrowx.DataBytes(d)) }
