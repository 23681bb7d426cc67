package session

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/tierflow/tierflow/internal/cli"
	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/infra"
)

// Listing is the answer of SHOW or DESCRIBE: an optional title over rows of
// text.
type Listing struct {
	Title   string
	Columns []string
	Rows    [][]string
}

func listing(title string, cols ...string) Listing { return Listing{Title: title, Columns: cols} }

func sortRows(rows [][]string) {
	sort.SliceStable(rows, func(i, j int) bool { return rows[i][0] < rows[j][0] })
}

// Show answers SHOW from a catalog, an infrastructure (nil: SHOW TIERS and
// SHOW WORKERS are errors) and a function registry (nil: the built-ins).
// SHOW QUERIES lists nothing: here queries run one at a time in the
// foreground (a cluster answers it from its coordinator instead).
func Show(st *lang.Show, cat *catalog.Catalog, inf *infra.Infra, funcs *expr.Registry) (Listing, error) {
	switch st.What {
	case lang.ShowModels:
		t := listing("", "name", "task", "variants", "inputs", "outputs")
		for _, m := range cat.Models {
			var vs []string
			for _, v := range m.Variants {
				vs = append(vs, v.Name)
			}
			t.Rows = append(t.Rows, []string{m.Name, m.Task, strings.Join(vs, ", "), columnList(m.Inputs), columnList(m.Outputs)})
		}
		return t, nil
	case lang.ShowStreams:
		t := listing("", "name", "columns", "source", "rate")
		for _, x := range cat.Streams {
			t.Rows = append(t.Rows, []string{x.Name, columnList(x.Columns), StreamSource(x), rate(x.Rate)})
		}
		return t, nil
	case lang.ShowTables:
		t := listing("", "name", "columns", "path", "format")
		for _, x := range cat.Tables {
			t.Rows = append(t.Rows, []string{x.Name, columnList(x.Columns), x.Path, x.Format})
		}
		return t, nil
	case lang.ShowSinks:
		t := listing("", "name", "kind", "target", "format")
		for _, x := range cat.Sinks {
			t.Rows = append(t.Rows, []string{x.Name, x.Kind, x.Target, x.Format})
		}
		return t, nil
	case lang.ShowFunctions:
		return Functions(funcs, ""), nil
	case lang.ShowTiers, lang.ShowWorkers:
		if inf == nil {
			return Listing{}, invalidf("%s: SHOW %s needs an infrastructure (--infra FILE)", bind.Pos(st.Pos), st.What)
		}
		if st.What == lang.ShowTiers {
			t := listing("", "tier", "locations")
			for _, x := range inf.Tiers {
				t.Rows = append(t.Rows, []string{x.Name, strconv.Itoa(max(x.Locations, 1))})
			}
			return t, nil
		}
		t := listing("", "name", "type", "tier", "count")
		for _, x := range inf.Workers {
			t.Rows = append(t.Rows, []string{x.Name, x.Type, x.Tier, strconv.Itoa(max(x.Count, 1))})
		}
		return t, nil
	case lang.ShowQueries:
		return listing("", "id", "status", "query"), nil
	}
	return Listing{}, invalidf("%s: SHOW %s is not supported here", bind.Pos(st.Pos), st.What)
}

// Functions lists the registry's functions (not operators, not the
// internal ones the binder calls) whose name starts with prefix, sorted by
// name; nil means the built-ins.
func Functions(funcs *expr.Registry, prefix string) Listing {
	if funcs == nil {
		funcs = expr.Builtins()
	}
	t := listing("", "name", "kind", "signatures", "description")
	for _, f := range funcs.Functions() {
		if !f.Listed() || !strings.HasPrefix(strings.ToLower(f.Name), strings.ToLower(prefix)) {
			continue
		}
		var sigs []string
		for _, sig := range f.Signatures {
			sigs = append(sigs, sig.String(f.Name))
		}
		doc, _, _ := strings.Cut(f.Doc, "\n")
		t.Rows = append(t.Rows, []string{f.Name, f.Kind.String(), strings.Join(sigs, "; "), doc})
	}
	sortRows(t.Rows)
	return t
}

// Objects lists every model, stream, table and sink of the catalog (the
// REPL's \d).
func Objects(cat *catalog.Catalog) Listing {
	t := listing("", "name", "kind", "details")
	for _, m := range cat.Models {
		var vs []string
		for _, v := range m.Variants {
			vs = append(vs, v.Name)
		}
		t.Rows = append(t.Rows, []string{m.Name, "model", cli.Count(len(m.Variants), "variant") + " (" + strings.Join(vs, ", ") + ")"})
	}
	for _, x := range cat.Streams {
		t.Rows = append(t.Rows, []string{x.Name, "stream", StreamSource(x)})
	}
	for _, x := range cat.Tables {
		t.Rows = append(t.Rows, []string{x.Name, "table", strings.TrimSpace(x.Format + " " + quote(x.Path))})
	}
	for _, x := range cat.Sinks {
		t.Rows = append(t.Rows, []string{x.Name, "sink", sinkTarget(x)})
	}
	sortRows(t.Rows)
	return t
}

// Describe answers DESCRIBE name: a model's inputs, outputs and variants, the
// columns and source of a stream or table, a sink's target, or a function's
// signatures. at places the error for a name nothing has (it wraps
// catalog.ErrUnknown).
func Describe(name, at string, cat *catalog.Catalog, funcs *expr.Registry) (Listing, error) {
	if funcs == nil {
		funcs = expr.Builtins()
	}
	if m := cat.Model(name); m != nil {
		title := "Model " + m.Name
		if m.Task != "" {
			title += " (task " + m.Task + ")"
		}
		t := listing(title, "part", "name", "type", "details")
		for _, c := range m.Inputs {
			t.Rows = append(t.Rows, []string{"input", c.Name, c.Type, ""})
		}
		for _, c := range m.Outputs {
			t.Rows = append(t.Rows, []string{"output", c.Name, c.Type, ""})
		}
		for _, v := range m.Variants {
			d := quote(v.File)
			if v.Accuracy != 0 {
				d += fmt.Sprintf(" accuracy %g", v.Accuracy)
			}
			t.Rows = append(t.Rows, []string{"variant", v.Name, "", strings.TrimSpace(d)})
		}
		return t, nil
	}
	if x := cat.Stream(name); x != nil {
		return columnListing("Stream "+x.Name+" ("+StreamSource(x)+")", x.Columns), nil
	}
	if x := cat.Table(name); x != nil {
		return columnListing("Table "+x.Name+" ("+strings.TrimSpace(x.Format+" "+quote(x.Path))+")", x.Columns), nil
	}
	if v := cat.View(name); v != nil {
		// Its columns are those of its query, bound against the catalog.
		st := &lang.Query{Select: &lang.Select{Items: []*lang.SelectItem{{Star: true}},
			From: []*lang.FromItem{{Table: &lang.TableRef{Name: v.Name}}}}}
		plan, err := bind.New(cat).Bind(st)
		if err != nil {
			return Listing{}, err
		}
		t := listing("View "+v.Name, "column", "type")
		for _, f := range plan.Root.Schema().Fields() {
			t.Rows = append(t.Rows, []string{f.Name, expr.TypeName(f.Type)})
		}
		return t, nil
	}
	if x := cat.Sink(name); x != nil {
		t := listing("Sink "+x.Name, "kind", "target", "format")
		t.Rows = [][]string{{x.Kind, x.Target, x.Format}}
		return t, nil
	}
	if f, ok := funcs.Lookup(name); ok {
		t := Functions(funcs, f.Name)
		kept := t.Rows[:0]
		for _, r := range t.Rows {
			if strings.EqualFold(r[0], f.Name) {
				kept = append(kept, r)
			}
		}
		t.Rows = kept
		return t, nil
	}
	msg := fmt.Sprintf("%s: no model, stream, table, sink or function named %q", at, name)
	if sug := cat.Suggest(name); sug != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", sug)
	}
	return Listing{}, unknown{msg}
}

// unknown is DESCRIBE's error for a name nothing has: catalog.ErrUnknown
// (bad input) with the message as written.
type unknown struct{ msg string }

func (e unknown) Error() string   { return e.msg }
func (e unknown) Unwrap() []error { return []error{catalog.ErrUnknown, ErrInvalid} }

// WriteText prints l as the one text table (sinks.TextTable, as run and
// the REPL print results), the title first: what a script prints when its
// caller chose no other rendering.
func (l Listing) WriteText(w io.Writer) error {
	if l.Title != "" {
		if _, err := fmt.Fprintln(w, l.Title); err != nil {
			return err
		}
	}
	t := &sinks.TextTable{W: w, Names: l.Columns}
	if len(l.Rows) > 0 {
		if err := t.Rows(l.Rows); err != nil {
			return err
		}
	}
	return t.End(int64(len(l.Rows)))
}

func columnListing(title string, cols []catalog.Column) Listing {
	t := listing(title, "column", "type")
	for _, c := range cols {
		t.Rows = append(t.Rows, []string{c.Name, c.Type})
	}
	return t
}

func columnList(cs []catalog.Column) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.Name + " " + c.Type
	}
	return strings.Join(parts, ", ")
}

// StreamSource is how a stream's source reads in listings: kind, subject or
// path, format, tier and rate.
func StreamSource(x *catalog.Stream) string {
	parts := []string{x.Source, quote(x.Subject), x.Format}
	if x.Tier != "" {
		parts = append(parts, "at tier "+x.Tier)
	}
	if x.Rate != 0 {
		parts = append(parts, rate(x.Rate))
	}
	return strings.Join(strings.Fields(strings.Join(parts, " ")), " ")
}

func sinkTarget(x *catalog.Sink) string {
	return strings.Join(strings.Fields(x.Kind+" "+quote(x.Target)+" "+x.Format), " ")
}

func rate(r float64) string {
	if r == 0 {
		return ""
	}
	return strconv.FormatFloat(r, 'g', -1, 64) + "/s"
}

func quote(s string) string {
	if s == "" {
		return ""
	}
	return "'" + s + "'"
}
