package tpch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// ErrBadInput marks a bad option (a flag): the command exits 2.
var ErrBadInput = errors.New("bad input")

// BenchOptions configure Bench.
type BenchOptions struct {
	SFs   []float64
	Types Types
	Seed  uint64
	// Data is the folder the generated files are cached in, one folder
	// per scale factor, types and seed.
	Data    string
	Reps    int
	Queries []Query // all when nil
	// Timeout bounds each run of each query on each engine.
	Timeout time.Duration
	Format  string // table or json
}

// Row is one query at one scale factor: the median time of each engine,
// their ratio (tierflow / peer; above 1 is slower than the peer) and whether
// the answers agree.
type Row struct {
	Query      string  `json:"query"`
	SF         float64 `json:"sf"`
	Rows       int     `json:"rows"`
	TierflowMS float64 `json:"tierflow_ms"`
	PeerMS     float64 `json:"peer_ms,omitempty"`
	Ratio      float64 `json:"ratio,omitempty"`
	// Same is "yes", "NO: how they differ", or the error of the engine
	// that failed ("tierflow: ..."); without a peer, "-" when tierflow ran.
	Same string `json:"same_answer"`
	// PeakBytes is, under a memory limit, the most tierflow's budget held
	// at once over the query's runs (a failed run's included); LimitBytes
	// the limit.
	PeakBytes  int64 `json:"peak_bytes,omitempty"`
	LimitBytes int64 `json:"limit_bytes,omitempty"`
}

// budgeted is an engine that runs each query within a memory budget and
// tells the most the last run's held (Tierflow with a MemoryLimit).
type budgeted interface {
	Limit() int64
	Peak() int64
}

// limitOf is e's memory limit, 0 for none.
func limitOf(e Engine) int64 {
	if b, ok := e.(budgeted); ok {
		return b.Limit()
	}
	return 0
}

// ParseSFs reads --sf: scale factors, comma-separated.
func ParseSFs(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v > 0) || v > 10000 {
			return nil, fmt.Errorf("%w: --sf %q: want positive scale factors such as 0.01,0.1,1", ErrBadInput, f)
		}
		out = append(out, v)
	}
	return out, nil
}

// Bench generates the data of each scale factor (once; cached under
// o.Data), runs each query o.Reps times on tierflow and, when peer is not
// nil, on the peer, alternating the two so that noise from other work on
// the machine falls on both, compares the first runs' answers and prints
// the table (or JSON) on stdout, progress on stderr. It fails, after the
// table, when a query failed or the answers differ.
func Bench(ctx context.Context, o BenchOptions, tf, peer Engine, stdout, stderr io.Writer) error {
	if o.Reps < 1 {
		return fmt.Errorf("%w: --reps %d: want at least 1", ErrBadInput, o.Reps)
	}
	if o.Format != "table" && o.Format != "json" {
		return fmt.Errorf("%w: --format %q: want table or json", ErrBadInput, o.Format)
	}
	qs := o.Queries
	if qs == nil {
		qs = Queries()
	}
	var rows []Row
	var bad []string
	for _, sf := range o.SFs {
		g := GenOptions{SF: sf, Seed: o.Seed, Types: o.Types, Progress: stderr}
		dir := Dir(o.Data, g)
		start := time.Now()
		if err := Generate(ctx, dir, g); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "-- tpch sf %s: data in %s (%.1fs)\n", formatSF(sf), dir, time.Since(start).Seconds())
		if err := tf.Load(ctx, dir, o.Types); err != nil {
			return err
		}
		if peer != nil {
			if err := peer.Load(ctx, dir, o.Types); err != nil {
				return fmt.Errorf("%s: %w", peer.Name(), err)
			}
		}
		for i, q := range qs {
			r := measure(ctx, o, sf, q, tf, peer)
			rows = append(rows, r)
			if r.Same != "yes" && r.Same != "-" {
				bad = append(bad, fmt.Sprintf("%s at sf %s: %s", q.Name, formatSF(sf), r.Same))
			}
			fmt.Fprintf(stderr, "-- [%d/%d] %s at sf %s: %s\n", i+1, len(qs), q.Name, formatSF(sf), r.progress(peer))
		}
	}
	if peer != nil {
		rows = append(rows, medians(rows, o.SFs)...)
	}
	if err := printRows(stdout, o.Format, rows, peer, limitOf(tf) > 0); err != nil {
		return err
	}
	if len(bad) > 0 {
		return fmt.Errorf("%d of %d runs failed or differ from %s:\n  %s", len(bad), len(qs)*len(o.SFs), peerName(peer), strings.Join(bad, "\n  "))
	}
	return nil
}

func peerName(p Engine) string {
	if p == nil {
		return "the expected answers"
	}
	return p.Name()
}

func (r Row) progress(peer Engine) string {
	if peer == nil {
		if r.Same != "-" {
			return r.Same
		}
		return fmt.Sprintf("tierflow %.1f ms, %d rows", r.TierflowMS, r.Rows)
	}
	if r.Ratio == 0 {
		return r.Same
	}
	return fmt.Sprintf("tierflow %.1f ms, %s %.1f ms (%.2fx), same answer: %s", r.TierflowMS, peer.Name(), r.PeerMS, r.Ratio, r.Same)
}

// measure runs q on both engines, interleaved.
func measure(ctx context.Context, o BenchOptions, sf float64, q Query, tf, peer Engine) Row {
	r := Row{Query: q.Name, SF: sf, LimitBytes: limitOf(tf)}
	var tt, pt []float64
	var got, want Result
	var tfErr, peerErr error
	for i := 0; i < o.Reps; i++ {
		if tfErr == nil {
			res, d, err := timed(ctx, o.Timeout, tf, q)
			if r.LimitBytes > 0 {
				r.PeakBytes = max(r.PeakBytes, tf.(budgeted).Peak())
			}
			if err != nil {
				tfErr = err
			} else {
				tt = append(tt, d)
				if i == 0 {
					got = res
				}
			}
		}
		if peer != nil && peerErr == nil {
			res, d, err := timed(ctx, o.Timeout, peer, q)
			if err != nil {
				peerErr = err
			} else {
				pt = append(pt, d)
				if i == 0 {
					want = res
				}
			}
		}
	}
	r.Rows = len(got)
	switch {
	case tfErr != nil:
		r.Same = "tierflow: " + oneLine(tfErr)
	case peerErr != nil:
		r.Same = peer.Name() + ": " + oneLine(peerErr)
	case peer == nil:
		r.Same = "-"
	default:
		r.Same = "yes"
		if d := Compare(got, want); d != "" {
			r.Same = "NO: " + d
		}
	}
	if tfErr == nil {
		r.TierflowMS = median(tt)
	}
	if peer != nil && peerErr == nil {
		r.PeerMS = median(pt)
	}
	if tfErr == nil && peer != nil && peerErr == nil && r.PeerMS > 0 {
		r.Ratio = r.TierflowMS / r.PeerMS
	}
	return r
}

// oneLine keeps an error's first line (a parse error's caret lines are for
// a terminal, not a table cell).
func oneLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

func timed(ctx context.Context, limit time.Duration, e Engine, q Query) (Result, float64, error) {
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	start := time.Now()
	res, err := e.Run(ctx, q)
	d := float64(time.Since(start).Microseconds()) / 1000
	if err != nil && ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("timed out after %s", limit)
	}
	return res, d, err
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// medians adds, per scale factor, a row with the median ratio over the
// queries both engines ran, the worst in its answer column.
func medians(rows []Row, sfs []float64) []Row {
	var out []Row
	for _, sf := range sfs {
		var rs []float64
		worst, worstQ, same, n := 0.0, "", 0, 0
		for _, r := range rows {
			if r.SF != sf {
				continue
			}
			n++
			if r.Same == "yes" {
				same++
			}
			if r.Ratio > 0 {
				rs = append(rs, r.Ratio)
				if r.Ratio > worst {
					worst, worstQ = r.Ratio, r.Query
				}
			}
		}
		out = append(out, Row{Query: "median", SF: sf, Ratio: median(rs),
			Same: fmt.Sprintf("%d of %d same; worst %.2fx (%s)", same, n, worst, worstQ)})
	}
	return out
}

func printRows(w io.Writer, format string, rows []Row, peer Engine, peaks bool) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	// Under a memory limit a column after tierflow's time: the most its
	// budget held, in MiB.
	peakHead, peak := "", func(Row) string { return "" }
	if peaks {
		peakHead = "\tPEAK MIB"
		peak = func(r Row) string {
			if r.Query == "median" {
				return "\t"
			}
			return fmt.Sprintf("\t%.1f", float64(r.PeakBytes)/(1<<20))
		}
	}
	if peer == nil {
		fmt.Fprintf(tw, "QUERY\tSF\tROWS\tTIERFLOW MS%s\tERROR\n", peakHead)
		for _, r := range rows {
			e := ""
			if r.Same != "-" {
				e = r.Same
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s%s\t%s\n", r.Query, formatSF(r.SF), r.Rows, ms(r.TierflowMS, r.Same == "-"), peak(r), e)
		}
		return tw.Flush()
	}
	fmt.Fprintf(tw, "QUERY\tSF\tROWS\tTIERFLOW MS%s\t%s MS\tRATIO\tSAME ANSWER\n", peakHead, strings.ToUpper(peer.Name()))
	for _, r := range rows {
		ratio := "-"
		if r.Ratio > 0 {
			ratio = fmt.Sprintf("%.2fx", r.Ratio)
		}
		if r.Query == "median" {
			fmt.Fprintf(tw, "%s\t%s\t\t%s\t\t%s\t%s\n", r.Query, formatSF(r.SF), peak(r), ratio, r.Same)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s%s\t%s\t%s\t%s\n", r.Query, formatSF(r.SF), r.Rows,
			ms(r.TierflowMS, r.TierflowMS > 0), peak(r), ms(r.PeerMS, r.PeerMS > 0), ratio, r.Same)
	}
	return tw.Flush()
}

func ms(v float64, ok bool) string {
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.1f", v)
}
