package deploy

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/planner/rewrite"
)

// ErrScript: a submitted script is not one query after its definitions.
var ErrScript = errors.New("deploy: bad script")

// Script is the unit of submission: CREATE statements followed by one query
// (SELECT or INSERT). Workers and the coordinator compile the same Script and
// so build the same dataflow.
type Script struct {
	Filename string `json:"filename"`
	Source   string `json:"source"`
	// BaseDir resolves relative file paths.
	BaseDir string `json:"base_dir,omitempty"`
	// Catalog is a catalog YAML file the script starts from (optional).
	Catalog string `json:"catalog,omitempty"`
	// CatalogBeside says Catalog was found beside the script rather than
	// named (catalog.Catalog.BaseFile): the script's CREATEs replace its
	// entries.
	CatalogBeside bool `json:"catalog_beside,omitempty"`
	// Nth picks the Nth query (1-based) of a script with several: the
	// definitions before it apply, everything from it on is ignored. 0
	// means the script holds exactly one query.
	Nth int `json:"nth,omitempty"`
	// Rewrite builds the rewritten plan (planner/rewrite: filters below
	// models, pruned columns), the one the optimizer placed.
	Rewrite bool `json:"rewrite,omitempty"`
	// Variants are the model variants the plan chose, by operator and by
	// model name (what runtime/inference takes).
	Variants map[string]string `json:"variants,omitempty"`
	// Batches are the plan's dynamic batching per model operator (by
	// operator name): what the planner chose over the call's WITH and the
	// catalog's values. Every worker builds its model calls with them.
	Batches map[string]Batch `json:"batches,omitempty"`
	// Priority (REALTIME, BEST_EFFORT or "") and LatencyMs are the query's
	// WITH (PRIORITY ..., LATENCY ...), set by the coordinator: a worker
	// builds the query's model calls on its inference scheduler with them
	// (runtime/inference/sched), before it has bound the query itself.
	Priority  string  `json:"priority,omitempty"`
	LatencyMs float64 `json:"latency_ms,omitempty"`
	// Source settings every worker builds with (as `tierflow run` flags).
	OnError   string        `json:"on_error,omitempty"` // fail (default) or skip
	MaxDelay  time.Duration `json:"max_delay,omitempty"`
	BatchSize int           `json:"batch_size,omitempty"`
	// StateTTL: SET exec.state_ttl (a stream top-N's idle keys).
	StateTTL time.Duration `json:"state_ttl,omitempty"`
	// SourceMaxDelay bounds a message source's wait for a partial batch
	// (`--source-max-delay`; 0: the connectors' default; a stream's catalog
	// source_max_delay_ms wins).
	SourceMaxDelay time.Duration `json:"source_max_delay,omitempty"`
	// Planner holds the script's SET planner.* values before this query
	// (operators/session), which the coordinator plans it with.
	Planner map[string]string `json:"planner,omitempty"`
	// Pace replays the file streams at their catalog rates, for a bounded
	// time or input (EXPLAIN ANALYZE); nil reads them as fast as they go.
	Pace *Pace `json:"pace,omitempty"`
	// CheckModelArgs, when set, checks model calls against their files as
	// the query binds (the coordinator's, given the script's BaseDir); it
	// does not travel.
	CheckModelArgs bind.ModelArgChecker `json:"-"`
	// Confine, when set, vets every file the bind probes for its columns
	// (a table or file stream without a column list) before it is read
	// (runtime/security's ConfineScript sets it); it does not travel.
	Confine func(path string) (string, error) `json:"-"`
	// Replay feeds the file streams at their declared RATE, unbounded, as
	// live streams (`run --replay`); Pace, when set, wins.
	Replay bool `json:"replay,omitempty"`
	// ResumeEpoch is where a re-deployed query resumes (the epoch every
	// sink had committed): a replayed file stream goes as fast as it reads
	// until its watermark reaches it, rebuilding the operators' state, and
	// at its RATE from there.
	ResumeEpoch uint64 `json:"resume_epoch,omitempty"`
	// Positions are where each JetStream stream (by name) stood as the
	// query's sources took their batches, recorded by earlier generations
	// (sources.Report.Position): a re-deployed query whose state is TUMBLE
	// windows starts its JetStream sources at the last position before the
	// first window it must replay instead of at the stream's start.
	Positions map[string]sources.Positions `json:"positions,omitempty"`
}

// Replay is the pacing of `run --replay`: every file stream at its declared
// RATE (as fast as it reads without one), to its end, the rows stamped as
// they go out, so a file plays a live stream.
func Replay(s *catalog.Stream) sources.Pacing {
	if s == nil {
		return sources.Pacing{}
	}
	return sources.Pacing{Rate: s.Rate}
}

// Batch is one model operator's batching in a Script.
type Batch struct {
	MaxBatch int           `json:"max_batch,omitempty"`
	MaxDelay time.Duration `json:"max_delay,omitempty"`
}

// withBatches sets each model call's batching to the plan's (Script.Batches).
func withBatches(plan *logical.Plan, bs map[string]Batch) *logical.Plan {
	if len(bs) == 0 {
		return plan
	}
	root := logical.Transform(plan.Root, func(n logical.Node) logical.Node {
		lm, ok := n.(*logical.LateralModel)
		if !ok {
			return n
		}
		b, ok := bs[lm.Name]
		if !ok {
			return n
		}
		cp := *lm
		if b.MaxBatch > 0 {
			cp.Batch.MaxBatch = b.MaxBatch
		}
		if b.MaxDelay > 0 {
			cp.Batch.MaxDelay = b.MaxDelay
		}
		return &cp
	})
	return &logical.Plan{Root: root, Objectives: plan.Objectives}
}

// Pace is how an analysed query's file streams are fed.
type Pace struct {
	// AtRate replays each stream at the rate its catalog entry declares
	// (the rate the plan was made for).
	AtRate bool `json:"at_rate,omitempty"`
	// For ends the streams after this long; MaxRows after this many rows
	// each. Zero: no bound.
	For     time.Duration `json:"for,omitempty"`
	MaxRows int64         `json:"max_rows,omitempty"`
}

// Pacing is the source pacing of stream s under p.
func (p *Pace) Pacing(s *catalog.Stream) sources.Pacing {
	out := sources.Pacing{For: p.For, MaxRows: p.MaxRows}
	if p.AtRate && s != nil {
		out.Rate = s.Rate
	}
	return out
}

// Bind parses the script, applies its definitions to cat (nil: a fresh load
// of s.Catalog, or an empty catalog) and binds its one query.
func (s Script) Bind(cat *catalog.Catalog) (*logical.Plan, *catalog.Catalog, error) {
	script, err := lang.Parse(s.Filename, s.Source)
	if err != nil {
		return nil, nil, err
	}
	if cat == nil {
		if cat, err = s.LoadCatalog(); err != nil {
			return nil, nil, err
		}
	}
	if cat.Files == nil {
		// Tables and file streams without columns take their file's, read
		// where the script runs.
		cat.Files = exec.FileSchemas{BaseDir: s.BaseDir, Confine: s.Confine}
	}
	var query lang.Statement
	n := 0
	for _, stmt := range script.Statements {
		if s.Nth > 0 && query != nil {
			break
		}
		if ok, err := bind.Apply(cat, stmt); ok {
			if err != nil {
				return nil, nil, err
			}
			continue
		}
		if e, ok := stmt.(*lang.Explain); ok && e.Analyze {
			stmt = e.Target() // EXPLAIN ANALYZE runs its query
		}
		switch stmt.(type) {
		case *lang.Query, *lang.Insert:
			n++
			switch {
			case s.Nth > 0 && n == s.Nth:
				query = stmt
			case s.Nth > 0:
			case query != nil:
				return nil, nil, fmt.Errorf("%s: %w: a submission runs one query; this is the second", stmt.Position(), ErrScript)
			default:
				query = stmt
			}
		default:
			if s.Nth == 0 {
				return nil, nil, fmt.Errorf("%s: %w: %T statements cannot be submitted", stmt.Position(), ErrScript, stmt)
			}
		}
	}
	if query == nil {
		return nil, nil, fmt.Errorf("%s: %w: no SELECT or INSERT to run", s.Filename, ErrScript)
	}
	b := bind.New(cat)
	b.CheckModelArgs = s.CheckModelArgs
	plan, err := b.Bind(query)
	if err != nil {
		return nil, nil, err
	}
	if sk, ok := plan.Root.(*logical.Sink); ok && s.Pace != nil && sk.Sink != nil && !WorkersWrite(sk.Sink.Kind) {
		// EXPLAIN ANALYZE of an INSERT INTO a file or stdout: no worker
		// can write that sink (`run` writes it in its own process), and an
		// analysed query's rows are counted and dropped anyway, so its
		// SELECT is what runs and is measured.
		plan = &logical.Plan{Root: sk.Input, Objectives: plan.Objectives}
	}
	return plan, cat, nil
}

// WorkersWrite says whether the workers can hold a sink of this kind: NATS
// and JetStream sinks open on first use and close when their part ends, and
// a discard sink opens nothing. operators/exec opens a file (or stdout) sink
// when it builds and closes it only in its own Run: every worker would
// truncate the file and none would flush it.
func WorkersWrite(kind string) bool {
	return strings.EqualFold(kind, "nats") || strings.EqualFold(kind, "jetstream") || strings.EqualFold(kind, "discard")
}

// Build binds the script and builds its dataflow with operators/exec.
func (s Script) Build(cat *catalog.Catalog, opts exec.Options) (*exec.Query, *logical.Plan, error) {
	plan, _, err := s.Bind(cat)
	if err != nil {
		return nil, nil, err
	}
	if s.Rewrite {
		plan = rewrite.Apply(plan)
	} else {
		// Not an optimisation: a model call takes columns, so one called on
		// an expression (a crop) needs it computed below it in every plan.
		plan = &logical.Plan{Root: rewrite.LiftModelArgs(plan.Root), Objectives: plan.Objectives}
	}
	q, err := s.BuildPlan(plan, opts)
	if err != nil {
		return nil, nil, err
	}
	return q, plan, nil
}

// BuildPlan builds an already bound (or rewritten) plan of the script with
// the script's source settings.
func (s Script) BuildPlan(plan *logical.Plan, opts exec.Options) (*exec.Query, error) {
	var err error
	opts.Relayed = true // a worker's part sends its rows over NATS
	if opts.BaseDir == "" {
		opts.BaseDir = s.BaseDir
	}
	if s.OnError != "" {
		if opts.OnError, err = sources.ParseOnError(s.OnError); err != nil {
			return nil, err
		}
	}
	if s.MaxDelay > 0 {
		opts.MaxDelay = s.MaxDelay
	}
	if s.BatchSize > 0 {
		opts.BatchSize = s.BatchSize
	}
	if s.StateTTL > 0 {
		opts.StateTTL = s.StateTTL
	}
	if s.Pace != nil {
		opts.Pace = s.Pace.Pacing
		opts.MeasureLabels = true
	} else if s.Replay {
		opts.Pace = Replay
		if s.ResumeEpoch > 0 {
			resume := dataflow.Epoch(s.ResumeEpoch)
			// Where it is sound the query resumes at the committed
			// epoch: its file streams read past what it need not send
			// again (resumeAt), and since their slices and watermarks
			// are those of the first run, every row sent goes out at the
			// epoch it did then. Otherwise they replay from the start to
			// rebuild the operators' state.
			skip, below := resumeAt(plan.Root, s.ResumeEpoch)
			opts.Pace = func(st *catalog.Stream) sources.Pacing {
				p := Replay(st)
				p.FastUntil = resume
				p.SkipUntil, p.SkipBelow = dataflow.Epoch(skip), int64(below)
				return p
			}
		}
	}
	if s.ResumeEpoch > 0 && len(s.Positions) > 0 && opts.Stream != nil {
		opts.Stream = resumeStreams(opts.Stream, plan, s.ResumeEpoch, s.Positions)
	}
	q, err := exec.Build(withBatches(s.adaptInputs(plan), s.Batches), opts)
	if err == nil && s.ResumeEpoch > 0 {
		// The epochs below are the earlier generation's: its rows and
		// drops of them stand, whatever this part does replaying them.
		q.DropsFrom(dataflow.Epoch(s.ResumeEpoch))
	}
	return q, err
}

// AdaptSetting is the SET that chooses how images cross links
// (rewrite.AdaptInputs' mode: resize, the default; uint8; off).
const AdaptSetting = "planner.adapt_inputs"

// adaptInputs resizes (and with SET planner.adapt_inputs = 'uint8'
// encodes) a model call's images on the source's side of the link when its
// variant under s.Variants takes a smaller size than the stream's
// (rewrite.AdaptInputs). A rewritten plan only: its model calls carry the
// projection that says nothing above reads the image. The coordinator and
// every worker apply it alike, so they build the same graph; deploy.Place
// pairs the adaptation with the call's input (Nodes).
func (s Script) adaptInputs(plan *logical.Plan) *logical.Plan {
	if !s.Rewrite {
		return plan
	}
	root := rewrite.AdaptInputsLatency(plan.Root, s.Variants, s.Planner[AdaptSetting], plan.Objectives)
	if root == plan.Root {
		return plan
	}
	return &logical.Plan{Root: root, Objectives: plan.Objectives}
}

// LoadCatalog loads s.Catalog, or returns an empty catalog when none is named.
func (s Script) LoadCatalog() (*catalog.Catalog, error) {
	if s.Catalog == "" {
		return &catalog.Catalog{}, nil
	}
	cat, err := catalog.LoadFile(s.Catalog)
	if err == nil && s.CatalogBeside {
		cat.BaseFile = s.Catalog
	}
	return cat, err
}
