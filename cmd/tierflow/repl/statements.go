package repl

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/operators/session"
)

// runStatement runs one parsed statement: the REPL's own \explain, then
// the session's interpreter (operators/session, as `tierflow run`), then
// the REPL's command tag.
func (s *Session) runStatement(ctx context.Context, st lang.Statement, src string) error {
	if s.explain {
		s.explain = false
		switch q := st.(type) {
		case *lang.Query:
			st = &lang.Explain{Pos: q.Pos, Query: q}
		case *lang.Insert:
			st = &lang.Explain{Pos: q.Pos, Insert: q}
		default:
			fmt.Fprintln(s.cfg.Err, "(\\explain applies to SELECT and INSERT; running the statement)")
		}
	}
	s.sess.SetBaseDir(s.baseDir)
	if err := s.sess.Exec(ctx, st, src); err != nil {
		return err
	}
	switch st.(type) {
	case *lang.CreateModel, *lang.CreateStream, *lang.CreateTable, *lang.CreateSink, *lang.Drop:
		s.rebase(st)
		s.tag(commandTag(st))
	case *lang.Set:
		s.tag("SET")
	}
	return nil
}

// replOutput is where the session's statements print in the REPL: results
// rendered as they arrive, listings and plans in the session's format.
type replOutput struct{ s *Session }

func (o replOutput) Rows(ctx context.Context, q Query, st Stream) error {
	_, insert := q.Stmt.(*lang.Insert)
	return o.s.render(ctx, st, insert)
}

func (o replOutput) Listing(l session.Listing) error { return o.s.printTable(l) }

func (o replOutput) Text() io.Writer { return o.s.out }

// tag prints a psql-style command tag (CREATE MODEL, SET) on a terminal.
func (s *Session) tag(t string) {
	if s.cfg.Interactive {
		fmt.Fprintln(s.cfg.Err, t)
	}
}

// rebase makes the relative paths of a script's CREATE STREAM and CREATE
// TABLE (FROM FILE) relative to the working directory, as `tierflow run`
// reads them relative to the script.
func (s *Session) rebase(st lang.Statement) {
	if s.baseDir == "" || s.baseDir == "." {
		return
	}
	fix := func(p *string) {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(s.baseDir, *p)
		}
	}
	// A model's variant files are not rebased: the model runtime looks
	// for them next to the script that declared them first
	// (inference.ModelFile), which rebased named DIR/DIR/models/x.onnx.
	switch st := st.(type) {
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

// Settings lists what SET changes, for help and completion.
func Settings() []string { return session.Names() }

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
