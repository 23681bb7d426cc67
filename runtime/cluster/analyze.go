package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/runtime/analyze"
	"github.com/tierflow/tierflow/runtime/coordinator"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// DefaultAnalyzeFor is how long EXPLAIN ANALYZE runs a query when it names
// neither DURATION nor ROWS.
const DefaultAnalyzeFor = 10 * time.Second

// AnalyzeOptions bound an EXPLAIN ANALYZE run: its file streams replay at
// their catalog rates (the rates the plan was made for) for For, or until
// MaxRows rows each; streams from NATS are stopped gracefully after For.
type AnalyzeOptions struct {
	For     time.Duration
	MaxRows int64
	Format  string // text (default) or json
}

// ParseAnalyze reads EXPLAIN ANALYZE (DURATION seconds, ROWS n, FORMAT
// text|json) over the defaults in def.
func ParseAnalyze(e *lang.Explain, def AnalyzeOptions) (AnalyzeOptions, error) {
	o := def
	for _, opt := range e.Options {
		v := strings.Trim(opt.Value, `"`)
		switch key := strings.ToUpper(string(opt.Key)); key {
		case "DURATION":
			secs, err := strconv.ParseFloat(v, 64)
			if err != nil || secs <= 0 || secs > 24*3600 {
				return o, fmt.Errorf("%s: EXPLAIN ANALYZE DURATION %s: want seconds, more than 0 and at most a day", bind.Pos(opt.Pos), opt.Value)
			}
			o.For = time.Duration(secs * float64(time.Second))
		case "ROWS":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				return o, fmt.Errorf("%s: EXPLAIN ANALYZE ROWS %s: want a positive number of rows per stream", bind.Pos(opt.Pos), opt.Value)
			}
			o.MaxRows = n
		case "FORMAT":
			f := strings.ToLower(v)
			if f != "text" && f != "json" {
				return o, fmt.Errorf("%s: EXPLAIN ANALYZE FORMAT %s: want TEXT or JSON", bind.Pos(opt.Pos), opt.Value)
			}
			o.Format = f
		default:
			return o, fmt.Errorf("%s: unknown EXPLAIN ANALYZE option %s (want DURATION, ROWS or FORMAT)", bind.Pos(opt.Pos), opt.Key)
		}
	}
	if o.For <= 0 && o.MaxRows <= 0 {
		o.For = DefaultAnalyzeFor
	}
	return o, nil
}

// ExplainAnalyze runs a script's query paced and bounded as o says, drops
// its rows (counting them), and returns the run held against its plan.
func (c *Cluster) ExplainAnalyze(ctx context.Context, sc deploy.Script, o AnalyzeOptions) (*analyze.Report, error) {
	return Analyze(ctx, c.client, c.infra, sc, o)
}

// Analyze is ExplainAnalyze through any coordinator's client (`tierflow
// submit`); inf prices the links and workers (nil: the coordinator's totals
// stand in, without a price per link).
func Analyze(ctx context.Context, client *coordinator.Client, inf *infra.Infra, sc deploy.Script, o AnalyzeOptions) (*analyze.Report, error) {
	sc.Pace = &deploy.Pace{AtRate: true, For: o.For, MaxRows: o.MaxRows}
	name := coordinator.NewQueryName()
	if o.For > 0 {
		// File streams end on their own after For; a stream from NATS
		// ends when the query is stopped, gracefully, so what it read
		// still drains through the plan.
		stopCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		go stopAfter(stopCtx, client, name, o.For+time.Second)
	}
	var out countRows
	info, err := client.Submit(ctx, sc, name, &out)
	if err != nil {
		return nil, err
	}
	types := map[string]string{}
	ws, err := client.Workers(ctx)
	if err != nil {
		return nil, err
	}
	for _, w := range ws {
		types[w.Name] = w.Type
	}
	return analyze.New(info, analyze.Options{Infra: inf, WorkerTypes: types})
}

// stopAfter stops query name gracefully d after its sources started.
func stopAfter(ctx context.Context, client *coordinator.Client, name string, d time.Duration) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		qs, err := client.Queries(ctx)
		if err != nil {
			continue
		}
		for _, q := range qs {
			if q.Query != name || q.Started.IsZero() {
				continue
			}
			if !q.Ended.IsZero() {
				return
			}
			t := time.NewTimer(time.Until(q.Started.Add(d)))
			select {
			case <-ctx.Done():
				t.Stop()
			case <-t.C:
				_ = client.Stop(ctx, name, false)
			}
			return
		}
	}
}

// WriteAnalysis prints a report as tables or JSON.
func WriteAnalysis(w io.Writer, r *analyze.Report, format string) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	return r.Write(w)
}

// countRows is the result writer of an analysed query: EXPLAIN ANALYZE
// shows the plan, not the rows.
type countRows struct{ n int64 }

func (c *countRows) Write(rec arrow.Record) error { c.n += rec.NumRows(); return nil }
func (c *countRows) Close() error                 { return nil }
