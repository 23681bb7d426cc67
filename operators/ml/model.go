package ml

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/internal/arrowx"
)

// Config binds a model to an input stream.
type Config struct {
	// Input is the tensor column fed to the model.
	Input string
	// ModelInput names the model input; empty means the model's only input.
	ModelInput string
	// Inputs, when set, are the tensor columns fed to a model with several
	// inputs (Input and ModelInput are then ignored): Inputs[i] feeds the
	// model's i-th input, so there must be one column per model input.
	Inputs []string
	// InputIndexes, when set, are the field indexes of Inputs in the input
	// schema (a join can give two columns one name); else Inputs are looked
	// up by name.
	InputIndexes []int
	// Heads say which outputs become which columns. At least one.
	Heads []Head
	// ErrorColumn is the utf8 column that carries a row's error (null when the
	// row succeeded). Default "error".
	ErrorColumn string
	// NoErrorColumn leaves the error column out (for plans whose schema has
	// none): a failed row then has nulls in the output columns, and the errors
	// are counted in Model.Failed.
	NoErrorColumn bool
	// MaxBatch caps the rows per session call (default 32).
	MaxBatch int
	// SideVariants, for a variable-side input (VariableField), are the
	// model's variants that take rows of a smaller side natively: such
	// rows run on them instead of being resized up (see SideVariant).
	SideVariants []SideVariant
}

// ErrRow is wrapped by the per-row errors written to the error column.
var ErrRow = errors.New("ml: row failed")

// Model is a session bound to an input schema: the signatures are checked, the
// output schema fixed, and scratch buffers kept between calls. A Model is used by
// one goroutine at a time (one operator instance); its Session may be shared.
type Model struct {
	sess     Session
	cfg      Config
	inSchema *arrow.Schema
	out      *arrow.Schema
	inputs   []boundInput // one per model input, in the model's order
	heads    []boundHead
	outInfo  []TensorInfo

	// main runs the bound session (sess, or its fork); alts are the
	// SideVariants, by side in altBySide (side -> index into alts).
	main      *variantRun
	alts      []*variantRun
	altBySide map[int]int

	// scratch, reused across batches
	lastSchema *arrow.Schema       // the last record schema found equal to inSchema
	nullErrs   map[int]arrow.Array // shared all-null error columns by length
	lastNulls  arrow.Array         // the last one used (held by nullErrs)
	spare      job                 // Infer's job, reused: Infer finishes it before returning
	failed     int64               // rows failed (counted when there is no error column)
	lastErr    string
}

// Failed reports how many rows failed and the last error, for models bound with
// NoErrorColumn (with an error column the errors travel with the rows).
func (m *Model) Failed() (int64, string) { return m.failed, m.lastErr }

// Bind checks the session's signature against the input schema and the heads and
// returns the bound model. Every mismatch is an ErrSchema naming the column, the
// model tensor and both shapes.
func Bind(sess Session, in *arrow.Schema, cfg Config) (*Model, error) {
	if cfg.ErrorColumn == "" {
		cfg.ErrorColumn = "error"
	}
	if cfg.MaxBatch == 0 {
		cfg.MaxBatch = 32
	}
	if cfg.MaxBatch < 0 {
		return nil, fmt.Errorf("%w: max batch %d", ErrConfig, cfg.MaxBatch)
	}
	if len(cfg.Heads) == 0 {
		return nil, fmt.Errorf("%w: no output head", ErrConfig)
	}
	m := &Model{sess: sess, cfg: cfg, inSchema: in, outInfo: sess.Outputs()}

	if err := m.bindInputs(in); err != nil {
		return nil, err
	}

	fields := slices.Clone(in.Fields())
	seen := map[int]bool{}
	for _, h := range cfg.Heads {
		bh := boundHead{Head: h, out: -1}
		for i, o := range m.outInfo {
			if o.Name == h.Output {
				bh.out = i
			}
		}
		if bh.out < 0 {
			return nil, fmt.Errorf("%w: model has no output %q (outputs: %v)", ErrSchema, h.Output, m.outInfo)
		}
		o := m.outInfo[bh.out]
		if o.DType != Float32 || len(o.Shape) < 1 {
			return nil, fmt.Errorf("%w: output %s: want float32 [N, ...]", ErrSchema, o)
		}
		bh.rowShape = slices.Clone(o.Shape[1:])
		for _, d := range bh.rowShape {
			if d < 0 {
				return nil, fmt.Errorf("%w: output %s: only the batch dimension may be dynamic", ErrSchema, o)
			}
		}
		bh.rowSize = int(product(bh.rowShape))
		cols := h.columns()
		switch h.Kind {
		case Classify:
			if len(bh.rowShape) != 1 || len(cols) < 1 || len(cols) > 2 {
				return nil, fmt.Errorf("%w: classify head on %s wants an output [N,K] and the columns label[, score], got %d", ErrSchema, o, len(cols))
			}
			if h.Labels != nil && len(h.Labels) != bh.rowSize {
				return nil, fmt.Errorf("%w: %d labels for output %s with %d classes", ErrSchema, len(h.Labels), o, bh.rowSize)
			}
			lt := arrow.DataType(arrow.PrimitiveTypes.Int64)
			if h.Labels != nil {
				lt = arrow.BinaryTypes.String
			}
			fields = append(fields, arrow.Field{Name: cols[0], Type: lt, Nullable: true})
			if len(cols) == 2 {
				fields = append(fields, arrow.Field{Name: cols[1], Type: arrow.PrimitiveTypes.Float32, Nullable: true})
			}
		case Embed:
			if len(cols) != 1 {
				return nil, fmt.Errorf("%w: embed head on %s wants one column", ErrSchema, o)
			}
			fields = append(fields, TensorField(cols[0], bh.rowShape))
		case Scalar:
			if bh.rowSize != 1 || len(cols) != 1 {
				return nil, fmt.Errorf("%w: scalar head wants an output [N] or [N,1] and one column, got %s", ErrSchema, o)
			}
			fields = append(fields, arrow.Field{Name: cols[0], Type: arrow.PrimitiveTypes.Float32, Nullable: true})
		default:
			return nil, fmt.Errorf("%w: unknown head kind %d", ErrConfig, h.Kind)
		}
		seen[bh.out] = true
		m.heads = append(m.heads, bh)
	}
	if !cfg.NoErrorColumn {
		fields = append(fields, arrow.Field{Name: cfg.ErrorColumn, Type: arrow.BinaryTypes.String, Nullable: true})
	}
	// The input may repeat a name (a join's two id columns: the plan
	// addresses them by position), but a column the operator adds must be new.
	names := map[string]bool{}
	for i, f := range fields {
		if names[f.Name] && i >= in.NumFields() {
			return nil, fmt.Errorf("%w: output column %q appears twice", ErrSchema, f.Name)
		}
		names[f.Name] = true
	}
	md := in.Metadata()
	m.out = arrow.NewSchema(fields, &md)

	m.main = newVariantRun(sess, m.inputs, m.outInfo, -1)
	if err := m.bindSideVariants(cfg.SideVariants); err != nil {
		return nil, err
	}
	return m, nil
}

// boundInput is one model input fed by one tensor column.
type boundInput struct {
	col      int    // field index in the input schema
	name     string // the column's name, for errors
	rowShape []int64
	rowSize  int
	scratch  []float32 // gathers a batch made of several records' rows
	uint8    bool      // the column is uint8-encoded: decoded per record
	// variable: the column's rows are images of any side up to colShape's
	// (a list, VariableField), resized to it per record.
	variable bool
	colShape []int64
	shape    []int64 // [batch, rowShape...], the batch set per call
}

// bindInputs checks each input column against the model input it feeds:
// Config.Inputs in the model's input order, or the one Config.Input.
func (m *Model) bindInputs(in *arrow.Schema) error {
	cfg := m.cfg
	ins := m.sess.Inputs()
	var infos []*TensorInfo
	cols := cfg.Inputs
	if len(cols) > 0 {
		if len(cols) != len(ins) {
			return fmt.Errorf("%w: %d input columns (%s) for a model with %d inputs %v: each model input takes one column, in order",
				ErrSchema, len(cols), strings.Join(cols, ", "), len(ins), ins)
		}
		if cfg.InputIndexes != nil && len(cfg.InputIndexes) != len(cols) {
			return fmt.Errorf("%w: %d input indexes for %d input columns", ErrConfig, len(cfg.InputIndexes), len(cols))
		}
		for i := range ins {
			infos = append(infos, &ins[i])
		}
	} else {
		cols = []string{cfg.Input}
		var mi *TensorInfo
		for i := range ins {
			if ins[i].Name == cfg.ModelInput || (cfg.ModelInput == "" && len(ins) == 1) {
				mi = &ins[i]
			}
		}
		if mi == nil || len(ins) != 1 {
			return fmt.Errorf("%w: model inputs %v: the operator feeds exactly one tensor input (asked for %q); give one column per input in Config.Inputs", ErrSchema, ins, cfg.ModelInput)
		}
		infos = []*TensorInfo{mi}
	}
	m.inputs = make([]boundInput, len(cols))
	for k, name := range cols {
		mi := infos[k]
		what := fmt.Sprintf("column %q", name)
		if len(cols) > 1 {
			what = fmt.Sprintf("argument %d (column %q)", k+1, name)
		}
		col := -1
		if cfg.InputIndexes != nil {
			if c := cfg.InputIndexes[k]; c >= 0 && c < in.NumFields() {
				col = c
			}
		} else if idx := in.FieldIndices(name); len(idx) == 1 {
			col = idx[0]
		}
		if col < 0 {
			return fmt.Errorf("%w: input %s not found (have %s)", ErrSchema, what, fieldNames(in))
		}
		// A column the source side encoded (Adapt, uint8) is decoded here.
		colShape, encoded := EncodedShape(in.Field(col))
		variable := false
		if vs, enc, ok := VariableShape(in.Field(col)); ok {
			colShape, encoded, variable = vs, enc, true
		} else if !encoded {
			var err error
			if colShape, err = FieldShape(in.Field(col)); err != nil {
				return fmt.Errorf("%s for model input %s: %w", what, mi, err)
			}
		}
		rowShape, err := FitInput(*mi, colShape, what)
		if err != nil {
			return err
		}
		if mi.Shape[0] == 1 {
			m.cfg.MaxBatch = 1 // a model exported with batch 1 takes one row a call
		}
		m.inputs[k] = boundInput{col: col, name: name, rowShape: rowShape, rowSize: int(product(rowShape)), uint8: encoded,
			variable: variable, colShape: colShape, shape: append([]int64{-1}, rowShape...)}
	}
	return nil
}

// FitInput is the rule by which rows of colShape feed model input mi: a
// float32 input [N, ...] (batch dynamic or 1), its fixed dimensions holding
// as many values as a row (tensors are row-major, so [1,28,28] feeds [784]
// unchanged), a dynamic non-batch dimension taking the row's size. It
// returns the input's row shape; what names the rows in errors. The binder's
// check of declared shapes (runtime/inference.CheckModelArgs) and the
// operator share it.
func FitInput(mi TensorInfo, colShape []int64, what string) ([]int64, error) {
	if mi.DType != Float32 || len(mi.Shape) < 1 {
		return nil, fmt.Errorf("%w: %s feeds model input %s: want float32 [N, ...]", ErrSchema, what, mi)
	}
	if mi.Shape[0] >= 0 && mi.Shape[0] != 1 {
		return nil, fmt.Errorf("%w: model input %s has a fixed batch of %d", ErrSchema, mi, mi.Shape[0])
	}
	rowShape := slices.Clone(mi.Shape[1:])
	for i, d := range rowShape {
		if d < 0 {
			if len(colShape) != len(rowShape) {
				return nil, fmt.Errorf("%w: %s has rows of shape [%s] that do not fit model input %s", ErrSchema, what, FormatDims(colShape), mi)
			}
			rowShape[i] = colShape[i]
		}
	}
	if product(rowShape) != product(colShape) {
		return nil, fmt.Errorf("%w: %s has rows of shape [%s] but model input %s wants [%s]", ErrSchema, what, FormatDims(colShape), mi, FormatDims(rowShape))
	}
	return rowShape, nil
}

func fieldNames(s *arrow.Schema) string {
	var names []string
	for _, f := range s.Fields() {
		names = append(names, f.Name)
	}
	return strings.Join(names, ", ")
}

// OutputSchema is the input schema followed by the heads' columns and the error
// column.
func (m *Model) OutputSchema() *arrow.Schema { return m.out }

// MaxBatch is the configured cap on rows per call.
func (m *Model) MaxBatch() int { return m.cfg.MaxBatch }

// Session is the bound session.
func (m *Model) Session() Session { return m.sess }

// Infer runs the model on every row of rec, in batches of at most MaxBatch, and
// returns rec's columns followed by the output columns. Rows that fail carry their
// error in the error column and nulls in the output columns; the returned error is
// only for the record as a whole (wrong schema). The caller releases the result.
func (m *Model) Infer(mem memory.Allocator, rec arrow.Record) (arrow.Record, error) {
	j := &m.spare
	if err := m.initJob(j, mem, rec); err != nil {
		return nil, err
	}
	var seg [1]segment
	for start := 0; start < j.n; start += m.cfg.MaxBatch {
		seg[0] = segment{j: j, start: start, n: min(m.cfg.MaxBatch, j.n-start)}
		m.runBatch(seg[:])
	}
	out := j.finish(mem)
	// Drop the job's references so the spare holds no record or buffer.
	heads, vals := j.heads[:0], j.vals[:0]
	clear(j.heads)
	clear(j.vals[:cap(j.vals)])
	*j = job{heads: heads, vals: vals}
	return out, nil
}

// job is one input record in flight: its input values and its output buffers,
// filled by one or more batches.
type job struct {
	m    *Model
	rec  arrow.Record
	vals [][]float32 // per model input: the rows' values, over the record's buffers
	n    int
	done int

	// group is, per row, the variant it runs on: 0 the bound one, a+1 the
	// Model's alts[a] (nil: every row the bound one's); alt[a] holds the
	// values of alts[a]'s rows at their row positions, at its side.
	group []uint8
	alt   [][]float32

	heads []headBuffers
	arena *memory.Buffer // backs the output buffers; released in finish
	// owned is what the job holds in Go memory beside its record: input
	// values converted or resized from the record's (a uint8 frame as
	// float32 is 4x its bytes) and other sides' values. A job waiting in
	// the operator's queue for its model batch holds it (Operator charges
	// it to the query's memory).
	owned   int64
	off     int // bytes of arena carved so far
	failed  []bool
	errs    []string
	nFailed int
}

type headBuffers struct {
	buf    *memory.Buffer // label (int64) / embedding / scalar values
	i64    []int64
	f32    []float32
	sbuf   *memory.Buffer // classify: scores
	scores []float32
}

// segment is a run of rows of one job inside a batch.
type segment struct {
	j        *job
	start, n int
}

func (m *Model) newJob(mem memory.Allocator, rec arrow.Record) (*job, error) {
	j := &job{}
	if err := m.initJob(j, mem, rec); err != nil {
		return nil, err
	}
	return j, nil
}

// initJob fills j (zero but for the capacity of j.heads and j.vals) for rec.
func (m *Model) initJob(j *job, mem memory.Allocator, rec arrow.Record) error {
	// Records of one stream share their schema value; comparing fields (and their
	// metadata) every batch would cost more than the rest of the conversion.
	if sc := rec.Schema(); sc != m.inSchema && sc != m.lastSchema {
		if !sc.Equal(m.inSchema) {
			return fmt.Errorf("%w: record schema %s differs from the bound schema %s", ErrSchema, sc, m.inSchema)
		}
		m.lastSchema = sc
	}
	vals := j.vals[:0]
	var bad [][]int // by input: rows of a variable-side column that fit no side
	var group []uint8
	var alt [][]float32
	var owned int64
	for k, bi := range m.inputs {
		var v []float32
		var err error
		if bi.variable {
			var b []int
			var native func(r, side int) []float32
			if len(m.alts) > 0 {
				native = m.nativeRows(int(rec.NumRows()), &group, &alt)
			}
			v, b, err = variableValues(rec.Column(bi.col), bi.colShape, nil, native)
			if len(b) > 0 {
				if bad == nil {
					bad = make([][]int, len(m.inputs))
				}
				bad[k] = b
			}
		} else if bi.uint8 {
			v, err = decodedValues(rec.Column(bi.col))
		} else {
			v, _, err = TensorValues(rec.Column(bi.col))
		}
		if err != nil {
			return err
		}
		if bi.variable || bi.uint8 {
			// Values of their own: resized, or widened to float32.
			owned += 4 * int64(len(v))
		}
		vals = append(vals, v)
	}
	owned += int64(len(group))
	for _, a := range alt {
		owned += 4 * int64(len(a))
	}
	n := int(rec.NumRows())
	heads := j.heads[:0]
	if cap(heads) < len(m.heads) {
		heads = make([]headBuffers, len(m.heads))
	}
	*j = job{m: m, rec: rec, vals: vals, n: n, heads: heads[:len(m.heads)], group: group, alt: alt, owned: owned}
	rec.Retain()
	// One allocation holds every output buffer of the record; the columns hold
	// slices of it.
	total := 0
	for _, h := range m.heads {
		switch h.Kind {
		case Classify:
			total += align64(8*n) + align64(4*n)
		case Embed, Scalar:
			total += align64(4 * n * h.rowSize)
		}
	}
	arena := memory.NewResizableBuffer(mem)
	arena.Resize(total)
	j.arena = arena
	for i, h := range m.heads {
		hb := &j.heads[i]
		switch h.Kind {
		case Classify:
			var b []byte
			hb.buf, b = j.carve(8 * n)
			hb.i64 = arrow.Int64Traits.CastFromBytes(b)
			hb.sbuf, b = j.carve(4 * n)
			hb.scores = arrow.Float32Traits.CastFromBytes(b)
		case Embed, Scalar:
			var b []byte
			hb.buf, b = j.carve(4 * n * h.rowSize)
			hb.f32 = arrow.Float32Traits.CastFromBytes(b)
		}
	}
	for k, bi := range m.inputs {
		if bad != nil {
			for _, r := range bad[k] {
				j.fail(r, fmt.Errorf("%w: input %q: row %d is no %s image of a side up to %d", ErrRow, bi.name, r, FormatDims(bi.colShape[:len(bi.colShape)-2]), bi.colShape[len(bi.colShape)-1]))
			}
		}
		col := rec.Column(bi.col)
		if col.NullN() > 0 {
			for r := 0; r < n; r++ {
				if col.IsNull(r) {
					j.fail(r, fmt.Errorf("%w: input %q is null", ErrRow, bi.name))
				}
			}
		}
	}
	return nil
}

func align64(n int) int { return (n + 63) &^ 63 }

// carve takes the next n bytes (64-byte aligned) of the job's arena as a buffer
// of its own; the buffer keeps the arena alive.
func (j *job) carve(n int) (*memory.Buffer, []byte) {
	if j.off == 0 { // the first buffer is the arena itself: one object fewer
		j.arena.Retain()
		j.off = align64(n)
		return j.arena, j.arena.Bytes()[:n]
	}
	buf := memory.SliceBuffer(j.arena, j.off, n)
	j.off += align64(n)
	return buf, buf.Bytes()
}

func (j *job) fail(r int, err error) {
	if j.failed == nil { // made on the first failure: most records have none
		j.failed = make([]bool, j.n)
		j.errs = make([]string, j.n)
	}
	if j.failed[r] {
		return
	}
	j.failed[r] = true
	j.errs[r] = err.Error()
	j.nFailed++
}

// runBatch runs one batch made of segs and scatters the outputs into the jobs.
// Rows that a side variant takes natively (Config.SideVariants) run on it,
// in a call of their own; each output row goes to its own row's place, so
// the records keep their order.
func (m *Model) runBatch(segs []segment) {
	if groups := m.groupBySide(segs); groups != nil {
		for g, gs := range groups {
			if len(gs) > 0 {
				m.runOn(m.variant(g), gs)
			}
		}
		return
	}
	m.runOn(m.main, segs)
}

// runOn runs segs as one call of variant v. A failing call is split in
// halves until the failing rows are alone, so one bad row costs its
// neighbours a few extra calls, not their results.
func (m *Model) runOn(v *variantRun, segs []segment) {
	total := 0
	for _, s := range segs {
		total += s.n
	}
	if total == 0 {
		return
	}
	for k := range v.inputs {
		bi := &v.inputs[k]
		rs := bi.rowSize
		var in []float32
		if len(segs) == 1 { // the common case: a slice of one record, no copy
			s := segs[0]
			in = s.j.values(v, k)[s.start*rs : (s.start+s.n)*rs]
		} else {
			in = grow(&bi.scratch, total*rs)
			off := 0
			for _, s := range segs {
				off += copy(in[off:], s.j.values(v, k)[s.start*rs:(s.start+s.n)*rs])
			}
		}
		bi.shape[0] = int64(total)
		v.ins[k] = Tensor{DType: Float32, Shape: bi.shape, F32: in}
	}
	// Outputs go to scratch buffers that live as long as the Model, then are
	// copied into the records' Arrow buffers: a session can keep its runtime
	// wrappers of stable buffers between calls, which costs less than the copy.
	for i, o := range m.outInfo {
		rs := product(o.Shape[1:])
		if rs < 0 || o.DType != Float32 { // an output this operator does not map
			v.outs[i] = Tensor{DType: o.DType}
			continue
		}
		oshape := v.outShapes[i]
		oshape[0] = int64(total)
		v.outs[i] = Tensor{DType: Float32, Shape: oshape, F32: grow(&v.scratchOut[i], total*int(rs))}
	}
	if err := v.run.Run(v.ins, v.outs); err != nil {
		if total == 1 {
			s := segs[0]
			s.j.fail(s.start, fmt.Errorf("%w: %w", ErrRow, err))
			s.j.done++
			return
		}
		left, right := splitSegments(segs, total/2)
		m.runOn(v, left)
		m.runOn(v, right)
		return
	}
	m.scatter(v, segs, total)
}

// scatter writes a successful call's outputs into the jobs' buffers.
func (m *Model) scatter(v *variantRun, segs []segment, total int) {
	v.rows.Add(int64(total))
	row := 0
	for _, s := range segs {
		for hi, h := range m.heads {
			out := v.outs[h.out].F32
			hb := &s.j.heads[hi]
			switch h.Kind {
			case Classify:
				argmax(out[row*h.rowSize:(row+s.n)*h.rowSize], h.rowSize, hb.i64[s.start:s.start+s.n], hb.scores[s.start:s.start+s.n])
			case Embed, Scalar:
				rs := h.rowSize
				copy(hb.f32[s.start*rs:(s.start+s.n)*rs], out[row*rs:(row+s.n)*rs])
			}
		}
		row += s.n
		s.j.done += s.n
	}
}

// argmax writes, for each row of k values in p, the index of the first largest
// value to labels and the value to scores. The running best stays in a register
// and the slices are cut to size up front, so the loop has no bounds checks: it
// is the only part of the output conversion that grows with rows times classes.
func argmax(p []float32, k int, labels []int64, scores []float32) {
	if k <= 0 {
		return
	}
	scores = scores[:len(labels)]
	for r := range labels {
		row := p[r*k : r*k+k]
		best, bv := 0, row[0]
		for c, v := range row {
			if v > bv {
				best, bv = c, v
			}
		}
		labels[r] = int64(best)
		scores[r] = bv
	}
}

// splitSegments cuts segs after k rows.
func splitSegments(segs []segment, k int) (left, right []segment) {
	for _, s := range segs {
		switch {
		case k <= 0:
			right = append(right, s)
		case s.n <= k:
			left = append(left, s)
			k -= s.n
		default:
			left = append(left, segment{j: s.j, start: s.start, n: k})
			right = append(right, segment{j: s.j, start: s.start + k, n: s.n - k})
			k = 0
		}
	}
	return left, right
}

func grow(buf *[]float32, n int) []float32 {
	if cap(*buf) < n {
		*buf = make([]float32, n)
	}
	return (*buf)[:n]
}

// release drops a job that will not finish (a cancelled run).
func (j *job) release() {
	for _, hb := range j.heads {
		if hb.buf != nil {
			hb.buf.Release()
		}
		if hb.sbuf != nil {
			hb.sbuf.Release()
		}
	}
	j.arena.Release()
	j.rec.Release()
}

// finish builds the output record and releases the job's hold on its input.
func (j *job) finish(mem memory.Allocator) arrow.Record {
	m := j.m
	defer j.rec.Release()
	r, cols := newRecord(m.out, int64(j.n))
	// The columns' buffer lists, two entries each, share one allocation:
	// the record's own when they fit.
	bufs := r.bufs[:]
	if 4*len(m.heads) > len(bufs) {
		bufs = make([]*memory.Buffer, 4*len(m.heads))
	}
	pair := func() []*memory.Buffer {
		b := bufs[:2:2]
		bufs = bufs[2:]
		return b
	}
	for i := 0; i < int(j.rec.NumCols()); i++ {
		c := j.rec.Column(i)
		c.Retain()
		cols = append(cols, c)
	}
	for hi, h := range m.heads {
		hb := &j.heads[hi]
		switch h.Kind {
		case Classify:
			if h.Labels != nil {
				b := array.NewStringBuilder(mem)
				arrowx.Reserve(b, j.n)
				for r := 0; r < j.n; r++ {
					if j.nFailed > 0 && j.failed[r] {
						b.AppendNull()
					} else {
						b.Append(h.Labels[hb.i64[r]])
					}
				}
				cols = append(cols, b.NewArray())
				b.Release()
			} else {
				cols = append(cols, primitive(mem, r, arrow.PrimitiveTypes.Int64, j, hb.buf, pair()))
			}
			if len(h.columns()) == 2 {
				cols = append(cols, primitive(mem, r, arrow.PrimitiveTypes.Float32, j, hb.sbuf, pair()))
			}
		case Embed:
			nulls := validity(mem, j.n, j.failed, j.nFailed)
			cols = append(cols, newTensorArray(h.rowShape, j.n, hb.buf, nulls, j.nFailed))
			if nulls != nil {
				nulls.Release()
			}
		case Scalar:
			cols = append(cols, primitive(mem, r, arrow.PrimitiveTypes.Float32, j, hb.buf, pair()))
		}
		hb.buf.Release()
		if hb.sbuf != nil {
			hb.sbuf.Release()
		}
	}
	if m.cfg.NoErrorColumn {
		m.failed += int64(j.nFailed)
		for _, e := range j.errs {
			if e != "" {
				m.lastErr = e
			}
		}
	} else {
		cols = append(cols, j.errorColumn(mem))
	}
	j.arena.Release() // the columns hold their slices of it
	r.Init(m.out, cols, int64(j.n))
	return r
}

// primitive wraps a filled value buffer as an array with the job's failures as
// nulls. The array retains buf. bufs (two entries) becomes the array's buffer
// list. The array and its Data come from r's own slots while they last (see
// record), else from the heap.
func primitive(mem memory.Allocator, r *record, dt arrow.DataType, j *job, buf *memory.Buffer, bufs []*memory.Buffer) arrow.Array {
	nulls := validity(mem, j.n, j.failed, j.nFailed)
	bufs[0], bufs[1] = nulls, buf
	defer func() {
		if nulls != nil {
			nulls.Release()
		}
	}()
	if a := r.primitive(dt, j.n, bufs, j.nFailed); a != nil {
		return a
	}
	data := array.NewData(dt, j.n, bufs, nil, j.nFailed, 0)
	defer data.Release()
	return array.MakeFromData(data)
}

// errorColumn is the utf8 error column: the error text of failed rows, null
// elsewhere. The all-null case, by far the common one, is a shared column.
func (j *job) errorColumn(mem memory.Allocator) arrow.Array {
	if j.nFailed == 0 {
		m := j.m
		if m.lastNulls != nil && m.lastNulls.Len() == j.n { // a stream's batches are mostly one size
			m.lastNulls.Retain()
			return m.lastNulls
		}
		a := m.nullErrors(j.n)
		if _, kept := m.nullErrs[j.n]; kept {
			m.lastNulls = a
		}
		return a
	}
	eb := array.NewStringBuilder(mem)
	defer eb.Release()
	for r := 0; r < j.n; r++ {
		if j.failed[r] {
			eb.Append(j.errs[r])
		} else {
			eb.AppendNull()
		}
	}
	return eb.NewArray()
}

// maxNullErrors bounds the all-null error columns a Model keeps.
const maxNullErrors = 64

// nullErrors returns an all-null error column of n rows. Arrays are immutable,
// so every record of n rows without a failure shares one: the column costs a
// reference count instead of three buffers and two array objects. The shared
// arrays live in Go memory rather than the caller's allocator, because the
// Model, which holds them, has no Close to give them back.
func (m *Model) nullErrors(n int) arrow.Array {
	if a, ok := m.nullErrs[n]; ok {
		a.Retain()
		return a
	}
	nulls := memory.NewBufferBytes(make([]byte, bitutil.BytesForBits(int64(n))))
	offsets := memory.NewBufferBytes(make([]byte, (n+1)*arrow.Int32SizeBytes))
	data := array.NewData(arrow.BinaryTypes.String, n, []*memory.Buffer{nulls, offsets, nil}, nil, n, 0)
	defer data.Release()
	a := array.MakeFromData(data)
	if len(m.nullErrs) < maxNullErrors {
		if m.nullErrs == nil {
			m.nullErrs = map[int]arrow.Array{}
		}
		m.nullErrs[n] = a
		a.Retain()
	}
	return a
}
