package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"

	"github.com/tierflow/tierflow/bench/tpch"
)

// runTPCH is `tierflow-sqlpeer tpch ...`, the DuckDB side of `tierflow bench
// tpch --peer duckdb`: the harness of bench/tpch with DuckDB as the peer.
func runTPCH(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tierflow bench tpch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f tpch.Flags
	f.Register(fs)
	prof := fs.String("cpuprofile", "", "write a CPU profile of the run to this file (with --peer none, tierflow's alone)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errBadInput, fs.Arg(0))
	}
	o, err := f.Options()
	if err != nil {
		return err
	}
	tf, err := f.Tierflow()
	if err != nil {
		return err
	}
	if *prof != "" {
		pf, err := os.Create(*prof)
		if err != nil {
			return fmt.Errorf("%w: --cpuprofile: %w", errBadInput, err)
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if f.Peer == "none" {
		return tpch.Bench(ctx, o, tf, nil, stdout, stderr)
	}
	duck, err := newDuckTPCH()
	if err != nil {
		return fmt.Errorf("start DuckDB: %w", err)
	}
	defer duck.Close()
	return tpch.Bench(ctx, o, tf, duck, stdout, stderr)
}

// duckTPCH runs the TPC-H queries with DuckDB in this process, on every
// core, over views of the Parquet files tierflow reads.
type duckTPCH struct{ db *sql.DB }

func newDuckTPCH() (*duckTPCH, error) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return nil, err
	}
	// One connection: views (the tables', Q15's) are per-connection state.
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("SET TimeZone = 'UTC'"); err != nil {
		db.Close()
		return nil, err
	}
	return &duckTPCH{db: db}, nil
}

func (*duckTPCH) Name() string   { return "duckdb" }
func (d *duckTPCH) Close() error { return d.db.Close() }

// Load makes each table a view over its file.
func (d *duckTPCH) Load(ctx context.Context, dir string, _ tpch.Types) error {
	for _, t := range tpch.Tables {
		stmt := fmt.Sprintf("CREATE OR REPLACE VIEW %s AS SELECT * FROM read_parquet('%s')", t.Name, filepath.Join(dir, t.Name+".parquet"))
		if _, err := d.db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return nil
}

// Run runs q's statements in order and returns the rows of its SELECT.
func (d *duckTPCH) Run(ctx context.Context, q tpch.Query) (tpch.Result, error) {
	var out tpch.Result
	found := false
	for _, stmt := range q.Statements() {
		w := strings.ToLower(strings.Fields(stmt)[0])
		if w != "select" && w != "with" {
			if _, err := d.db.ExecContext(ctx, stmt); err != nil {
				return nil, err
			}
			continue
		}
		res, err := d.query(ctx, stmt)
		if err != nil {
			return nil, err
		}
		out, found = res, true
	}
	if !found {
		return nil, errors.New("no SELECT")
	}
	return out, nil
}

func (d *duckTPCH) query(ctx context.Context, stmt string) (tpch.Result, error) {
	rows, err := d.db.QueryContext(ctx, stmt)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out tpch.Result
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		for i, v := range vals {
			vals[i] = duckValue(v)
		}
		out = append(out, vals)
	}
	return out, rows.Err()
}
