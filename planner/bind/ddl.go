package bind

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/alecthomas/participle/v2/lexer"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/catalog"
)

// Apply runs a CREATE or DROP statement against cat. Other statements are
// ignored (ok false). CREATE of a name the catalog already holds is an error
// (ErrExists) unless IF NOT EXISTS, so a script cannot silently replace the
// profiles a catalog file carries.
func Apply(cat *catalog.Catalog, stmt lang.Statement) (ok bool, err error) {
	switch s := stmt.(type) {
	case *lang.CreateModel:
		return true, createModel(cat, s)
	case *lang.CreateStream:
		return true, createStream(cat, s)
	case *lang.CreateTable:
		if exists(cat, s.Name, s.IfNotExists, s.Pos) {
			return true, existsErr(cat, s.Name, s.IfNotExists, s.Pos)
		}
		t := &catalog.Table{Name: s.Name, Path: s.Path, Format: strings.ToLower(string(s.Format)), Pos: Pos(s.Pos)}
		t.Columns = columns(s.Columns)
		if err := inferColumns(cat, &t.Columns, func() ([]catalog.Column, error) { return cat.TableColumns(t) }, s.Pos); err != nil {
			return true, err
		}
		cat.Tables = append(cat.Tables, t)
		return true, nil
	case *lang.CreateSink:
		if exists(cat, s.Name, s.IfNotExists, s.Pos) {
			return true, existsErr(cat, s.Name, s.IfNotExists, s.Pos)
		}
		cat.Sinks = append(cat.Sinks, &catalog.Sink{Name: s.Name, Kind: strings.ToLower(string(s.Target)), Target: s.Location, Format: strings.ToLower(string(s.Format)), Pos: Pos(s.Pos)})
		return true, nil
	case *lang.CreateView:
		return true, createView(cat, s)
	case *lang.Drop:
		return true, drop(cat, s)
	}
	return false, nil
}

// createView checks that the view's query binds against the catalog as it
// is, so a mistake shows at the CREATE, and records it.
func createView(cat *catalog.Catalog, s *lang.CreateView) error {
	if old := cat.View(s.Name); old != nil && s.OrReplace {
		cat.Views, _ = remove(cat.Views, s.Name, func(v *catalog.View) string { return v.Name })
	} else if exists(cat, s.Name, s.IfNotExists, s.Pos) {
		return existsErr(cat, s.Name, s.IfNotExists, s.Pos)
	}
	b := New(cat)
	n, sc := b.query(s.Query, nil)
	if err := b.err(); err != nil {
		return err
	}
	if n != nil && len(s.Columns) > len(sc.cols) {
		return &Error{Pos: Pos(s.Pos), Msg: fmt.Sprintf("view %s names %d columns, its query has %d", s.Name, len(s.Columns), len(sc.cols)), Kind: ErrBind}
	}
	cat.Views = append(cat.Views, &catalog.View{Name: s.Name, Columns: s.Columns, SQL: lang.Print(s.Query), Query: s.Query, Pos: Pos(s.Pos)})
	return nil
}

// exists says whether name is taken. An entry of the catalog found beside
// the script (Catalog.BaseFile) is not, unless IF NOT EXISTS asks to keep
// it: it is dropped here, so the CREATE replaces it.
func exists(cat *catalog.Catalog, name string, ifNotExists bool, _ any) bool {
	if cat.BaseFile != "" && !ifNotExists {
		base := func(p catalog.Pos) bool { return p.File == cat.BaseFile }
		if m := cat.Model(name); m != nil && base(m.Pos) {
			cat.Models, _ = remove(cat.Models, name, func(m *catalog.Model) string { return m.Name })
		}
		if s := cat.Stream(name); s != nil && base(s.Pos) {
			cat.Streams, _ = remove(cat.Streams, name, func(m *catalog.Stream) string { return m.Name })
		}
		if t := cat.Table(name); t != nil && base(t.Pos) {
			cat.Tables, _ = remove(cat.Tables, name, func(m *catalog.Table) string { return m.Name })
		}
		if s := cat.Sink(name); s != nil && base(s.Pos) {
			cat.Sinks, _ = remove(cat.Sinks, name, func(m *catalog.Sink) string { return m.Name })
		}
	}
	return cat.Model(name) != nil || cat.Stream(name) != nil || cat.Table(name) != nil || cat.Sink(name) != nil || cat.View(name) != nil
}

func existsErr(cat *catalog.Catalog, name string, ifNotExists bool, p lexer.Position) error {
	if ifNotExists {
		return nil
	}
	return &Error{Pos: Pos(p), Msg: fmt.Sprintf("%q already exists in the catalog (use IF NOT EXISTS to keep it)", name), Kind: catalog.ErrExists}
}

func columns(cs []*lang.ColumnDef) []catalog.Column {
	out := make([]catalog.Column, len(cs))
	for i, c := range cs {
		out[i] = catalog.Column{Name: c.Name, Type: TypeString(c.Type), Pos: Pos(c.Pos)}
	}
	return out
}

// inferColumns fills a CREATE without a column list from its file, where the
// catalog can read files, so DESCRIBE shows the columns and a missing or
// unreadable file is an error at the CREATE (as DuckDB's read_csv is). A
// stream from NATS has nothing to read: it needs its column list.
func inferColumns(cat *catalog.Catalog, cols *[]catalog.Column, infer func() ([]catalog.Column, error), p lexer.Position) error {
	if len(*cols) > 0 {
		return nil
	}
	got, err := infer()
	switch {
	case err == nil:
		*cols = got
		return nil
	case cat.Files == nil && errors.Is(err, catalog.ErrNoColumns):
		return nil // the binder asks again where the table is used
	}
	kind := ErrBind
	if errors.Is(err, catalog.ErrNoColumns) {
		kind = catalog.ErrNoColumns
	}
	return &Error{Pos: Pos(p), Msg: err.Error(), Kind: kind, Err: err}
}

// option reads a numeric WITH option.
func option(o *lang.Option) (float64, error) {
	n, ok := o.Value.(*lang.NumberLit)
	if !ok {
		return 0, &Error{Pos: Pos(o.Pos), Msg: fmt.Sprintf("option %s wants a number", o.Key), Kind: ErrBind}
	}
	return strconv.ParseFloat(n.Value, 64)
}

func createModel(cat *catalog.Catalog, s *lang.CreateModel) error {
	if exists(cat, s.Name, s.IfNotExists, nil) {
		return existsErr(cat, s.Name, s.IfNotExists, s.Pos)
	}
	var errs Errors
	m := &catalog.Model{Name: s.Name, Task: s.Task, Inputs: columns(s.Inputs), Outputs: columns(s.Outputs), Pos: Pos(s.Pos)}
	for _, o := range s.Options {
		v, err := option(o)
		switch {
		case err != nil:
			errs = append(errs, &Error{Pos: Pos(o.Pos), Msg: err.Error(), Kind: ErrBind})
		case strings.EqualFold(o.Key, "output_ratio"):
			m.OutputRatio = v
		default:
			errs = append(errs, &Error{Pos: Pos(o.Pos), Msg: fmt.Sprintf("unknown model option %q (want output_ratio)", o.Key), Kind: ErrBind})
		}
	}
	for _, vd := range s.Variants {
		v := &catalog.Variant{Name: vd.Name, File: vd.Path, Latency: map[string]catalog.Latency{}, Pos: Pos(vd.Pos)}
		for _, o := range vd.Options {
			x, err := option(o)
			if err != nil {
				errs = append(errs, &Error{Pos: Pos(o.Pos), Msg: err.Error(), Kind: ErrBind})
				continue
			}
			key := strings.ToLower(o.Key)
			switch {
			case key == "accuracy":
				v.Accuracy = x
			case key == "output_kb":
				v.OutputKB = x
			case key == "proxy_cost":
				v.ProxyCost = x
			case strings.HasPrefix(key, "latency_ms."):
				// latency_ms.<worker type> = ms, at every percentile.
				v.Latency[o.Key[len("latency_ms."):]] = catalog.Latency{P50: x, P75: x, P90: x}
			default:
				errs = append(errs, &Error{Pos: Pos(o.Pos), Msg: fmt.Sprintf("unknown variant option %q (want accuracy, output_kb, proxy_cost, latency_ms.<worker type>)", o.Key), Kind: ErrBind})
			}
		}
		m.Variants = append(m.Variants, v)
	}
	for _, c := range append(append([]catalog.Column(nil), m.Inputs...), m.Outputs...) {
		if _, err := catalog.ParseType(c.Type); err != nil {
			errs = append(errs, &Error{Pos: c.Pos, Msg: err.Error(), Kind: ErrBind})
		}
	}
	if len(errs) > 0 {
		return errs
	}
	cat.Models = append(cat.Models, m)
	return nil
}

func createStream(cat *catalog.Catalog, s *lang.CreateStream) error {
	if exists(cat, s.Name, s.IfNotExists, nil) {
		return existsErr(cat, s.Name, s.IfNotExists, s.Pos)
	}
	st := &catalog.Stream{
		Name: s.Name, Columns: columns(s.Columns), Source: strings.ToLower(string(s.Source)), Subject: s.Location,
		Format: strings.ToLower(string(s.Format)), Tier: s.Tier, Pos: Pos(s.Pos),
	}
	var errs Errors
	if s.Locations != nil {
		n, err := s.Locations.Int64()
		if err != nil || n < 1 {
			errs = append(errs, &Error{Pos: Pos(s.Locations.Pos), Msg: "LOCATIONS wants a positive integer", Kind: ErrBind})
		}
		st.Locations = int(n)
	}
	if s.Rate != nil {
		v, err := s.Rate.Value.Float64()
		if err != nil || v <= 0 {
			errs = append(errs, &Error{Pos: Pos(s.Rate.Pos), Msg: "RATE wants a positive number", Kind: ErrBind})
		}
		st.Rate = v / s.Rate.Per.Seconds()
	}
	for _, o := range s.Options {
		v, err := option(o)
		switch {
		case err != nil:
			errs = append(errs, &Error{Pos: Pos(o.Pos), Msg: err.Error(), Kind: ErrBind})
		case strings.EqualFold(o.Key, "item_kb"):
			st.ItemKB = v
		case strings.EqualFold(o.Key, "source_max_delay_ms"):
			st.SourceMaxDelayMs = v // a literal: never negative
		default:
			errs = append(errs, &Error{Pos: Pos(o.Pos), Msg: fmt.Sprintf("unknown stream option %q (want item_kb or source_max_delay_ms)", o.Key), Kind: ErrBind})
		}
	}
	for _, c := range st.Columns {
		if _, err := catalog.ParseType(c.Type); err != nil {
			errs = append(errs, &Error{Pos: c.Pos, Msg: err.Error(), Kind: ErrBind})
		}
	}
	if len(errs) == 0 {
		if err := inferColumns(cat, &st.Columns, func() ([]catalog.Column, error) { return cat.StreamColumns(st) }, s.Pos); err != nil {
			return err
		}
	}
	if len(errs) > 0 {
		return errs
	}
	cat.Streams = append(cat.Streams, st)
	return nil
}

func drop(cat *catalog.Catalog, s *lang.Drop) error {
	removed := false
	switch s.Kind {
	case "MODEL":
		cat.Models, removed = remove(cat.Models, s.Name, func(m *catalog.Model) string { return m.Name })
	case "STREAM":
		cat.Streams, removed = remove(cat.Streams, s.Name, func(m *catalog.Stream) string { return m.Name })
	case "TABLE":
		cat.Tables, removed = remove(cat.Tables, s.Name, func(m *catalog.Table) string { return m.Name })
	case "SINK":
		cat.Sinks, removed = remove(cat.Sinks, s.Name, func(m *catalog.Sink) string { return m.Name })
	case "VIEW":
		cat.Views, removed = remove(cat.Views, s.Name, func(m *catalog.View) string { return m.Name })
	}
	if !removed && !s.IfExists {
		return &Error{Pos: Pos(s.Pos), Msg: fmt.Sprintf("no %s %q to drop", strings.ToLower(string(s.Kind)), s.Name), Kind: ErrUnknown}
	}
	return nil
}

func remove[T any](xs []T, name string, key func(T) string) ([]T, bool) {
	for i, x := range xs {
		if strings.EqualFold(key(x), name) {
			return append(append([]T(nil), xs[:i]...), xs[i+1:]...), true
		}
	}
	return xs, false
}
