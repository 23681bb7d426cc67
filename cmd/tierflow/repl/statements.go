package repl

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/explain"
	"github.com/tierflow/tierflow/planner/optimize"
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
			Options: s.opts, Settings: s.settings(), BaseDir: s.baseDir}, e, s.out)
	}
	opts := s.opts
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
	return nil
}

// set changes a planner option for the rest of the session.
func (s *Session) set(st *lang.Set) error {
	key := strings.ToLower(st.Key)
	val, err := literal(st.Value)
	if err != nil {
		return badf("%s: %v", bind.Pos(st.Pos), err)
	}
	bad := func(format string, args ...any) error {
		return badf("%s: SET %s: %s", bind.Pos(st.Pos), key, fmt.Sprintf(format, args...))
	}
	num := func() (float64, error) {
		f, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return 0, bad("want a number, got %q", val)
		}
		return f, nil
	}
	count := func() (int, error) {
		n, err := strconv.Atoi(val)
		if err != nil || n < 1 {
			return 0, bad("want a positive integer, got %q", val)
		}
		return n, nil
	}
	o := &s.opts
	switch key {
	case "planner.strategy":
		reg := o.Registry
		if reg == nil {
			reg = optimize.DefaultRegistry()
		}
		if _, err := reg.Lookup(strings.ToLower(val)); err != nil {
			return bad("unknown strategy %q (want one of %s)", val, strings.Join(reg.Names(), ", "))
		}
		o.Strategy = strings.ToLower(val)
	case "planner.profile":
		p, err := planner.ParsePercentile(val)
		if err != nil {
			return bad("%v", err)
		}
		o.Percentile = p
	case "planner.accuracy":
		f, err := num()
		if err != nil {
			return err
		}
		o.Accuracy = &f
	case "planner.throughput":
		f, err := num()
		if err != nil {
			return err
		}
		o.Throughput = f
	case "planner.seed":
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			return bad("want an integer, got %q", val)
		}
		o.Optimize.Seed = n
	case "planner.beam_width":
		n, err := count()
		if err != nil {
			return err
		}
		o.Optimize.BeamModelSelection, o.Optimize.BeamWorkerAssignment = n, n
	case "planner.beam_ms":
		n, err := count()
		if err != nil {
			return err
		}
		o.Optimize.BeamModelSelection = n
	case "planner.beam_wa":
		n, err := count()
		if err != nil {
			return err
		}
		o.Optimize.BeamWorkerAssignment = n
	case "planner.topo_orders":
		n, err := count()
		if err != nil {
			return err
		}
		o.Optimize.TopoOrders = n
	case "exec.max_delay", "exec.on_error", "exec.batch_size", "exec.replay":
		probe := map[string]string{key: val}
		if err := applyExecSettings(&exec.Options{}, probe); err != nil {
			return bad("%v", err)
		}
	case "planner.time_budget":
		d, err := time.ParseDuration(val)
		if err != nil {
			return bad("want a duration such as '2s', got %q", val)
		}
		o.Optimize.TimeBudget = d
	default:
		return bad("unknown setting (want one of %s)", strings.Join(Settings(), ", "))
	}
	s.sets[key] = val
	return nil
}

// settings copies the session's SET values for an engine.
func (s *Session) settings() map[string]string {
	out := make(map[string]string, len(s.sets))
	for k, v := range s.sets {
		out[k] = v
	}
	return out
}

// Settings lists what SET changes, for help and completion.
func Settings() []string {
	return []string{"exec.batch_size", "exec.max_delay", "exec.on_error", "exec.replay", "planner.accuracy", "planner.beam_ms", "planner.beam_wa", "planner.beam_width",
		"planner.profile", "planner.seed", "planner.strategy", "planner.throughput",
		"planner.time_budget", "planner.topo_orders"}
}

func literal(l lang.Literal) (string, error) {
	switch v := l.(type) {
	case *lang.NumberLit:
		return v.Value, nil
	case *lang.StringLit:
		return v.Value, nil
	case *lang.BoolLit:
		return strconv.FormatBool(v.Value), nil
	}
	return "", fmt.Errorf("want a number, a string or a boolean")
}

// runQuery binds a SELECT or INSERT, hands it to the engine and renders its
// results as they arrive.
func (s *Session) runQuery(ctx context.Context, st lang.Statement, src string) error {
	b := bind.New(s.cat)
	b.Funcs = s.funcs
	bound, err := b.Bind(st)
	if err != nil {
		return err
	}
	stream, err := s.engine.Exec(ctx, Query{Stmt: st, Source: src, Bound: bound, Catalog: s.cat, Infra: s.inf, Options: s.opts, Settings: s.settings(), BaseDir: s.baseDir})
	if err != nil {
		return err
	}
	defer stream.Close()
	_, insert := st.(*lang.Insert)
	return s.render(ctx, stream, insert)
}

// printTable renders one of the session's own listings.
func (s *Session) printTable(t table) error {
	r, err := newRenderer(s.format, s.out, s.color())
	if err != nil {
		return err
	}
	if t.title != "" && s.format == "table" {
		fmt.Fprintln(s.out, t.title)
	}
	if err := r.begin(t.cols); err != nil {
		return err
	}
	if len(t.rows) > 0 {
		if err := r.rows(textRows(t.rows)); err != nil {
			return err
		}
	}
	return r.end(int64(len(t.rows)))
}

// table is a small listing the session builds itself (SHOW, \d).
type table struct {
	title string
	cols  []column
	rows  [][]string
}

func textTable(title string, names ...string) table {
	t := table{title: title}
	for _, n := range names {
		t.cols = append(t.cols, column{name: n})
	}
	return t
}

func sortRows(rows [][]string) {
	sort.SliceStable(rows, func(i, j int) bool { return rows[i][0] < rows[j][0] })
}
