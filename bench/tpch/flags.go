package tpch

import (
	"flag"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tierflow/tierflow/dataflow"
)

// Flags are the command line of `tierflow bench tpch`. The CLI and the DuckDB
// peer program (bench/sqlpeer, which the CLI runs with the same flags) read
// them through this one type, so both mean the same by each.
type Flags struct {
	SF          string
	Types       string
	Seed        uint64
	Data        string
	Reps        int
	Queries     string
	Parallelism int
	Timeout     time.Duration
	Format      string
	Peer        string
	// MemoryLimit is each tierflow query's memory budget as written
	// (dataflow.ParseBytes: 1GiB, 512MiB); empty for none.
	MemoryLimit string
}

// Defaults are the flags' defaults.
func Defaults() Flags {
	return Flags{SF: "1", Types: string(SpecTypes), Seed: 1, Data: filepath.Join(".cache", "tpch"), Reps: 3,
		Timeout: 10 * time.Minute, Format: "table", Peer: "duckdb"}
}

// Usage is each flag's help.
var Usage = map[string]string{
	"sf":          "scale factors, comma-separated (1 is 6 million lineitems): e.g. 0.01,0.1,1",
	"types":       "spec: DECIMAL(15,2) money and DATE dates, as the specification; double: DOUBLE and TIMESTAMP",
	"seed":        "the generator's seed (the same seed makes the same files)",
	"data":        "folder for the generated Parquet files, one folder per scale factor (reused)",
	"reps":        "runs of each query on each engine; the median is reported",
	"queries":     "comma-separated queries to run (q1 ... q22; default all)",
	"parallelism": "tierflow's --parallelism (0: every core where it pays)",
	"timeout":     "limit of each run of each query",
	"format":      "table or json",
	"peer":        "the engine to compare with: duckdb, or none to run tierflow alone",
	"memory-limit": "each tierflow query's memory budget (as a coordinator's --max-query-memory), e.g. 1GiB: " +
		"every buffer and operator state is charged to it, joins and aggregations spill past half of it, a query past it " +
		"fails naming it; the table adds each query's peak (default: no limit)",
}

// Register adds the flags to fs, with their defaults.
func (f *Flags) Register(fs *flag.FlagSet) {
	d := Defaults()
	fs.StringVar(&f.SF, "sf", d.SF, Usage["sf"])
	fs.StringVar(&f.Types, "types", d.Types, Usage["types"])
	fs.Uint64Var(&f.Seed, "seed", d.Seed, Usage["seed"])
	fs.StringVar(&f.Data, "data", d.Data, Usage["data"])
	fs.IntVar(&f.Reps, "reps", d.Reps, Usage["reps"])
	fs.StringVar(&f.Queries, "queries", d.Queries, Usage["queries"])
	fs.IntVar(&f.Parallelism, "parallelism", d.Parallelism, Usage["parallelism"])
	fs.DurationVar(&f.Timeout, "timeout", d.Timeout, Usage["timeout"])
	fs.StringVar(&f.Format, "format", d.Format, Usage["format"])
	fs.StringVar(&f.Peer, "peer", d.Peer, Usage["peer"])
	fs.StringVar(&f.MemoryLimit, "memory-limit", d.MemoryLimit, Usage["memory-limit"])
}

// Args are the flags as a command line, to run the peer program with.
func (f Flags) Args() []string {
	return []string{"--sf", f.SF, "--types", f.Types, "--seed", strconv.FormatUint(f.Seed, 10), "--data", f.Data,
		"--reps", strconv.Itoa(f.Reps), "--queries", f.Queries, "--parallelism", strconv.Itoa(f.Parallelism),
		"--timeout", f.Timeout.String(), "--format", f.Format, "--peer", f.Peer, "--memory-limit", f.MemoryLimit}
}

// Tierflow is the engine the flags ask for: tierflow at --parallelism, each
// query within --memory-limit.
func (f Flags) Tierflow() (*Tierflow, error) {
	limit, err := dataflow.ParseBytes(f.MemoryLimit)
	if err != nil {
		return nil, fmt.Errorf("%w: --memory-limit %w", ErrBadInput, err)
	}
	return &Tierflow{Parallelism: f.Parallelism, MemoryLimit: limit}, nil
}

// Options checks the flags and makes Bench's options.
func (f Flags) Options() (BenchOptions, error) {
	o := BenchOptions{Seed: f.Seed, Data: f.Data, Reps: f.Reps, Timeout: f.Timeout, Format: f.Format}
	var err error
	if o.SFs, err = ParseSFs(f.SF); err != nil {
		return o, err
	}
	if o.Types, err = ParseTypes(f.Types); err != nil {
		return o, fmt.Errorf("%w: --%w", ErrBadInput, err)
	}
	if f.Queries != "" {
		if o.Queries, err = Select(strings.Split(f.Queries, ",")); err != nil {
			return o, err
		}
	}
	if f.Peer != "duckdb" && f.Peer != "none" {
		return o, fmt.Errorf("%w: --peer %q: want duckdb or none", ErrBadInput, f.Peer)
	}
	if o.Reps < 1 {
		return o, fmt.Errorf("%w: --reps %d: want at least 1", ErrBadInput, o.Reps)
	}
	if o.Format != "table" && o.Format != "json" {
		return o, fmt.Errorf("%w: --format %q: want table or json", ErrBadInput, o.Format)
	}
	if _, err := f.Tierflow(); err != nil {
		return o, err
	}
	if f.Parallelism < 0 {
		return o, fmt.Errorf("%w: --parallelism %d: want 0 (every core) or more", ErrBadInput, f.Parallelism)
	}
	return o, nil
}
