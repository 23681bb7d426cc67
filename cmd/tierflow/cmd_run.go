package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/runtime/inference"
)

// runFlags are the options of `tierflow run`.
type runFlags struct {
	output   string
	onError  string
	maxDelay time.Duration
	batch    int
	parallel int
}

func newRunCmd(a *app) *cobra.Command {
	var f runFlags
	c := &cobra.Command{
		Use:   "run [flags] QUERY.sql|-",
		Short: "Run a script's statements locally: CREATE ... then queries, printing results as they stream",
		Long: `run executes the statements of a script in order, in this process: CREATE and
DROP change the catalog (--catalog loads one first), SHOW FUNCTIONS lists the
function registry, and each query runs until its sources end. Results print as
a table that grows as windows close; --output FILE writes them instead, as
--format csv, json (JSON lines) or parquet (default: from the file's extension).

Streams FROM FILE are read in event-time order with epochs advanced by a
watermark: the largest event time seen minus --max-delay. Rows arriving after
their window closed are counted and dropped, never merged. Rows that do not fit
the declared schema are reported with file and row number; --on-error skip goes
on without them, fail (the default) stops. Ctrl-C stops the query cleanly: what
was complete has been written.`,
		Example: `  tierflow run examples/streaming/query.sql
  tierflow run --output results.csv examples/streaming/query.sql
  tierflow run --on-error skip --max-delay 5s --format json examples/streaming/query.sql`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRun(cmd.Context(), a, f, args[0])
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.output, "output", "", "write results to this file instead of the terminal")
	fl.StringVar(&f.onError, "on-error", "fail", "what to do with a row that does not fit its schema: skip or fail")
	fl.DurationVar(&f.maxDelay, "max-delay", 2*time.Second, "allowed out-of-orderness of event time (watermark delay)")
	fl.IntVar(&f.batch, "batch-size", 4096, "rows per source batch")
	fl.IntVar(&f.parallel, "parallelism", 1, "instances of each GROUP BY, rows exchanged by a hash of the group keys")
	return c
}

func runRun(ctx context.Context, a *app, f runFlags, path string) error {
	policy, err := sources.ParseOnError(f.onError)
	if err != nil {
		return badInput(err)
	}
	format := a.g.format
	if format == "" && f.output != "" {
		switch strings.ToLower(filepath.Ext(f.output)) {
		case ".csv":
			format = "csv"
		case ".json", ".jsonl":
			format = "json"
		case ".parquet":
			format = "parquet"
		}
	}
	switch format {
	case "", "table", "csv", "json":
	case "parquet":
		if f.output == "" {
			return badInput(fmt.Errorf("--format parquet needs --output FILE"))
		}
	default:
		return badInput(fmt.Errorf("unknown --format %q: want table, csv, json or parquet", format))
	}
	var src []byte
	if path == "-" {
		// The script from stdin; relative file paths are from the working
		// directory.
		src, err = io.ReadAll(a.in)
		path = "<stdin>"
	} else {
		src, err = os.ReadFile(path)
	}
	if err != nil {
		return badInput(err)
	}
	var cat *catalog.Catalog
	if a.g.catalog != "" {
		if cat, err = catalog.LoadFile(a.g.catalog); err != nil {
			return badInput(err)
		}
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()

	out := a.out
	if f.output != "" {
		file, err := os.Create(f.output)
		if err != nil {
			return err
		}
		defer file.Close()
		out = file
	}
	used := false
	link := newNATSLink(a)
	defer link.close()
	nh := link.hooks(policy, f.batch)
	base := filepath.Dir(path)
	if path == "<stdin>" {
		base = "."
	}
	err = exec.RunScript(ctx, path, string(src), exec.ScriptOptions{
		Options: exec.Options{BaseDir: base, Stdout: a.out, OnError: policy, MaxDelay: f.maxDelay, BatchSize: f.batch, Parallelism: f.parallel, Stream: nh.Stream, Sink: nh.Sink, Lateral: inference.New(inference.Config{OrtLib: a.g.ortLib, BaseDir: base, Log: a.err}).Lateral},
		Catalog: cat,
		Log:     a.err,
		NewOutput: func() (sinks.Writer, error) {
			if used && f.output != "" && format == "parquet" {
				return nil, badInput(fmt.Errorf("--output %s holds one Parquet result; the script has several queries", f.output))
			}
			used = true
			return sinks.New(format, out)
		},
	})
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		fmt.Fprintln(a.err, "-- interrupted: results of closed windows were written")
		return nil
	}
	var le *lang.Error
	var be bind.Errors
	var bi *bind.Error
	if errors.As(err, &le) || errors.As(err, &be) || errors.As(err, &bi) || errors.Is(err, exec.ErrUnsupported) {
		return badInput(err)
	}
	return err
}
