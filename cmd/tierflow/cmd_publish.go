package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/spf13/cobra"

	"github.com/tierflow/tierflow/internal/cli"
	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/runtime/connectors"
)

// publishFlags are the options of `tierflow publish`.
type publishFlags struct {
	rate      float64
	jetstream string
	batch     int
	noEnd     bool
	progress  time.Duration
}

func newPublishCmd(a *app) *cobra.Command {
	var f publishFlags
	c := &cobra.Command{
		Use:   "publish [flags] FILE SUBJECT",
		Short: "Feed a file's rows into a NATS subject at a rate, for demos and tests",
		Long: `publish reads FILE (CSV with a header, JSON lines, Parquet or Arrow IPC, by its
extension) and publishes its rows on SUBJECT of the server at --nats, in the
format of the file's extension (.csv as csv, .json/.jsonl as json, .arrow and
.parquet as arrow) or as --format says: json (one object per message), csv
(one row per message, no header, columns in the file's order) or arrow (an
Arrow IPC stream of --batch rows per message). --rate paces the rows per
second (0: as fast as possible). --jetstream STREAM publishes into a
JetStream stream with acknowledgements (the stream is created over SUBJECT
if it does not exist).
After the last row an end-of-stream marker (header Tierflow-End) is published,
which ends a 'tierflow run' reading the subject; --no-end leaves it out.
Progress prints as plain lines on stderr.`,
		Example: `  tierflow publish --nats nats://127.0.0.1:4222 examples/streaming/readings.csv sensors.readings
  tierflow publish --nats nats://127.0.0.1:4222 --rate 200 --format csv examples/streaming/readings.csv sensors.readings
  tierflow publish --nats nats://127.0.0.1:4222 --jetstream READINGS --format arrow examples/streaming/readings.csv sensors.readings`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPublish(cmd.Context(), a, f, args[0], args[1])
		},
	}
	fl := c.Flags()
	fl.Float64Var(&f.rate, "rate", 0, "rows per second (0: as fast as possible)")
	fl.StringVar(&f.jetstream, "jetstream", "", "publish into this JetStream stream, with acks")
	fl.IntVar(&f.batch, "batch", 1024, "rows per message with --format arrow")
	fl.BoolVar(&f.noEnd, "no-end", false, "do not publish the end-of-stream marker")
	fl.DurationVar(&f.progress, "progress", time.Second, "interval of progress lines")
	return c
}

func openFile(path string, batch int) (sources.Reader, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json", ".jsonl", ".ndjson":
		return sources.OpenJSONL(path, nil, batch, sources.Fail, nil)
	case ".parquet":
		return sources.OpenParquet(path, nil, batch, memory.DefaultAllocator, sources.Fail, nil)
	case ".arrow", ".ipc", ".feather":
		return sources.OpenIPC(path, nil, memory.DefaultAllocator, sources.Fail, nil)
	}
	return sources.OpenCSV(path, nil, batch, sources.Fail, nil)
}

// messageFormat is the message format publish takes from the file's
// extension: CSV rows as CSV, JSON lines as JSON, Arrow IPC and Parquet
// (columnar, typed) as Arrow IPC.
func messageFormat(path string) string {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".csv":
		return "csv"
	case ".arrow", ".ipc", ".feather", ".parquet":
		return "arrow"
	}
	return "json"
}

func runPublish(ctx context.Context, a *app, f publishFlags, path, subject string) error {
	if a.g.nats == "" {
		return badInput(errors.New("publish needs --nats URL: an embedded server would have no subscribers"))
	}
	if f.rate < 0 || f.batch <= 0 {
		return badInput(fmt.Errorf("--rate must be >= 0 and --batch > 0"))
	}
	kind := connectors.NATS
	if f.jetstream != "" {
		kind = connectors.JetStream
	}
	format, from := a.g.format, "--format"
	if format == "" {
		format, from = messageFormat(path), "the file's extension"
	}
	comp, err := connectors.Builtins().Lookup(kind, format)
	if err != nil {
		return badInput(fmt.Errorf("--format %s: want json, csv or arrow", format))
	}
	r, err := openFile(path, f.batch)
	if err != nil {
		return badInput(err)
	}
	defer r.Close()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	link := newNATSLink(a)
	defer link.close()
	nc, err := link.conn()
	if err != nil {
		return err
	}
	stats := &connectors.Stats{}
	w, err := comp.NewSink(connectors.SinkConfig{Conn: nc, Subject: subject, Stream: f.jetstream, End: !f.noEnd, Stats: stats})
	if err != nil {
		return err
	}
	fmt.Fprintf(a.err, "-- publishing %s to %s as %s messages (%s)\n", path, subject, comp.Format, from)
	p := &pacer{rate: f.rate, start: time.Now(), every: f.progress, lastLog: time.Now()}
	// Rows go out one at a time when paced (a rate is rows per second),
	// else a batch at a time; Arrow messages always hold a batch.
	step := int64(f.batch)
	if f.rate > 0 && comp.Format != "arrow" {
		step = 1
	}
	logLine := func(final bool) {
		el := time.Since(p.start).Seconds()
		verb := "published"
		if !final {
			verb = "publishing:"
		}
		fmt.Fprintf(a.err, "-- %s %s as %s (%s) to %s in %.1fs (%.0f rows/s)\n", verb, cli.Count(p.rows, "row"), cli.Count(stats.Messages.Load(), "message"), cli.Count(stats.Bytes.Load(), "byte"), subject, el, float64(p.rows)/max(el, 1e-9))
	}
	err = func() error {
		for {
			rec, err := r.Next(memory.DefaultAllocator)
			if err != nil || rec == nil {
				return err
			}
			for off := int64(0); off < rec.NumRows(); off += step {
				if err := p.wait(ctx); err != nil {
					rec.Release()
					return err
				}
				part := rec.NewSlice(off, min(off+step, rec.NumRows()))
				err := w.Write(part)
				p.rows += part.NumRows()
				part.Release()
				if err != nil {
					rec.Release()
					return err
				}
				if time.Since(p.lastLog) >= p.every {
					p.lastLog = time.Now()
					logLine(false)
				}
			}
			rec.Release()
		}
	}()
	interrupted := false
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(a.err, "-- interrupted")
			err, interrupted = nil, true
		} else {
			return err
		}
	}
	if cerr := w.Close(); cerr != nil {
		return cerr
	}
	logLine(true)
	if interrupted {
		return silentExit{Code: exitInterrupted}
	}
	return nil
}

// pacer holds publishing to a rate: row n goes out no earlier than n/rate
// seconds after the start (a schedule, so pauses are caught up on).
type pacer struct {
	rate    float64
	start   time.Time
	rows    int64
	every   time.Duration
	lastLog time.Time
}

func (p *pacer) wait(ctx context.Context) error {
	if p.rate <= 0 {
		return ctx.Err()
	}
	d := time.Until(p.start.Add(time.Duration(float64(p.rows) / p.rate * float64(time.Second))))
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
