package onnx

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"sync"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/tierflow/tierflow/dataflow"
)

// ONNX Runtime's memory is not the Go heap: a model's weights and the
// tensors between its layers live in its own allocator, which no query's
// budget and no worker guard sees, and a small input can ask for a great
// deal of it (10,000 rows of 16 floats through a 4,096-wide layer ask 164
// MB of a 640 KB input), so one query could grow a worker past its
// machine. Bounded, every session of the process allocates from one arena
// of at most the bound (ONNX Runtime's environment allocator), and a call
// that would pass it fails, naming the bound, instead of the process.
//
// The weights are in the arena too, packed: 1.5-1.7 times the model file
// (measured: a 16 MiB MLP took 27 MiB, a 13.9 MB CNN 21, a 64 MiB MLP 100).
// A session whose weights do not fit does not use the arena at all: ONNX
// Runtime 1.24 then runs it on an allocator of its own, unbounded (the 16
// MiB MLP under a bound of 8 or 16 MiB grew the process by 100 MiB with no
// refusal). So a model opens under the bound only when twice its file fits
// beside twice the files of the sessions already open, and is refused
// otherwise: what opens is bounded, what would not be is not run.

var (
	boundMu sync.Mutex
	// bound is BoundMemory's bytes (0: none); arena is the bound the
	// environment's arena was registered with (0: not registered);
	// weights is what the sessions opened under it hold of it (twice
	// their files).
	bound, arena, weights int64
)

// BoundMemory bounds what ONNX Runtime may hold in this process, the
// weights and intermediate tensors of every CPU session together, at max
// bytes (0: no bound, ONNX Runtime's own arena per session). It applies to sessions
// opened after it; it must come before the first, since the arena lives as
// long as the process: a later call with another bound is an error.
func BoundMemory(max int64) error {
	if max < 0 {
		return fmt.Errorf("%w: a model memory bound of %d bytes", ErrModel, max)
	}
	boundMu.Lock()
	defer boundMu.Unlock()
	if arena != 0 && max != arena {
		return fmt.Errorf("%w: this process's model memory is already bound at %s", ErrLibrary, dataflow.Bytes(arena))
	}
	bound = max
	return nil
}

// memoryBound is the bound sessions opened now get (0: none).
func memoryBound() int64 {
	boundMu.Lock()
	defer boundMu.Unlock()
	return bound
}

// useArena registers the bounded arena with the environment the first
// time a session is opened under a bound, and makes the session for model
// (its file) allocate from it, or refuses the model when twice its file
// does not fit beside the sessions already open. It returns what it
// counted for the session's weights, for releaseArena when the session
// goes (or fails to open).
func useArena(opts *ort.SessionOptions, model string) (int64, error) {
	boundMu.Lock()
	defer boundMu.Unlock()
	if bound == 0 {
		return 0, nil
	}
	st, err := os.Stat(model)
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %w", ErrModel, model, err)
	}
	need := 2 * st.Size()
	if weights+need > bound {
		return 0, &ArenaError{Model: model, Want: need, Free: max(0, bound-weights), Bound: bound, Weights: true}
	}
	if arena == 0 {
		mi, err := ort.GetMemoryInfo()
		if err != nil {
			return 0, fmt.Errorf("%w: memory info: %w", ErrLibrary, err)
		}
		// Grown to the next power of two (ONNX Runtime's default): grown
		// by what is asked, the arena's regions fit one call's tensors
		// each and cannot serve a larger call's after it, so calls at
		// changing sizes (a detector's 320 to 960 pixels) were refused
		// with most of it free (the detector needed 160 MiB at most this
		// way, more than 256 the other).
		const defaultStrategy = -1
		cfg, err := ort.NewArenaCfg(int(bound), defaultStrategy, -1, -1)
		if err != nil {
			return 0, fmt.Errorf("%w: arena of %s: %w", ErrLibrary, dataflow.Bytes(bound), err)
		}
		defer cfg.Destroy()
		if err := ort.CreateAndRegisterAllocator(mi, cfg); err != nil {
			return 0, fmt.Errorf("%w: arena of %s: %w", ErrLibrary, dataflow.Bytes(bound), err)
		}
		arena = bound
	}
	if err := opts.AddSessionConfigEntry("session.use_env_allocators", "1"); err != nil {
		return 0, fmt.Errorf("%w: the environment's arena: %w", ErrLibrary, err)
	}
	weights += need
	return need, nil
}

// releaseArena gives back what useArena counted for a session.
func releaseArena(n int64) {
	boundMu.Lock()
	defer boundMu.Unlock()
	weights -= n
}

// arenaRefusal matches ONNX Runtime's error when its arena cannot grow:
// "... BFCArena::AllocateRawInternal ... Available memory of 15662848 is
// smaller than requested bytes of 163840000".
var arenaRefusal = regexp.MustCompile(`Available memory of (\d+) is smaller than requested bytes of (\d+)`)

// ArenaError: a call asked the bounded arena (BoundMemory) for more than
// it had free. It is a dataflow.ErrMemory: the query fails for its memory.
type ArenaError struct {
	Model             string
	Want, Free, Bound int64
	// Weights: the model's weights did not fit (it was not opened), not
	// a call's tensors.
	Weights bool
}

func (e *ArenaError) Error() string {
	if e.Weights {
		return fmt.Sprintf("model %s needs %s for its weights (twice its file), with %s of the %s ONNX Runtime's sessions share on this worker left by those open (--max-model-memory)",
			e.Model, dataflow.Bytes(e.Want), dataflow.Bytes(e.Free), dataflow.Bytes(e.Bound))
	}
	return fmt.Sprintf("model %s asked ONNX Runtime for %s more, with %s of the %s its sessions share on this worker free (--max-model-memory)",
		e.Model, dataflow.Bytes(e.Want), dataflow.Bytes(e.Free), dataflow.Bytes(e.Bound))
}

func (e *ArenaError) Unwrap() error { return dataflow.ErrMemory }

// memoryError is err as an *ArenaError when it is the bounded arena's
// refusal, else err with the model's path.
func (s *Session) memoryError(err error) error {
	if ae := arenaError(s.path, err); ae != nil {
		return ae
	}
	return fmt.Errorf("%s: %w", s.path, err)
}

// arenaError is err, of model's session, as an *ArenaError, or nil when it
// is not the bounded arena's refusal.
func arenaError(model string, err error) error {
	m := arenaRefusal.FindStringSubmatch(err.Error())
	if m == nil {
		return nil
	}
	free, _ := strconv.ParseInt(m[1], 10, 64)
	want, _ := strconv.ParseInt(m[2], 10, 64)
	return &ArenaError{Model: model, Want: want, Free: free, Bound: memoryBound()}
}
