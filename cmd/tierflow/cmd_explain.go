package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/session"
	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/explain"
	"github.com/tierflow/tierflow/planner/optimize"
	"github.com/tierflow/tierflow/runtime/cluster"
)

// explainFlags are the options of `tierflow explain`.
type explainFlags struct {
	// classMix: --class-mix MODEL=CLASS:WEIGHT,... (DATA AWARE accuracy).
	classMix   []string
	strategy   string
	profile    string
	accuracy   float64
	throughput float64
	seed       int64
	budget     time.Duration
	analyze    bool
	duration   time.Duration
	rows       int64
	processes  bool
	frontier   bool
}

func newExplainCmd(a *app) *cobra.Command {
	var f explainFlags
	c := &cobra.Command{
		Use:   "explain [flags] QUERY.sql",
		Short: "Plan a query and print the physical plan (text, JSON or Graphviz DOT)",
		Long: `explain runs the CREATE and DROP statements of the script against the catalog,
then plans every query in it (SELECT, INSERT INTO ... SELECT, or EXPLAIN (FORMAT ...,
STRATEGY ...) ...): model variant and workers per operator, estimated throughput,
accuracy, compute and network cost per hour, and the optimizer's time.

Objectives come from the query's WITH (ACCURACY >= ..., THROUGHPUT >= ... PER SECOND);
--accuracy and --throughput override them. WITH (BUDGET <= x PER HOUR) asks for the
most accurate plan that costs at most x per hour instead of the cheapest one.
EXPLAIN (FRONTIER) or --frontier prints the accuracy/cost Pareto frontier instead
of one plan: every plan no other beats on both, as a table and a plot (or JSON).

The catalog and infrastructure come from where run takes them: --catalog and
--infra, else NAME.catalog.yaml / NAME.infra.yaml beside NAME.sql, else
catalog.yaml / infra.yaml beside it, else no catalog and run's built-in
infrastructure (a free worker on each of an edge, a hub and a cloud tier);
stderr says which. The script's CREATEs replace entries of a catalog found
beside it. A model without a latency profile for the infrastructure is
planned at an estimated latency, which the plan marks (tierflow profile
measures one). A query whose objectives no plan meets prints the plan and
why, and exits 1.
Formats (--format): text (default), json (a stable contract), dot (Graphviz).

--analyze runs each query instead, as EXPLAIN ANALYZE does in a script: on an
embedded cluster of the infrastructure (--processes: worker processes), the
file streams replayed at their catalog rates (the rates the plan was made for)
for --duration or --rows, and prints the plan's estimates next to what was
measured: throughput against the target (within 5%), network cost against the
estimate (within 10%), compute cost, and per source, operator (rows/s, batch
latency p50/p90/p99, busy time), worker and tier link. --format json gives the
same as one object per query.`,
		Example: `  tierflow explain examples/vqa/query.sql
  tierflow explain --analyze --duration 20s examples/fashion/analyze.sql
  tierflow explain --strategy exhaustive --format json examples/vqa/query.sql
  tierflow explain examples/vqa/frontier.sql
  tierflow explain --frontier --format json examples/vqa/query.sql
  tierflow explain examples/vqa/budget.sql
  tierflow explain --infra examples/setups/vqa-large.yaml --catalog examples/setups/vqa.catalog.yaml examples/setups/vqa.sql`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.analyze {
				return runExplainAnalyze(cmd, a, f, args[0])
			}
			return runExplain(cmd, a, f, args[0])
		},
	}
	fl := c.Flags()
	fl.BoolVar(&f.analyze, "analyze", false, "run each query on an embedded cluster, its file streams replayed at their catalog rates, and print the plan's estimates next to what was measured")
	fl.DurationVar(&f.duration, "duration", cluster.DefaultAnalyzeFor, "with --analyze: how long each query runs")
	fl.Int64Var(&f.rows, "rows", 0, "with --analyze: stop each stream after this many rows instead (0: no bound)")
	fl.BoolVar(&f.processes, "processes", false, "with --analyze: start the workers as child processes")
	fl.StringVar(&f.strategy, "strategy", planner.DefaultStrategy, "optimizer strategy: auto, jellybean, exhaustive, best-fit, first-fit, most-accurate, ptc, pte, spc")
	fl.StringVar(&f.profile, "profile", "p75", "latency profile percentile: p50, p75 or p90")
	fl.Float64Var(&f.accuracy, "accuracy", 0, "minimum accuracy (overrides the query's WITH)")
	fl.Float64Var(&f.throughput, "throughput", 0, "required throughput in items per second (overrides the query's WITH)")
	fl.StringArrayVar(&f.classMix, "class-mix", nil, "the class mix a DATA AWARE accuracy is weighed by, MODEL=CLASS:WEIGHT,CLASS:WEIGHT,... (repeatable; what the runtime estimates live)")
	fl.Int64Var(&f.seed, "seed", 0, "seed of the randomised strategies")
	fl.BoolVar(&f.frontier, "frontier", false, "print the accuracy/cost Pareto frontier (as EXPLAIN (FRONTIER) does) instead of one plan")
	fl.DurationVar(&f.budget, "time-budget", 0, "time budget of exact searches (default: the optimizer's)")
	return c
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

func readQuery(a *app, path string) (string, string, error) {
	if path == "-" {
		b, err := readStdinScript(a)
		return "<stdin>", string(b), err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", "", badInput(err)
	}
	return path, string(b), nil
}

func runExplain(cmd *cobra.Command, a *app, f explainFlags, path string) error {
	name, src, err := readQuery(a, path)
	if err != nil {
		return err
	}
	format := a.g.format
	if format != "" && format != "text" && format != "json" && format != "dot" {
		return badInput(fmt.Errorf("unknown --format %q: want text, json or dot", format))
	}
	pct, err := planner.ParsePercentile(f.profile)
	if err != nil {
		return badInput(fmt.Errorf("--profile: %w", err))
	}
	if _, err := optimize.DefaultRegistry().Lookup(f.strategy); err != nil {
		return badInput(fmt.Errorf("--strategy: %w", err))
	}
	inputs := inputsFor(a.g, path)
	cat, err := inputs.loadCatalog()
	if err != nil {
		return err
	}
	inf, err := inputs.loadInfra()
	if err != nil {
		return err
	}
	inputs.describe(a.err, builtinInfra)
	script, err := lang.Parse(name, src)
	if err != nil {
		var pe *lang.Error
		if errors.As(err, &pe) {
			fmt.Fprintln(a.err, pe.Pretty())
			return silentExit{Code: exitBadInput}
		}
		return badInput(err)
	}
	cat = cat.Clone()
	if path != "-" {
		cat.Files = exec.FileSchemas{BaseDir: filepath.Dir(path)}
	} else {
		cat.Files = exec.FileSchemas{}
	}
	// The flags, then each SET of the script for the statements after it,
	// as `tierflow run` and the REPL do.
	settings := session.New()
	settings.Planner = planner.Options{Strategy: f.strategy, Percentile: pct, Throughput: f.throughput,
		Optimize: optimizeOptions(f), Frontier: f.frontier}
	if cmd.Flags().Changed("accuracy") {
		settings.Planner.Accuracy = &f.accuracy
	}
	if settings.Planner.ClassMix, err = parseClassMix(f.classMix); err != nil {
		return badInput(err)
	}
	planned, failed, infeasible := 0, false, false
	for _, st := range script.Statements {
		if ok, err := bind.Apply(cat, st); ok {
			if err != nil {
				printPositioned(a.err, src, err)
				failed = true
			}
			continue
		}
		var target lang.Statement
		opts := settings.Planner
		stFormat := format
		switch s := st.(type) {
		case *lang.Set:
			if err := settings.Set(s); err != nil {
				fmt.Fprintln(a.err, err)
				failed = true
			}
			continue
		case *lang.Query, *lang.Insert:
			target = s
		case *lang.Explain:
			target = s.Target()
			changed := func(flag string) bool {
				if flag == "format" {
					return format != ""
				}
				return cmd.Flags().Changed(flag)
			}
			if err := planner.ExplainOptions(s, &opts, &stFormat, changed); err != nil {
				fmt.Fprintln(a.err, err)
				return silentExit{Code: exitBadInput}
			}
		default:
			continue
		}
		res, err := planner.PlanStatement(context.Background(), target, cat, inf, opts)
		if err != nil {
			if errors.Is(err, planner.ErrNoInfra) {
				return badInput(err)
			}
			// Keep going: every statement's problems are reported at once.
			printPositioned(a.err, src, err)
			failed = true
			continue
		}
		if planned > 0 {
			fmt.Fprintln(a.out)
		}
		planned++
		if res.Frontier != nil {
			if err := explain.WriteFrontier(a.out, stFormat, res.Frontier); err != nil {
				return badInput(err)
			}
			continue
		}
		if err := explain.Write(a.out, stFormat, res.Physical); err != nil {
			return badInput(err)
		}
		if err := res.Runnable(); err != nil {
			// The plan shows the best it found; the objective no plan
			// meets is the error, at its position, as run reports it.
			printPositioned(a.err, src, err)
			if over := objectiveFlags(cmd, f); over != "" {
				fmt.Fprintf(a.err, "(given on the command line in place of the query's: %s)\n", over)
			}
			infeasible = true
		}
	}
	if failed {
		return silentExit{Code: exitBadInput}
	}
	if infeasible {
		return silentExit{Code: exitFailure}
	}
	if planned == 0 {
		return badInput(fmt.Errorf("%s: no query to explain (want SELECT, INSERT or EXPLAIN)", name))
	}
	return nil
}

// runExplainAnalyze runs the script's queries as EXPLAIN ANALYZE on an
// embedded cluster of the infrastructure, with the catalog and
// infrastructure run finds (inputsFor).
func runExplainAnalyze(cmd *cobra.Command, a *app, f explainFlags, path string) error {
	format := a.g.format
	switch format {
	case "", "text", "table":
		format = "text"
	case "json":
	default:
		return badInput(fmt.Errorf("unknown --format %q with --analyze: want text or json", format))
	}
	if f.duration < 0 || f.rows < 0 {
		return badInput(fmt.Errorf("--duration and --rows must not be negative"))
	}
	if path == "-" {
		return badInput(fmt.Errorf("explain --analyze reads a query file, not stdin"))
	}
	// Bounds given on the command line win over a statement's own; unset,
	// the statement's (or the default 10 s) apply.
	ao := &cluster.AnalyzeOptions{Format: format, MaxRows: f.rows}
	if cmd.Flags().Changed("duration") {
		ao.For = f.duration
	}
	b := *a
	b.g.format = ""
	return runRun(cmd.Context(), &b, runFlags{onError: "fail", maxDelay: 2 * time.Second, batch: 4096, processes: f.processes, analyze: ao}, path)
}

// objectiveFlags names the objective flags given, which replace the
// query's own ("" when none).
func objectiveFlags(cmd *cobra.Command, f explainFlags) string {
	var parts []string
	if cmd.Flags().Changed("accuracy") {
		parts = append(parts, fmt.Sprintf("--accuracy %g", f.accuracy))
	}
	if cmd.Flags().Changed("throughput") {
		parts = append(parts, fmt.Sprintf("--throughput %g", f.throughput))
	}
	return strings.Join(parts, " and ")
}

func optimizeOptions(f explainFlags) (o optimize.Options) {
	o.Seed = f.seed
	o.TimeBudget = f.budget
	return o
}

// printPositioned prints every positioned problem of err with its source line
// and a caret under the column.
func printPositioned(w io.Writer, src string, err error) {
	var es bind.Errors
	if errors.As(err, &es) {
		for _, e := range es {
			printCaret(w, src, e.Error(), e.Pos.Line, e.Pos.Col)
		}
		return
	}
	var e *bind.Error
	if errors.As(err, &e) {
		printCaret(w, src, e.Error(), e.Pos.Line, e.Pos.Col)
		return
	}
	fmt.Fprintln(w, err)
}

func printCaret(w io.Writer, src, msg string, line, col int) {
	fmt.Fprintln(w, msg)
	lines := strings.Split(src, "\n")
	if line < 1 || line > len(lines) {
		return
	}
	fmt.Fprintln(w, lang.Caret(lines[line-1], col))
}

// parseClassMix reads --class-mix MODEL=CLASS:WEIGHT,... flags.
func parseClassMix(flags []string) (map[string]map[string]float64, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	out := map[string]map[string]float64{}
	for _, f := range flags {
		model, list, ok := strings.Cut(f, "=")
		if !ok || model == "" || list == "" {
			return nil, fmt.Errorf("--class-mix %q: want MODEL=CLASS:WEIGHT,CLASS:WEIGHT,...", f)
		}
		mix := map[string]float64{}
		for _, part := range strings.Split(list, ",") {
			i := strings.LastIndex(part, ":")
			if i <= 0 {
				return nil, fmt.Errorf("--class-mix %q: %q is not CLASS:WEIGHT", f, part)
			}
			w, err := strconv.ParseFloat(strings.TrimSpace(part[i+1:]), 64)
			if err != nil || w < 0 || math.IsInf(w, 0) || math.IsNaN(w) {
				return nil, fmt.Errorf("--class-mix %q: weight %q of %s is not a non-negative number", f, part[i+1:], part[:i])
			}
			mix[strings.TrimSpace(part[:i])] += w
		}
		out[model] = mix
	}
	return out, nil
}
