// Command tierflow-sqlpeer is `tierflow bench sql --peer duckdb`: it runs a
// fixed set of relational queries (filter + aggregate, group-by over many
// groups, hash join, ORDER BY ... LIMIT, a tumbling-window aggregation and
// the TPC-H queries tierflow's SQL expresses) on generated Parquet and CSV
// data with tierflow's engine and with DuckDB, both in this process, checks
// that they give the same answers and prints their times and ratios.
//
// It is its own Go module so that DuckDB (cgo, a large static library) never
// enters tierflow's main build; `tierflow bench sql` finds and runs it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tierflow/tierflow/bench/tpch"
)

// errBadInput marks a bad flag; it exits 2, a failure 1.
var errBadInput = errors.New("bad input")

type options struct {
	sizes       []int
	reps        int
	data        string
	format      string
	only        map[string]bool
	parallelism int
	peer        string
	cpuprofile  string
}

// row is one query at one size: the median time of each engine and their
// ratio (tierflow / DuckDB; above 1 is slower than DuckDB).
type row struct {
	Query      string  `json:"query"`
	What       string  `json:"what"`
	Rows       int     `json:"rows"`
	TierflowMS float64 `json:"tierflow_ms"`
	DuckDBMS   float64 `json:"duckdb_ms"`
	Ratio      float64 `json:"ratio"`
	Same       string  `json:"same_answer"`
}

func main() {
	what, run := "tierflow bench sql", run
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "tpch" {
		// `tierflow bench tpch --peer duckdb` runs this program as
		// tierflow-sqlpeer tpch <its flags>.
		what, run, args = "tierflow bench tpch", runTPCH, args[1:]
	}
	err := run(context.Background(), args, os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, what+":", err)
		if errors.Is(err, errBadInput) || errors.Is(err, tpch.ErrBadInput) || errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("tierflow bench sql", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sizes := fs.String("rows", "1M", "data sizes in rows of lineitem, comma-separated (k and M suffixes): e.g. 1M,10M,50M")
	reps := fs.Int("reps", 3, "runs of each query on each engine; the median is reported")
	data := fs.String("data", filepath.Join(".cache", "sqlbench"), "directory for the generated data (one folder per size, reused)")
	format := fs.String("format", "table", "table or json")
	only := fs.String("queries", "", "comma-separated query names to run (default all): "+queryNames())
	par := fs.Int("parallelism", 0, "tierflow's --parallelism (0: its default)")
	peer := fs.String("peer", "duckdb", "the engine to compare with (duckdb)")
	prof := fs.String("cpuprofile", "", "write a CPU profile of tierflow's runs (not DuckDB's) to this file")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("%w: unexpected argument %q", errBadInput, fs.Arg(0))
	}
	o := options{reps: *reps, data: *data, format: *format, parallelism: *par, peer: *peer, cpuprofile: *prof}
	if o.peer != "duckdb" {
		return o, fmt.Errorf("%w: --peer %q: the only peer is duckdb", errBadInput, o.peer)
	}
	if o.format != "table" && o.format != "json" {
		return o, fmt.Errorf("%w: --format %q: want table or json", errBadInput, o.format)
	}
	if o.reps < 1 {
		return o, fmt.Errorf("%w: --reps %d: want at least 1", errBadInput, o.reps)
	}
	for _, s := range strings.Split(*sizes, ",") {
		n, err := parseRows(s)
		if err != nil {
			return o, err
		}
		o.sizes = append(o.sizes, n)
	}
	if *only != "" {
		o.only = map[string]bool{}
		for _, n := range strings.Split(*only, ",") {
			n = strings.TrimSpace(n)
			if !strings.Contains(" "+queryNames()+" ", " "+n+" ") {
				return o, fmt.Errorf("%w: --queries: no query %q (have %s)", errBadInput, n, queryNames())
			}
			o.only[n] = true
		}
	}
	return o, nil
}

func queryNames() string {
	var ns []string
	for _, q := range queries {
		ns = append(ns, q.name)
	}
	return strings.Join(ns, " ")
}

func parseRows(s string) (int, error) {
	s = strings.TrimSpace(s)
	mult := 1
	switch {
	case strings.HasSuffix(s, "M"), strings.HasSuffix(s, "m"):
		mult, s = 1_000_000, s[:len(s)-1]
	case strings.HasSuffix(s, "k"), strings.HasSuffix(s, "K"):
		mult, s = 1_000, s[:len(s)-1]
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%w: --rows %q: want a positive count such as 1M or 500k", errBadInput, s)
	}
	return n * mult, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseOptions(args, stderr)
	if err != nil {
		return err
	}
	duck, err := newDuckEngine()
	if err != nil {
		return fmt.Errorf("start DuckDB: %w", err)
	}
	defer duck.close()
	tf := tierflowEngine{parallelism: o.parallelism}
	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		tf.profile = f
	}
	var rows []row
	var mismatch []string
	for _, n := range o.sizes {
		dir, err := filepath.Abs(filepath.Join(o.data, strconv.Itoa(n)))
		if err != nil {
			return err
		}
		start := time.Now()
		if err := generate(dir, n); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "-- data: %d rows of lineitem in %s (%.1fs)\n", n, dir, time.Since(start).Seconds())
		for _, q := range queries {
			if o.only != nil && !o.only[q.name] {
				continue
			}
			r, err := measure(ctx, q, dir, n, o.reps, tf, duck)
			if err != nil {
				return fmt.Errorf("%s at %d rows: %w", q.name, n, err)
			}
			if r.Same != "yes" {
				mismatch = append(mismatch, fmt.Sprintf("%s at %d rows: %s", q.name, n, r.Same))
			}
			fmt.Fprintf(stderr, "-- %s at %d rows: tierflow %.1f ms, DuckDB %.1f ms (%.2fx)\n", q.name, n, r.TierflowMS, r.DuckDBMS, r.Ratio)
			rows = append(rows, r)
		}
	}
	rows = append(rows, medians(rows, o.sizes)...)
	if err := print(stdout, o.format, rows); err != nil {
		return err
	}
	if len(mismatch) > 0 {
		return fmt.Errorf("answers differ from DuckDB's:\n  %s", strings.Join(mismatch, "\n  "))
	}
	return nil
}

// measure runs q reps times on each engine, alternating them so that noise
// from other work on the machine falls on both, and compares the answers of
// the first runs.
func measure(ctx context.Context, q query, dir string, n, reps int, tf tierflowEngine, duck *duckEngine) (row, error) {
	if err := duck.views(ctx, q, dir); err != nil {
		return row{}, err
	}
	var tt, dt []float64
	var got, want result
	for i := 0; i < reps; i++ {
		start := time.Now()
		if tf.profile != nil {
			pprof.StartCPUProfile(tf.profile)
		}
		res, err := tf.run(ctx, q, dir)
		if tf.profile != nil {
			pprof.StopCPUProfile()
			tf.profile = nil // one profile: the first run
		}
		if err != nil {
			return row{}, fmt.Errorf("tierflow: %w", err)
		}
		tt = append(tt, ms(time.Since(start)))
		if i == 0 {
			got = res
		}
		start = time.Now()
		res, err = duck.run(ctx, q, dir)
		if err != nil {
			return row{}, fmt.Errorf("DuckDB: %w", err)
		}
		dt = append(dt, ms(time.Since(start)))
		if i == 0 {
			want = res
		}
	}
	r := row{Query: q.name, What: q.what, Rows: n, TierflowMS: median(tt), DuckDBMS: median(dt), Same: "yes"}
	r.Ratio = r.TierflowMS / r.DuckDBMS
	if d := compare(q, got, want); d != "" {
		r.Same = "NO: " + d
	}
	return r, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// medians adds, per size, a row with the median ratio over its queries (and
// the worst in its description): the measures of being at DuckDB's level.
func medians(rows []row, sizes []int) []row {
	var out []row
	for _, n := range sizes {
		var rs []float64
		worst, worstQ := 0.0, ""
		for _, r := range rows {
			if r.Rows == n {
				rs = append(rs, r.Ratio)
				if r.Ratio > worst {
					worst, worstQ = r.Ratio, r.Query
				}
			}
		}
		if len(rs) == 0 {
			continue
		}
		out = append(out, row{Query: "median", What: fmt.Sprintf("worst %.2fx (%s)", worst, worstQ), Rows: n, Ratio: median(rs), Same: "-"})
	}
	return out
}

func print(w io.Writer, format string, rows []row) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "QUERY\tWHAT\tROWS\tTIERFLOW MS\tDUCKDB MS\tRATIO\tSAME ANSWER\t")
	for _, r := range rows {
		tf, dd := fmt.Sprintf("%.1f", r.TierflowMS), fmt.Sprintf("%.1f", r.DuckDBMS)
		if r.Query == "median" {
			tf, dd = "", ""
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%.2fx\t%s\t\n", r.Query, r.What, r.Rows, tf, dd, r.Ratio, r.Same)
	}
	return tw.Flush()
}
