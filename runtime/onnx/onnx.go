// Package onnx owns the process's ONNX Runtime environment and its sessions: the
// shared library is loaded and the environment initialised once per process, and
// one session per (model file, device, thread count) is opened and reused. A
// Session implements operators/ml.Session, reads its input and output signatures
// from the model, and reports which execution provider it runs on (CUDA when asked
// for and available, otherwise CPU with the reason).
//
// It must not import anything above runtime (no cmd/).
package onnx

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/runtime/devices"
	"github.com/tierflow/tierflow/runtime/ortlib"
)

// Sentinel error kinds.
var (
	// ErrLibrary: the ONNX Runtime library could not be found or initialised, or a
	// second, different library was asked for in the same process.
	ErrLibrary = errors.New("onnx: runtime library")
	// ErrModel: a model file could not be opened or has an unsupported signature.
	ErrModel = errors.New("onnx: model")
)

// The ONNX Runtime environment is process-wide state in the C library: it can be
// created once, and a library once loaded stays loaded. So the Env is a
// process singleton, guarded by a once.
var (
	envOnce sync.Once
	envVal  *Env
	envErr  error
)

// Env is the process's ONNX Runtime environment and session cache. It is safe for
// concurrent use.
type Env struct {
	lib     string
	version string

	invOnce sync.Once
	inv     devices.Inventory

	mu       sync.Mutex
	sessions map[sessionKey]*Session
	// cudaFailed remembers, per GPU index, why the CUDA provider could not be
	// used, so later sessions fall back at once: ONNX Runtime logs each failed
	// attempt to stderr, and a missing device or library does not come back.
	cudaFailed map[int]string
}

// Open initialises ONNX Runtime once per process from the library ortlib.Find
// locates (explicit path, $TIERFLOW_ORT_LIB, then the setup cache) and returns the
// environment. Later calls return the same Env; a later call naming a different
// library is an error, because the first one cannot be unloaded.
func Open(explicitLib string) (*Env, error) {
	lib, err := ortlib.Find(explicitLib)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLibrary, err)
	}
	envOnce.Do(func() {
		ort.SetSharedLibraryPath(lib)
		if err := ort.InitializeEnvironment(ort.WithLogLevelError()); err != nil {
			envErr = fmt.Errorf("%w: initialise %s: %w", ErrLibrary, lib, err)
			return
		}
		envVal = &Env{lib: lib, version: ort.GetVersion(), sessions: map[sessionKey]*Session{}}
	})
	if envErr != nil {
		return nil, envErr
	}
	if abs(lib) != abs(envVal.lib) {
		return nil, fmt.Errorf("%w: this process already loaded %s; cannot also load %s", ErrLibrary, envVal.lib, lib)
	}
	return envVal, nil
}

func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// Library is the path of the loaded shared library.
func (e *Env) Library() string { return e.lib }

// Version is the ONNX Runtime version string of the loaded library.
func (e *Env) Version() string { return e.version }

// Device says where a session should run.
type Device string

const (
	// CPU runs on the CPU execution provider.
	CPU Device = "cpu"
	// CUDA asks for the CUDA execution provider and falls back to CPU (reported by
	// Session.Provider) when there is no GPU or the library lacks CUDA.
	CUDA Device = "cuda"
	// Auto is CUDA when a GPU is present, CPU otherwise.
	Auto Device = "auto"
)

// Options configure a session. The zero value is CPU with ONNX Runtime's default
// thread count.
type Options struct {
	Device Device
	GPU    int // CUDA device index
	// IntraOpThreads is the thread count inside one operator; 0 keeps ONNX
	// Runtime's default (one per physical core). Set it from the worker's CPU share.
	IntraOpThreads int
	// Inventory replaces the machine's device inventory (tests use it to take the
	// GPU path without a GPU). Nil takes the real one, once per Env.
	Inventory func() devices.Inventory
}

type sessionKey struct {
	path    string
	device  Device
	gpu     int
	threads int
}

// Session opens (or returns the cached) session for the model at path with o.
// Sessions live as long as the process (or until CloseSessions): models are loaded
// once per (variant, device), not per query.
func (e *Env) Session(path string, o Options) (*Session, error) {
	if o.Device == "" {
		o.Device = CPU
	}
	switch o.Device {
	case CPU, CUDA, Auto:
	default:
		return nil, fmt.Errorf("%w: unknown device %q (want cpu, cuda or auto)", ErrModel, o.Device)
	}
	k := sessionKey{path: abs(path), device: o.Device, gpu: o.GPU, threads: o.IntraOpThreads}
	e.mu.Lock()
	defer e.mu.Unlock()
	if s, ok := e.sessions[k]; ok {
		return s, nil
	}
	s, err := e.open(k, o)
	if err != nil {
		return nil, err
	}
	e.sessions[k] = s
	return s, nil
}

// CloseSessions destroys every cached session. Sessions handed out before must not
// be used afterwards.
func (e *Env) CloseSessions() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, s := range e.sessions {
		s.destroy()
		delete(e.sessions, k)
	}
}

// Cached is the number of open sessions.
func (e *Env) Cached() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.sessions)
}

func (e *Env) inventory(o Options) devices.Inventory {
	if o.Inventory != nil {
		return o.Inventory()
	}
	e.invOnce.Do(func() { e.inv = devices.Take() })
	return e.inv
}

// Inputs are the inputs of the model at path: a cached session's when this
// process has one, else read from the file by a session ONNX Runtime makes
// and destroys at once. Nothing is kept: a process that only checks calls
// against model files (the coordinator, which runs none) held a session,
// the model's weights with it, for every file any query ever named.
func (e *Env) Inputs(path string) ([]ml.TensorInfo, error) {
	p := abs(path)
	e.mu.Lock()
	for k, s := range e.sessions {
		if k.path == p {
			e.mu.Unlock()
			return s.in, nil
		}
	}
	e.mu.Unlock()
	sig, err := readSignature(p)
	if err != nil {
		return nil, err
	}
	return sig.in, nil
}

// signature is a model file's inputs and outputs, with their names.
type signature struct {
	in, out           []ml.TensorInfo
	inNames, outNames []string
}

// readSignature reads the inputs and outputs of the model at path (ONNX
// Runtime loads it in a session of its own and destroys it).
func readSignature(path string) (signature, error) {
	var sig signature
	ins, outs, err := ort.GetInputOutputInfo(path)
	if err != nil {
		return sig, fmt.Errorf("%w: %s: %w", ErrModel, path, err)
	}
	for _, io := range ins {
		ti, err := tensorInfo(io)
		if err != nil {
			return sig, fmt.Errorf("%w: %s: input %w", ErrModel, path, err)
		}
		sig.in, sig.inNames = append(sig.in, ti), append(sig.inNames, io.Name)
	}
	for _, io := range outs {
		ti, err := tensorInfo(io)
		if err != nil {
			return sig, fmt.Errorf("%w: %s: output %w", ErrModel, path, err)
		}
		sig.out, sig.outNames = append(sig.out, ti), append(sig.outNames, io.Name)
	}
	return sig, nil
}

func (e *Env) open(k sessionKey, o Options) (*Session, error) {
	sig, err := readSignature(k.path)
	if err != nil {
		return nil, err
	}
	s := &Session{path: k.path, in: sig.in, out: sig.out, inNames: sig.inNames, outNames: sig.outNames}

	opts, err := ort.NewSessionOptions()
	if err != nil {
		return nil, fmt.Errorf("%w: session options: %w", ErrLibrary, err)
	}
	defer opts.Destroy()
	if k.threads > 0 {
		if err := opts.SetIntraOpNumThreads(k.threads); err != nil {
			return nil, fmt.Errorf("%w: intra-op threads %d: %w", ErrModel, k.threads, err)
		}
		s.threads = k.threads
	}
	// The intra-op threads sleep between runs, not spin: a worker's cores
	// are shared by its queries' steps, the control plane and other
	// sessions, and ONNX Runtime's threads spun on them after every run
	// (runtime/dataaware's tests, paced by their publishers: 10-12 CPU-s
	// with spinning, 2.5-2.8 without, the same wall time).
	if err := opts.AddSessionConfigEntry("session.intra_op.allow_spinning", "0"); err != nil {
		return nil, fmt.Errorf("%w: intra-op spinning: %w", ErrModel, err)
	}
	s.provider = e.chooseProvider(opts, o)
	// The bound is the CPU's: a CUDA session's weights and tensors are
	// the GPU's memory, which the arena does not hold.
	if strings.HasPrefix(s.provider, "cpu") {
		if s.arena, err = useArena(opts, k.path); err != nil {
			return nil, err
		}
	}
	s.s, err = ort.NewDynamicAdvancedSession(k.path, s.inNames, s.outNames, opts)
	if err != nil {
		releaseArena(s.arena)
		if ae := arenaError(k.path, err); ae != nil {
			return nil, ae // its first allocations do not fit the bound
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrModel, k.path, err)
	}
	s.meta = readMetadata(s.s)
	return s, nil
}

// chooseProvider appends the CUDA provider when asked and possible, and returns
// the name of the provider the session will use, with the reason for a fallback.
func (e *Env) chooseProvider(opts *ort.SessionOptions, o Options) string {
	if o.Device == CPU {
		return "cpu"
	}
	inv := e.inventory(o)
	if !inv.HasGPU() {
		return "cpu (no GPU)"
	}
	if o.GPU < 0 || o.GPU >= len(inv.GPUs) {
		return fmt.Sprintf("cpu (no GPU %d; %d present)", o.GPU, len(inv.GPUs))
	}
	if why, ok := e.cudaFailed[o.GPU]; ok {
		return "cpu (CUDA unavailable: " + why + ")"
	}
	if err := appendCUDA(opts, o.GPU); err != nil {
		if e.cudaFailed == nil {
			e.cudaFailed = map[int]string{}
		}
		e.cudaFailed[o.GPU] = cudaReason(err)
		return "cpu (CUDA unavailable: " + e.cudaFailed[o.GPU] + ")"
	}
	return "cuda:" + strconv.Itoa(o.GPU)
}

func appendCUDA(opts *ort.SessionOptions, gpu int) error {
	cuda, err := ort.NewCUDAProviderOptions()
	if err != nil {
		return err
	}
	defer cuda.Destroy()
	if err := cuda.Update(map[string]string{"device_id": strconv.Itoa(gpu)}); err != nil {
		return err
	}
	return opts.AppendExecutionProviderCUDA(cuda)
}

// ortLocation is the "file.cc:62 " source position ONNX Runtime puts before a message.
var ortLocation = regexp.MustCompile(`^[\w./+-]+:\d+ `)

// cudaReason shortens ONNX Runtime's error to what a person acts on: "CUDA
// failure 100: no CUDA-capable device is detected", or the library that failed to
// load and why, without the C++ signatures and source paths around it.
func cudaReason(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, "FAIL : "); i >= 0 {
		s = s[i+len("FAIL : "):]
	}
	s = ortLocation.ReplaceAllString(s, "")
	if i := strings.Index(s, "CUDA failure"); i >= 0 {
		s = s[i:]
	}
	if i := strings.Index(s, " ; "); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

func readMetadata(s *ort.DynamicAdvancedSession) map[string]string {
	out := map[string]string{}
	md, err := s.GetModelMetadata()
	if err != nil {
		return out
	}
	defer md.Destroy()
	keys, err := md.GetCustomMetadataMapKeys()
	if err != nil {
		return out
	}
	for _, k := range keys {
		if v, ok, err := md.LookupCustomMetadataMap(k); err == nil && ok {
			out[k] = v
		}
	}
	return out
}

func tensorInfo(io ort.InputOutputInfo) (ml.TensorInfo, error) {
	if io.OrtValueType != ort.ONNXTypeTensor {
		return ml.TensorInfo{}, fmt.Errorf("%q is a %s, want a tensor", io.Name, io.OrtValueType)
	}
	ti := ml.TensorInfo{Name: io.Name, Shape: append([]int64(nil), io.Dimensions...)}
	for d, e := range elementTypes {
		if e == io.DataType {
			ti.DType = d
			return ti, nil
		}
	}
	return ml.TensorInfo{}, fmt.Errorf("%q has element type %s, want one of float32, float16, float64, int64, int32, int16, int8, uint8, uint16, bool, string", io.Name, io.DataType)
}

// elementTypes are ONNX Runtime's element types of the tensors a session
// takes and gives (ml.DType's).
var elementTypes = map[ml.DType]ort.TensorElementDataType{
	ml.Float32: ort.TensorElementDataTypeFloat,
	ml.Int64:   ort.TensorElementDataTypeInt64,
	ml.Int32:   ort.TensorElementDataTypeInt32,
	ml.Int16:   ort.TensorElementDataTypeInt16,
	ml.Int8:    ort.TensorElementDataTypeInt8,
	ml.Uint8:   ort.TensorElementDataTypeUint8,
	ml.Uint16:  ort.TensorElementDataTypeUint16,
	ml.Bool:    ort.TensorElementDataTypeBool,
	ml.Float16: ort.TensorElementDataTypeFloat16,
	ml.Float64: ort.TensorElementDataTypeDouble,
	ml.String:  ort.TensorElementDataTypeString,
}

// ThreadsForShare is the intra-op thread count for one of sessions sessions that
// share a worker's CPU share of cpus cores: an even split, at least one thread,
// so co-located models do not oversubscribe the worker's cores.
func ThreadsForShare(cpus float64, sessions int) int {
	if sessions < 1 {
		sessions = 1
	}
	return max(1, int(cpus/float64(sessions)))
}
