package repl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/session"
	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/explain"
)

// runStatement runs one parsed statement against the session.
func (s *Session) runStatement(ctx context.Context, st lang.Statement, src string) error {
	if s.explain {
		s.explain = false
		switch q := st.(type) {
		case *lang.Query:
			return s.runExplain(ctx, &lang.Explain{Pos: q.Pos, Query: q})
		case *lang.Insert:
			return s.runExplain(ctx, &lang.Explain{Pos: q.Pos, Insert: q})
		}
		fmt.Fprintln(s.cfg.Err, "(\\explain applies to SELECT and INSERT; running the statement)")
	}
	// A CREATE without columns reads its file from where the running
	// script is (rebase below makes its path relative to here after).
	s.cat.Files = exec.FileSchemas{BaseDir: s.baseDir}
	if ok, err := bind.Apply(s.cat, st); ok {
		if err != nil {
			return err
		}
		s.rebase(st)
		s.tag(commandTag(st))
		return nil
	}
	switch st := st.(type) {
	case *lang.Query, *lang.Insert:
		return s.runQuery(ctx, st, src)
	case *lang.Explain:
		return s.runExplain(ctx, st)
	case *lang.Show:
		t, err := s.show(st)
		if err != nil {
			return err
		}
		return s.printTable(t)
	case *lang.Describe:
		return s.describe(st.Name, bind.Pos(st.Pos).String())
	case *lang.Set:
		if err := s.set(st); err != nil {
			return err
		}
		s.tag("SET")
		return nil
	case *lang.StopQuery:
		return badf("%s: the REPL runs one query at a time in the foreground: press Ctrl-C to stop it", bind.Pos(st.Pos))
	}
	return badf("%s: statement %T is not supported in the REPL", bind.Pos(st.Position()), st)
}

// tag prints a psql-style command tag (CREATE MODEL, SET) on a terminal.
func (s *Session) tag(t string) {
	if s.cfg.Interactive {
		fmt.Fprintln(s.cfg.Err, t)
	}
}

// rebase makes the relative paths of a script's CREATE (FROM FILE, model
// variant files) relative to the working directory, as `tierflow run` reads
// them relative to the script.
func (s *Session) rebase(st lang.Statement) {
	if s.baseDir == "" || s.baseDir == "." {
		return
	}
	fix := func(p *string) {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(s.baseDir, *p)
		}
	}
	switch st := st.(type) {
	case *lang.CreateModel:
		if m := s.cat.Model(st.Name); m != nil {
			for _, v := range m.Variants {
				fix(&v.File)
			}
		}
	case *lang.CreateStream:
		if x := s.cat.Stream(st.Name); x != nil && x.Source == "file" {
			fix(&x.Subject)
		}
	case *lang.CreateTable:
		if x := s.cat.Table(st.Name); x != nil {
			fix(&x.Path)
		}
	}
}

func commandTag(st lang.Statement) string {
	switch st := st.(type) {
	case *lang.CreateModel:
		return "CREATE MODEL " + st.Name
	case *lang.CreateStream:
		return "CREATE STREAM " + st.Name
	case *lang.CreateTable:
		return "CREATE TABLE " + st.Name
	case *lang.CreateSink:
		return "CREATE SINK " + st.Name
	case *lang.Drop:
		return "DROP " + string(st.Kind) + " " + st.Name
	}
	return "OK"
}

// runExplain plans the statement with the session's options (overridden by
// EXPLAIN's own) and prints the physical plan.
func (s *Session) runExplain(ctx context.Context, e *lang.Explain) error {
	if e.Analyze {
		a, ok := s.engine.(Analyzer)
		if !ok {
			return badf("%s: EXPLAIN ANALYZE needs an engine that runs plans on a cluster; this session's runs queries locally", bind.Pos(e.Pos))
		}
		b := bind.New(s.cat)
		b.Funcs = s.funcs
		bound, err := b.Bind(e.Target())
		if err != nil {
			return err
		}
		return a.Analyze(ctx, Query{Stmt: e.Target(), Source: lang.Print(e), Bound: bound, Catalog: s.cat, Infra: s.inf,
			Options: s.settings.Planner, Settings: s.settings.Values(), BaseDir: s.baseDir}, e, s.out)
	}
	opts := s.settings.Planner
	format := "text"
	if err := planner.ExplainOptions(e, &opts, &format, nil); err != nil {
		return badf("%v", err)
	}
	res, err := planner.PlanStatement(ctx, e.Target(), s.cat, s.inf, opts)
	if err != nil {
		if errors.Is(err, planner.ErrNoInfra) {
			return fmt.Errorf("EXPLAIN needs an infrastructure: start the REPL with --infra FILE: %w", err)
		}
		var es bind.Errors
		var be *bind.Error
		if errors.As(err, &es) || errors.As(err, &be) {
			return err
		}
		return badf("%v", err)
	}
	if res.Frontier != nil {
		if err := explain.WriteFrontier(s.out, format, res.Frontier); err != nil {
			return badf("%v", err)
		}
		return nil
	}
	if err := explain.Write(s.out, format, res.Physical); err != nil {
		return badf("%v", err)
	}
	// As tierflow explain: the plan, then the objective no plan meets.
	return res.Runnable()
}

// set changes a setting for the rest of the session (operators/session,
// shared with `tierflow run`).
func (s *Session) set(st *lang.Set) error {
	if err := s.settings.Set(st); err != nil {
		return inputError{err}
	}
	return nil
}

// Settings lists what SET changes, for help and completion.
func Settings() []string { return session.Names() }

// runQuery binds a SELECT or INSERT, hands it to the engine and renders its
// results as they arrive.
func (s *Session) runQuery(ctx context.Context, st lang.Statement, src string) error {
	b := bind.New(s.cat)
	b.Funcs = s.funcs
	bound, err := b.Bind(st)
	if err != nil {
		return err
	}
	stream, err := s.engine.Exec(ctx, Query{Stmt: st, Source: src, Bound: bound, Catalog: s.cat, Infra: s.inf, Options: s.settings.Planner, Settings: s.settings.Values(), BaseDir: s.baseDir})
	if err != nil {
		return err
	}
	defer stream.Close()
	_, insert := st.(*lang.Insert)
	return s.render(ctx, stream, insert)
}

// printTable renders one of the session's own listings.
func (s *Session) printTable(t session.Listing) error {
	return writeListing(s.out, s.format, s.color(), t)
}

// WriteListing prints a SHOW or DESCRIBE listing as the REPL does in format
// (table, json, jsonl or csv), for `tierflow run` scripts.
func WriteListing(w io.Writer, format string, t session.Listing) error {
	return writeListing(w, format, false, t)
}

func writeListing(w io.Writer, format string, color bool, t session.Listing) error {
	r, err := newRenderer(format, w, color)
	if err != nil {
		return err
	}
	if t.Title != "" && (format == "table" || format == "") {
		fmt.Fprintln(w, t.Title)
	}
	cols := make([]column, len(t.Columns))
	for i, n := range t.Columns {
		cols[i] = column{name: n}
	}
	if err := r.begin(cols); err != nil {
		return err
	}
	if len(t.Rows) > 0 {
		if err := r.rows(textRows(t.Rows)); err != nil {
			return err
		}
	}
	return r.end(int64(len(t.Rows)))
}
