// Package inference is the model runtime the executor gets through
// exec.Options.Lateral: for each CROSS JOIN LATERAL m(image) AS c(...) of a plan
// it picks the model variant, opens its ONNX file as a cached ONNX Runtime
// session (runtime/onnx), maps the query's output columns onto the model's
// outputs (ml.PlanHeads), binds the model to the input schema, and builds
// operators/ml dataflow operators with dynamic batching.
//
// Which variant runs: the one named for the operator (Config.Variants, keyed by
// the operator's name or the model's name; the distributed runtime passes the
// planner's choice here, as `tierflow run --local` does), else the catalog's
// most accurate variant that has a file: what a query the planner cannot plan
// (a model without latency profiles) means by "the model".
//
// It glues operators (exec, ml) to runtime (onnx, ortlib) and must not import
// relay, cmd or the other runtime packages (worker, cluster, deploy).
package inference

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/runtime/dataaware"
	"github.com/tierflow/tierflow/runtime/inference/sched"
	"github.com/tierflow/tierflow/runtime/onnx"
)

// ErrModel is wrapped by every error about a model call that cannot be run: no
// variant with a file, a missing file, an argument that is not a tensor column.
// It blames the query's input (InputError), so the error keeps that kind when
// it crosses NATS from a worker (runtime/deploy.KindOf).
var ErrModel error = inputError("inference: cannot run model")

type inputError string

func (e inputError) Error() string    { return string(e) }
func (e inputError) InputError() bool { return true }

// Defaults of the dynamic batcher when Config.Batch leaves them zero.
const (
	DefaultMaxBatch = 32
	DefaultMaxDelay = 5 * time.Millisecond
)

// Config configures a Runtime.
type Config struct {
	// OrtLib is the ONNX Runtime library ("" : ortlib.Find's search).
	OrtLib string
	// Device is where sessions run (default onnx.Auto: CUDA when there is a
	// GPU and the library has it, else CPU).
	Device onnx.Device
	// IntraOpThreads per session (0: ONNX Runtime's default); set it from
	// the worker's CPU share.
	IntraOpThreads int
	// Variants names the variant to run, by operator name or model name.
	Variants map[string]string
	// Batch is the dynamic batching policy of every model operator; a call's
	// WITH (max_batch = n, max_delay_ms = x) overrides it for that call, and
	// a planned query's batch size and delay per operator (the plan's, which
	// already weigh the call and the catalog) arrive that way too.
	Batch ml.BatchConfig
	// FixedBatch turns adaptive batching off: every batch then waits for
	// MaxBatch rows or MaxDelay (Triton's policy). By default the batcher
	// sizes batches from the measured input rate and batch latencies
	// (ml.BatchConfig.Adaptive), so a slow stream's rows do not wait out
	// MaxDelay for a batch that cannot fill.
	FixedBatch bool
	// BaseDir resolves relative model files that are not found next to the
	// catalog or script that declared them.
	BaseDir string
	// CheckOnly: the runtime checks model calls (CheckModelArgs) and runs
	// none, so it reads a file's inputs without keeping a session.
	CheckOnly bool
	// Log receives one line per model operator: variant, file, provider.
	Log io.Writer
	// Scheduler, when set, is the worker's inference scheduler: the
	// session of each (variant, device) is the scheduler's, and every
	// batch runs when its policy grants it, as Tenant's.
	Scheduler *sched.Scheduler
	Tenant    sched.Tenant
	// Evidence is the SneakPeek estimator of the rows' classes (kNN over
	// a training sample): with a data-aware scheduling policy, each row's
	// votes go with its batch, so the policy weighs every variant's
	// per-class recall by them. nil: variants are weighed by their
	// profiled accuracy.
	Evidence dataaware.Evidence
}

// Choice is what the runtime decided for one model operator.
type Choice struct {
	Operator string
	Model    string
	Variant  string
	File     string
	Provider string
	Batch    ml.BatchConfig
}

// Runtime implements exec.Options.Lateral. It is safe for concurrent use.
// Sessions are cached by the process's onnx.Env, not by the Runtime, so a
// Runtime per query (with that query's Variants) costs nothing extra.
type Runtime struct {
	cfg Config

	mu      sync.Mutex
	env     *onnx.Env
	choices []Choice
}

// New returns a runtime; ONNX Runtime is loaded on the first model call, so
// queries without models never need the library.
func New(cfg Config) *Runtime {
	if cfg.Device == "" {
		cfg.Device = onnx.Auto
	}
	if cfg.Batch.MaxBatch == 0 {
		cfg.Batch.MaxBatch = DefaultMaxBatch
	}
	if cfg.Batch.MaxDelay == 0 {
		cfg.Batch.MaxDelay = DefaultMaxDelay
	}
	cfg.Batch.Adaptive = !cfg.FixedBatch
	return &Runtime{cfg: cfg}
}

// maxChoices bounds the decisions a Runtime remembers.
const maxChoices = 256

// Choices lists the model operators planned so far (the latest maxChoices),
// in plan order.
func (r *Runtime) Choices() []Choice {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Choice(nil), r.choices...)
}

// ChooseVariant returns the variant of m that the operator named op runs:
// variants[op], variants[m.Name], else the most accurate one with a file (the
// first of equals).
func ChooseVariant(m *catalog.Model, op string, variants map[string]string) (*catalog.Variant, error) {
	for _, key := range []string{op, m.Name} {
		if name, ok := variants[key]; ok {
			v := m.Variant(name)
			if v == nil {
				names := make([]string, len(m.Variants))
				for i, x := range m.Variants {
					names[i] = x.Name
				}
				return nil, fmt.Errorf("%w: model %s has no variant %q (have %v)", ErrModel, m.Name, name, names)
			}
			return v, nil
		}
	}
	var best *catalog.Variant
	for _, v := range m.Variants {
		if v.File != "" && (best == nil || v.Accuracy > best.Accuracy) {
			best = v
		}
	}
	if best == nil {
		return nil, fmt.Errorf("%w: model %s has no variant with a file", ErrModel, m.Name)
	}
	return best, nil
}

// ModelFile resolves a variant's file: absolute as is; relative, next to the
// catalog or script that declared it, then under base, then the working
// directory.
func ModelFile(v *catalog.Variant, base string) (string, error) {
	if v.File == "" {
		return "", fmt.Errorf("%w: variant %s has no file", ErrModel, v.Name)
	}
	if filepath.IsAbs(v.File) {
		return v.File, nil
	}
	var tried []string
	for _, dir := range []string{filepath.Dir(v.Pos.File), base, "."} {
		p := filepath.Join(dir, v.File)
		if dir == "" || slices.Contains(tried, p) {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		tried = append(tried, p)
	}
	err := fmt.Errorf("%w: variant %s: file %s not found (tried %v)", ErrModel, v.Name, v.File, tried)
	if v.Pos.Line > 0 {
		// Blame the catalog entry or CREATE MODEL that names the file,
		// not the call that uses it.
		err = fmt.Errorf("%s: %w", v.Pos, err)
	}
	return "", err
}

// CheckModelArgs is the binder's bind.ModelArgChecker over model files: each
// tensor argument of a call must fit the input it feeds (ml.FitInput) in
// every variant's file, so that a declared shape the model cannot take is
// an error at the argument before anything runs. A file that cannot be
// opened is left to the run, which reports it; so is a model whose inputs
// take constants beside the tensor (side inputs) or have dynamic row
// dimensions (the bound type is the row's size, not its shape).
func (r *Runtime) CheckModelArgs(m *catalog.Model, args []arrow.DataType) (int, error) {
	var tensors []int
	for i, t := range args {
		if lt, ok := t.(*arrow.FixedSizeListType); ok && lt.Elem().ID() == arrow.FLOAT32 {
			tensors = append(tensors, i)
		}
	}
	if len(tensors) == 0 {
		return -1, nil
	}
	for _, v := range m.Variants {
		if len(v.InputSize) == 2 && len(tensors) == 1 {
			continue // resized to its input size at run time (withResize)
		}
		path, err := ModelFile(v, r.cfg.BaseDir)
		if err != nil {
			continue
		}
		r.mu.Lock()
		if r.env == nil {
			if r.env, err = onnx.Open(r.cfg.OrtLib); err != nil {
				r.mu.Unlock()
				return -1, nil // no runtime here: the run reports it
			}
		}
		env := r.env
		r.mu.Unlock()
		var ins []ml.TensorInfo
		if r.cfg.CheckOnly {
			ins, err = env.Inputs(path)
		} else {
			var sess *onnx.Session
			if sess, err = env.Session(path, onnx.Options{Device: r.cfg.Device, IntraOpThreads: r.cfg.IntraOpThreads}); err == nil {
				ins = sess.Inputs()
			}
		}
		if err != nil {
			continue
		}
		if len(ins) != len(tensors) {
			continue
		}
	inputs:
		for k, i := range tensors {
			mi := ins[k]
			if mi.DType != ml.Float32 {
				// A typed call (float16, double, ...): its rule checks
				// the column against the input when it is bound.
				continue
			}
			if len(mi.Shape) > 1 {
				for _, d := range mi.Shape[1:] {
					if d < 0 {
						continue inputs
					}
				}
			}
			size := int64(args[i].(*arrow.FixedSizeListType).Len())
			what := fmt.Sprintf("argument %d (a tensor of %d floats)", i+1, size)
			if _, err := ml.FitInput(mi, []int64{size}, what); err != nil {
				return i, fmt.Errorf("model %s variant %s (%s): %w", m.Name, v.Name, v.File, err)
			}
		}
	}
	return -1, nil
}

// preloadNeighbours opens, in the background, the sessions of the
// variants next to v in m's zoo (by input size, then accuracy): under a
// LATENCY bound the SLO policy steps a call's variant up or down one at a
// time as the link changes, and a session already in the process's cache
// (onnx.Env) takes nothing off the cut-over (Jellyfish 3.2, the worker
// manager keeps the neighbours of the chosen DNN loaded). A variant that
// fails to open is reported when a plan chooses it.
func (r *Runtime) preloadNeighbours(env *onnx.Env, m *catalog.Model, v *catalog.Variant, opts onnx.Options) {
	for _, x := range Neighbours(m, v) {
		path, err := ModelFile(x, r.cfg.BaseDir)
		if err != nil {
			continue
		}
		go func() { _, _ = env.Session(path, opts) }()
	}
}

// Neighbours are the variants of m with a file next to v when they are
// ordered by input size (pixels), then accuracy: the ones a step down or
// up from v.
func Neighbours(m *catalog.Model, v *catalog.Variant) []*catalog.Variant {
	var zoo []*catalog.Variant
	for _, x := range m.Variants {
		if x.File != "" {
			zoo = append(zoo, x)
		}
	}
	area := func(x *catalog.Variant) int {
		a := 1
		for _, d := range x.InputSize {
			a *= d
		}
		return a
	}
	sort.SliceStable(zoo, func(i, j int) bool {
		if a, b := area(zoo[i]), area(zoo[j]); a != b {
			return a < b
		}
		return zoo[i].Accuracy < zoo[j].Accuracy
	})
	i := slices.Index(zoo, v)
	if i < 0 {
		return nil
	}
	var out []*catalog.Variant
	if i > 0 {
		out = append(out, zoo[i-1])
	}
	if i+1 < len(zoo) {
		out = append(out, zoo[i+1])
	}
	return out
}

// freeInputDims says whether s takes one float32 input of the rank of a
// row of the given shape with a free (-1) dimension besides the batch, and
// gives an output whose size per row is free too: only then is there a
// shape to fix (a model whose outputs are fixed binds as it is).
func freeInputDims(s ml.Session, row []int64) bool {
	ins := s.Inputs()
	if len(ins) != 1 || ins[0].DType != ml.Float32 || len(ins[0].Shape) != len(row)+1 || !slices.Contains(ins[0].Shape[1:], -1) {
		return false
	}
	for _, o := range s.Outputs() {
		if len(o.Shape) > 1 && slices.Contains(o.Shape[1:], -1) {
			return true
		}
	}
	return false
}

// Lateral is the exec.Options.Lateral hook.
func (r *Runtime) Lateral(n *logical.LateralModel, in *arrow.Schema) (func() (dataflow.Operator, error), *arrow.Schema, error) {
	if len(n.Args) == 0 {
		return nil, nil, fmt.Errorf("%w: %s takes a tensor column, got no arguments", ErrModel, n.Name)
	}
	// Several column arguments feed the model's inputs in order
	// (VQA(img.feature, q.speech)); one column and integer constants feed a
	// model with side inputs (vad(f.audio, 16000)).
	var cols []string
	var colIdx []int
	var consts []int64
	if multiColumn(n.Args) {
		for i, a := range n.Args {
			col, ok := a.(*expr.Column)
			if !ok || col.Index < 0 || col.Index >= in.NumFields() {
				return nil, nil, fmt.Errorf("%w: %s argument %d (%s): with several tensor arguments every argument must be a tensor column", ErrModel, n.Name, i+1, a)
			}
			cols = append(cols, in.Field(col.Index).Name)
			colIdx = append(colIdx, col.Index)
		}
	} else {
		var err error
		if consts, err = sideArgs(n); err != nil {
			return nil, nil, err
		}
		col, ok := n.Args[0].(*expr.Column)
		if !ok || col.Index < 0 || col.Index >= in.NumFields() {
			return nil, nil, fmt.Errorf("%w: %s(%s): the argument must be a tensor column", ErrModel, n.Name, n.Args[0])
		}
		cols, colIdx = []string{in.Field(col.Index).Name}, []int{col.Index}
	}
	input := cols[0]
	v, err := ChooseVariant(n.Model, n.Name, r.cfg.Variants)
	if err != nil {
		return nil, nil, err
	}
	path, err := ModelFile(v, r.cfg.BaseDir)
	if err != nil {
		return nil, nil, err
	}
	r.mu.Lock()
	if r.env == nil {
		if r.env, err = onnx.Open(r.cfg.OrtLib); err != nil {
			r.mu.Unlock()
			return nil, nil, err
		}
	}
	env := r.env
	r.mu.Unlock()
	opts := onnx.Options{Device: r.cfg.Device, IntraOpThreads: r.cfg.IntraOpThreads}
	key := sched.Key(path, fmt.Sprintf("%s/%d", opts.Device, opts.IntraOpThreads))
	var sess *onnx.Session
	if s := r.cfg.Scheduler; s != nil {
		var shared ml.Session
		shared, err = s.Session(key, r.cfg.Tenant.Query, func() (ml.Session, error) { return env.Session(path, opts) })
		sess, _ = shared.(*onnx.Session)
	} else {
		sess, err = env.Session(path, opts)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("model %s variant %s: %w", n.Name, v.Name, err)
	}
	if r.cfg.Tenant.Latency > 0 {
		r.preloadNeighbours(env, n.Model, v, opts)
	}
	// A call on columns other than float32 tensors, or of a model whose
	// tensors are of other element types, maps each by the typed rule
	// (typed.go), around the same model operator.
	var typed *typedCall
	if len(consts) == 0 && !isImageCall(n.Model, sess, in, colIdx) && needsTyped(sess, in, colIdx, n.Out) {
		if typed, err = newTypedCall(n.Name, sess, in, colIdx, n.Out); err != nil {
			return nil, nil, fmt.Errorf("model %s variant %s (%s): %w", n.Name, v.Name, path, err)
		}
	}
	// A model with side inputs (a recurrent state, a sample rate) is fed
	// constants for them; sess itself still says which provider runs.
	var ms ml.Session = sess
	if typed != nil {
		ms = typed.session
	} else if len(cols) > 1 {
		if got := len(sess.Inputs()); got != len(cols) {
			return nil, nil, fmt.Errorf("%w: %s(%s): %d arguments for a model with %d inputs %v (variant %s, %s): the arguments feed the inputs in order",
				ErrModel, n.Name, strings.Join(cols, ", "), len(cols), got, sess.Inputs(), v.Name, path)
		}
	} else if ms, err = withSideInputs(sess, input, consts); err != nil {
		return nil, nil, fmt.Errorf("model %s variant %s (%s): %w", n.Name, v.Name, path, err)
	} else if shape, serr := ml.FieldShape(in.Field(colIdx[0])); serr == nil {
		// A variant of a smaller input size than the column's images
		// (Jellyfish's data adaptation) gets them resized.
		if ms, err = withResize(ms, v, shape); err != nil {
			return nil, nil, fmt.Errorf("model %s variant %s (%s): %w", n.Name, v.Name, path, err)
		}
		// A network of free spatial sizes (a fully convolutional one) on a
		// column of one fixed shape (a detector's crops): a probe call at
		// that shape fixes its outputs' shapes, which the heads bind to.
		if len(v.InputSize) == 0 && freeInputDims(ms, shape) {
			if ms, err = fixShapes(ms, shape); err != nil {
				return nil, nil, fmt.Errorf("%w: model %s variant %s (%s): %w", ErrModel, n.Name, v.Name, path, err)
			}
		}
	}
	// A model called on encoded images decodes them on this worker and
	// decodes its output into the query's rows (image.go).
	var img *imageCall
	bindIn := in
	if typed != nil {
		bindIn = typed.bindIn(in)
		cols, colIdx = typed.inputs()
	} else if len(cols) == 1 && isBinary(in.Field(colIdx[0]).Type) {
		if img, err = newImageCall(n.Model, v, ms, n.Out); err != nil {
			return nil, nil, err
		}
		ms = img.session
		pre, err := ml.NewImageStep(in, colIdx[0], img.prep)
		if err != nil {
			return nil, nil, fmt.Errorf("model %s variant %s (%s): %w", n.Name, v.Name, path, err)
		}
		bindIn = pre.Schema()
		cols, colIdx = []string{ml.ImageTensorColumn}, []int{bindIn.NumFields() - 2}
	}
	var heads []ml.Head
	if typed != nil {
		heads = typed.heads()
	} else if img != nil {
		heads, err = img.heads(n.Model, n.Out)
	} else {
		heads, err = ml.PlanHeads(ms, n.Out)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("model %s variant %s (%s): %w", n.Name, v.Name, path, err)
	}
	// The plan addresses columns by position, but ml.Bind wants unique names:
	// a second model's label next to the first one's is qualified by its
	// alias (c.label).
	taken := map[string]bool{}
	for _, f := range bindIn.Fields() {
		taken[f.Name] = true
	}
	for i := range heads {
		for j, c := range heads[i].Columns {
			if taken[c] {
				heads[i].Columns[j] = n.Alias + "." + c
			}
			taken[heads[i].Columns[j]] = true
		}
	}
	// The call's own WITH (max_batch, max_delay_ms) over the catalog's
	// defaults for the model, over the runtime's policy.
	batch := r.cfg.Batch
	if n.Model != nil && n.Model.MaxBatch > 0 {
		batch.MaxBatch = n.Model.MaxBatch
	}
	if n.Model != nil && n.Model.MaxDelayMs > 0 {
		batch.MaxDelay = time.Duration(n.Model.MaxDelayMs * float64(time.Millisecond))
	}
	if n.Batch.MaxBatch > 0 {
		batch.MaxBatch = n.Batch.MaxBatch
	}
	if n.Batch.MaxDelay > 0 {
		batch.MaxDelay = n.Batch.MaxDelay
	}
	// By index: a join may give two columns one name.
	cfg := ml.Config{Inputs: cols, InputIndexes: colIdx, Heads: heads, NoErrorColumn: true, MaxBatch: batch.MaxBatch}
	tenant := r.cfg.Tenant
	if s := r.cfg.Scheduler; s != nil && ms == ml.Session(sess) {
		if _, ok := s.Policy().(*sched.DataAware); ok {
			if tenant, err = r.variantTenant(s, env, n.Model, v, key, sess, opts); err != nil {
				return nil, nil, err
			}
		}
	}
	// Under a LATENCY bound, rows the source sent at a smaller side run on
	// the variant of that input size, where the zoo has one.
	var sides []sideVariant
	if r.cfg.Tenant.Latency > 0 && len(cols) == 1 && ms == ml.Session(sess) {
		sides = r.sideVariants(env, n.Model, v, in.Field(colIdx[0]), sess, opts)
	}
	bind := func() (*ml.Model, error) {
		c := cfg
		for _, sv := range sides {
			x := sv.SideVariant
			if s := r.cfg.Scheduler; s != nil {
				// Before the call's own session: the scheduler keeps
				// the query's last bound tenant, the one with the
				// policy's variants.
				t := tenant
				t.Variants = nil
				x.Session = s.Bind(x.Session, sv.key, t)
			}
			c.SideVariants = append(c.SideVariants, x)
		}
		fs := freshSession(ms)
		if s := r.cfg.Scheduler; s != nil {
			fs = s.Bind(fs, key, tenant)
		}
		return ml.Bind(fs, bindIn, c)
	}
	m, err := bind()
	if err != nil {
		return nil, nil, fmt.Errorf("model %s variant %s (%s): %w", n.Name, v.Name, path, err)
	}
	out := m.OutputSchema()
	// steps makes an instance's own Pre and Post steps (they keep scratch).
	steps := func(*ml.Model) (pre, post ml.Step, err error) { return nil, nil, nil }
	if img != nil {
		steps = func(m *ml.Model) (ml.Step, ml.Step, error) {
			pre, err := ml.NewImageStep(in, colIdxArg(n, in), img.prep)
			if err != nil {
				return nil, nil, err
			}
			post, err := img.post(m.OutputSchema())
			return pre, post, err
		}
		_, post, err := steps(m)
		if err != nil {
			return nil, nil, fmt.Errorf("model %s variant %s (%s): %w", n.Name, v.Name, path, err)
		}
		out = post.Schema()
	}
	if typed != nil {
		steps = func(m *ml.Model) (ml.Step, ml.Step, error) {
			post, err := typed.post(m.OutputSchema())
			return typed.pre(in), post, err
		}
		_, post, err := steps(m)
		if err != nil {
			return nil, nil, fmt.Errorf("model %s variant %s (%s): %w", n.Name, v.Name, path, err)
		}
		out = post.Schema()
	}
	if want := n.Schema(); out.NumFields() != want.NumFields() {
		return nil, nil, fmt.Errorf("%w: model %s variant %s gives %d columns, the plan wants %d", ErrModel, n.Name, v.Name, out.NumFields(), want.NumFields())
	}
	ch := Choice{Operator: n.Name, Model: n.Model.Name, Variant: v.Name, File: path, Provider: sess.Provider(), Batch: batch}
	r.mu.Lock()
	// A long-lived runtime (REPL, worker) plans many queries: keep the recent
	// choices only.
	if len(r.choices) == maxChoices {
		r.choices = append(r.choices[:0], r.choices[1:]...)
	}
	r.choices = append(r.choices, ch)
	r.mu.Unlock()
	if r.cfg.Log != nil {
		threads := "default threads"
		if t := r.cfg.IntraOpThreads; t > 0 {
			threads = fmt.Sprintf("%d thread%s", t, map[bool]string{true: "s"}[t > 1])
		}
		adaptive := ""
		if batch.Adaptive {
			adaptive = ", adaptive"
		}
		aligned := ""
		for _, sv := range sides {
			aligned += fmt.Sprintf(", rows sent at %d on %s", sv.Side, sv.Name)
		}
		fmt.Fprintf(r.cfg.Log, "-- model %s: variant %s (%s) on %s, %s, max batch %d, max delay %s%s%s\n",
			n.Name, v.Name, path, ch.Provider, threads, batch.MaxBatch, batch.MaxDelay, adaptive, aligned)
	}
	return func() (dataflow.Operator, error) {
		// Each instance needs its own Model (scratch buffers); the session is
		// shared.
		mm, err := bind()
		if err != nil {
			return nil, err
		}
		op, err := ml.NewOperator(mm, batch)
		if err != nil {
			return nil, err
		}
		if op.Pre, op.Post, err = steps(mm); err != nil {
			return nil, err
		}
		op.Attrs = map[string]string{"variant": v.Name, "device": ch.Provider}
		op.Deadline, op.SoloMs = r.cfg.Tenant.Latency, soloMs(v)
		return op, nil
	}, out, nil
}

// soloMs is the profiled latency of a one-row call of v (P50; the fastest
// worker type that has a profile, so a lazy drop never blames a row on a
// slow machine's numbers), 0 without one.
func soloMs(v *catalog.Variant) float64 {
	best := 0.0
	for _, l := range v.Latency {
		if len(l.ByBatch) == 0 {
			continue
		}
		if x := l.BatchMs(1, 50); best == 0 || x < best {
			best = x
		}
	}
	return best
}

// isImageCall reports a call of one BLOB column that the image path
// decodes: the model has an image: recipe, or takes a float32 image
// ([N, C, H, W] or more) that only such a recipe can make from encoded bytes
// (the image path then says the recipe is missing). Other BLOBs are typed
// calls' bytes (typed.go).
func isImageCall(m *catalog.Model, sess ml.Session, in *arrow.Schema, colIdx []int) bool {
	if len(colIdx) != 1 || !isBinary(in.Field(colIdx[0]).Type) {
		return false
	}
	if m != nil && m.Image != nil {
		return true
	}
	ins := sess.Inputs()
	return len(ins) == 1 && ins[0].DType == ml.Float32 && len(ins[0].Shape) > 2
}

// isBinary reports an encoded-bytes column (a BLOB of PNG or JPEG).
func isBinary(t arrow.DataType) bool {
	return t.ID() == arrow.BINARY || t.ID() == arrow.LARGE_BINARY
}

// colIdxArg is the input column of a one-column call.
func colIdxArg(n *logical.LateralModel, in *arrow.Schema) int {
	if col, ok := n.Args[0].(*expr.Column); ok && col.Index >= 0 && col.Index < in.NumFields() {
		return col.Index
	}
	return -1
}

// multiColumn reports whether a call passes more than one column: the
// arguments then feed the model's inputs in order.
func multiColumn(args []expr.Expr) bool {
	n := 0
	for _, a := range args {
		if _, ok := a.(*expr.Column); ok {
			n++
		}
	}
	return n > 1
}
