package recovery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tierflow/tierflow/bench"
	"github.com/tierflow/tierflow/internal/cli"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/coordinator"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// recoveryQuery is the bench's windowed aggregation: readings joined with
// their sites, counted and averaged per site in 10-second tumbling windows
// of event time, over a file stream replayed at its RATE.
const recoveryQuery = `CREATE STREAM readings (sensor INT, ts TIMESTAMP, temperature DOUBLE)
  FROM FILE 'readings.csv' FORMAT CSV RATE %g PER SECOND;
CREATE TABLE sensors (sensor INT, site VARCHAR) FROM FILE 'sensors.csv' FORMAT CSV;
SELECT s.site, window_start, count(*) AS n, round(avg(r.temperature), 2) AS avg_temp
FROM readings AS r JOIN sensors AS s ON r.sensor = s.sensor
GROUP BY s.site, TUMBLE(r.ts, INTERVAL '10' SECOND);
`

// recoveryRow is one round of `tierflow bench recovery`.
type recoveryRow struct {
	Round      int     `json:"round"`
	Killed     string  `json:"killed"`
	KillAtS    string  `json:"kill_at_s"`
	Rows       int     `json:"rows"`
	Lost       int     `json:"rows_lost"`
	Duplicated int     `json:"rows_duplicated"`
	Recoveries int     `json:"recoveries"`
	P50S       float64 `json:"recovery_p50_s"`
	MaxS       float64 `json:"recovery_max_s"`
	ElapsedS   float64 `json:"elapsed_s"`
}

// recoveryOptions configure the bench.
type recoveryOptions struct {
	rounds, rows, kills int
	rate                float64
	seed                uint64
	placement           string
}

func Command(benv *bench.Env) *cobra.Command {
	o := recoveryOptions{}
	c := &cobra.Command{
		Use:   "recovery",
		Short: "Kill workers of a running windowed query; rows lost, duplicated and recovery seconds per round",
		Long: `Runs a windowed aggregation over a rate-limited file stream on a cluster of
worker processes (as run --processes --replay), once without a failure for the
reference result, then --rounds times on a fresh cluster each, killing (SIGKILL)
--kills random workers of the query at random times. Each round prints the rows
lost and duplicated against the reference, and the recovery seconds (from the
lost worker's last heartbeat until result rows flowed past the epoch the query
resumed from) at p50 and max. --seed makes the kills repeatable; --placement
rules (the default) spreads the query over every worker so that any kill hits it.`,
		Example: `  tierflow bench recovery
  tierflow bench recovery --rounds 5 --seed 7 --kills 2 --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.rounds < 1 || o.rows < 10 || o.rate <= 0 || o.kills < 1 {
				return cli.BadInput(errors.New("--rounds and --kills must be at least 1, --rows at least 10, --rate positive"))
			}
			if o.placement != coordinator.PlaceRules && o.placement != coordinator.PlaceOptimizer {
				return cli.BadInput(fmt.Errorf("unknown --placement %q: want %s or %s", o.placement, coordinator.PlaceRules, coordinator.PlaceOptimizer))
			}
			if benv.G().Format != "" && benv.G().Format != "table" && benv.G().Format != "json" {
				return cli.BadInput(fmt.Errorf("unknown --format %q: want table or json", benv.G().Format))
			}
			inf := cluster.DefaultInfra()
			if benv.G().Infra != "" {
				var err error
				if inf, err = infra.LoadFile(benv.G().Infra); err != nil {
					return cli.BadInput(err)
				}
			}
			if n := len(inf.Machines()); o.kills >= n {
				return cli.BadInput(fmt.Errorf("--kills %d leaves no worker of %d", o.kills, n))
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			rows, err := benchRecovery(ctx, benv, inf, o)
			if err != nil {
				return err
			}
			return benv.PrintRows(rows)
		},
	}
	f := c.Flags()
	f.IntVar(&o.rounds, "rounds", 3, "rounds, each on a fresh cluster")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the random workers and kill times")
	f.IntVar(&o.kills, "kills", 1, "workers killed per round")
	f.IntVar(&o.rows, "rows", 1600, "rows of the replayed stream (4 per second of event time)")
	f.Float64Var(&o.rate, "rate", 200, "RATE the stream is replayed at, rows per second")
	f.StringVar(&o.placement, "placement", coordinator.PlaceRules, "how the coordinator places the query: rules (every tier) or optimizer")
	return c
}

// writeRecoveryData writes the bench's stream, table and script into dir.
func writeRecoveryData(dir string, o recoveryOptions) (deploy.Script, error) {
	var r strings.Builder
	r.WriteString("sensor,ts,temperature\n")
	start := time.Date(2024, 5, 1, 8, 0, 0, 0, time.UTC)
	for i := range o.rows {
		ts := start.Add(time.Duration(i) * 250 * time.Millisecond)
		fmt.Fprintf(&r, "%d,%s,%.2f\n", i%8+1, ts.Format("2006-01-02 15:04:05.000"), 10+float64((i*37)%300)/10)
	}
	src := fmt.Sprintf(recoveryQuery, o.rate)
	for name, body := range map[string]string{
		"readings.csv": r.String(),
		"sensors.csv":  "sensor,site\n1,north\n2,north\n3,south\n4,south\n5,east\n6,east\n7,west\n8,west\n",
		"query.sql":    src,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return deploy.Script{}, err
		}
	}
	return deploy.Script{Filename: filepath.Join(dir, "query.sql"), Source: src, BaseDir: dir, Replay: true}, nil
}

func benchRecovery(ctx context.Context, benv *bench.Env, inf *infra.Infra, o recoveryOptions) ([]recoveryRow, error) {
	dir, err := os.MkdirTemp("", "tierflow-bench-recovery-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	script, err := writeRecoveryData(dir, o)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(o.seed, o.seed^0x9e3779b97f4a7c15))
	runFor := time.Duration(float64(o.rows) / o.rate * float64(time.Second))
	fmt.Fprintf(benv.Err, "bench recovery: %d rows at %g/s (%s a run), %d round(s) of %d kill(s), seed %d\n", o.rows, o.rate, runFor, o.rounds, o.kills, o.seed)
	ref, _, err := recoveryRound(ctx, benv, inf, o, script, nil)
	if err != nil {
		return nil, fmt.Errorf("reference run: %w", err)
	}
	want := lineCounts(ref)
	var out []recoveryRow
	for round := 1; round <= o.rounds; round++ {
		// Kill times are spread over the middle of the run, in order.
		var at []time.Duration
		for range o.kills {
			at = append(at, time.Duration((0.15+0.7*rng.Float64())*float64(runFor)))
		}
		slices.Sort(at)
		row := recoveryRow{Round: round}
		got, info, err := recoveryRound(ctx, benv, inf, o, script, func(c *cluster.Cluster, q string, started time.Time) {
			var killed, times []string
			for _, d := range at {
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Until(started.Add(d))):
				}
				qi, ok := c.Coordinator.Query(q)
				var alive []string
				for _, w := range qi.Workers {
					if !slices.Contains(killed, w) {
						alive = append(alive, w)
					}
				}
				if !ok || !qi.Ended.IsZero() || len(alive) == 0 {
					break
				}
				w := alive[rng.IntN(len(alive))]
				if err := c.Kill(w); err != nil {
					fmt.Fprintf(benv.Err, "bench recovery: kill %s: %v\n", w, err)
					continue
				}
				killed, times = append(killed, w), append(times, fmt.Sprintf("%.2f", time.Since(started).Seconds()))
			}
			row.Killed, row.KillAtS = strings.Join(killed, ","), strings.Join(times, ",")
		})
		if err != nil {
			return out, fmt.Errorf("round %d: %w", round, err)
		}
		have := lineCounts(got)
		for k, n := range want {
			row.Lost += max(0, n-have[k])
		}
		for k, n := range have {
			row.Duplicated += max(0, n-want[k])
			row.Rows += n
		}
		var secs []float64
		for _, r := range info.Recoveries {
			secs = append(secs, r.Seconds)
		}
		row.Recoveries = len(secs)
		if len(secs) > 0 {
			row.P50S, row.MaxS = bench.Percentile(secs, 0.5), slices.Max(secs)
		}
		if !info.Ended.IsZero() {
			row.ElapsedS = info.Ended.Sub(info.Submitted).Seconds()
		}
		row.Rows = max(0, row.Rows-1) // the header
		fmt.Fprintf(benv.Err, "bench recovery: round %d killed %s at %ss: %d rows, %d lost, %d duplicated\n", round, row.Killed, row.KillAtS, row.Rows, row.Lost, row.Duplicated)
		out = append(out, row)
	}
	return out, nil
}

// recoveryRound runs the script once on a fresh cluster of worker
// processes; kill, when set, runs beside it once the query runs.
func recoveryRound(ctx context.Context, benv *bench.Env, inf *infra.Infra, o recoveryOptions, script deploy.Script,
	kill func(c *cluster.Cluster, query string, started time.Time)) (string, deploy.QueryInfo, error) {
	c, err := cluster.StartProcesses(ctx, cluster.ProcessOptions{Options: cluster.Options{Infra: inf, NATS: benv.G().NATS, OrtLib: benv.G().ORTLib, Placement: o.placement}})
	if err != nil {
		return "", deploy.QueryInfo{}, err
	}
	defer c.Close()
	var buf bytes.Buffer
	w := sinks.NewCSV(&buf)
	name := coordinator.NewQueryName()
	type result struct {
		info deploy.QueryInfo
		err  error
	}
	done := make(chan result, 1)
	go func() {
		info, err := c.Client().Submit(ctx, script, name, w)
		done <- result{info, err}
	}()
	killed := make(chan struct{})
	if kill != nil {
		go func() {
			defer close(killed)
			for {
				if q, ok := c.Coordinator.Query(name); ok && q.State == deploy.StateRunning {
					kill(c, name, q.Started)
					return
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(10 * time.Millisecond):
				}
			}
		}()
	} else {
		close(killed)
	}
	r := <-done
	<-killed
	if r.err != nil {
		return "", r.info, r.err
	}
	if err := w.Close(); err != nil {
		return "", r.info, err
	}
	return buf.String(), r.info, nil
}

// lineCounts counts a CSV result's rows (the header included: it is in
// every run once).
func lineCounts(s string) map[string]int {
	out := map[string]int{}
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		out[l]++
	}
	return out
}
