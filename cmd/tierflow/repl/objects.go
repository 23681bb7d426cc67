package repl

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
)

// show answers SHOW from the session's state.
func (s *Session) show(st *lang.Show) (table, error) {
	switch st.What {
	case lang.ShowModels:
		t := textTable("", "name", "task", "variants", "inputs", "outputs")
		for _, m := range s.cat.Models {
			var vs []string
			for _, v := range m.Variants {
				vs = append(vs, v.Name)
			}
			t.rows = append(t.rows, []string{m.Name, m.Task, strings.Join(vs, ", "), columnList(m.Inputs), columnList(m.Outputs)})
		}
		return t, nil
	case lang.ShowStreams:
		t := textTable("", "name", "columns", "source", "rate")
		for _, x := range s.cat.Streams {
			t.rows = append(t.rows, []string{x.Name, columnList(x.Columns), streamSource(x), rate(x.Rate)})
		}
		return t, nil
	case lang.ShowTables:
		t := textTable("", "name", "columns", "path", "format")
		for _, x := range s.cat.Tables {
			t.rows = append(t.rows, []string{x.Name, columnList(x.Columns), x.Path, x.Format})
		}
		return t, nil
	case lang.ShowSinks:
		t := textTable("", "name", "kind", "target", "format")
		for _, x := range s.cat.Sinks {
			t.rows = append(t.rows, []string{x.Name, x.Kind, x.Target, x.Format})
		}
		return t, nil
	case lang.ShowFunctions:
		return s.functions(""), nil
	case lang.ShowTiers, lang.ShowWorkers:
		if s.inf == nil {
			return table{}, badf("%s: SHOW %s needs an infrastructure: start the REPL with --infra FILE", bind.Pos(st.Pos), st.What)
		}
		if st.What == lang.ShowTiers {
			t := textTable("", "tier", "locations")
			for _, x := range s.inf.Tiers {
				t.rows = append(t.rows, []string{x.Name, strconv.Itoa(max(x.Locations, 1))})
			}
			return t, nil
		}
		t := textTable("", "name", "type", "tier", "count")
		for _, x := range s.inf.Workers {
			t.rows = append(t.rows, []string{x.Name, x.Type, x.Tier, strconv.Itoa(max(x.Count, 1))})
		}
		return t, nil
	case lang.ShowQueries:
		// Queries run in the foreground; there is never a background one.
		return textTable("", "id", "status", "query"), nil
	}
	return table{}, badf("%s: SHOW %s is not supported in the REPL", bind.Pos(st.Pos), st.What)
}

// functions lists the function registry, optionally filtered by a prefix.
func (s *Session) functions(prefix string) table {
	t := textTable("", "name", "kind", "signatures", "description")
	for _, f := range s.funcs.Functions() {
		if f.Operator != "" || !strings.HasPrefix(strings.ToLower(f.Name), strings.ToLower(prefix)) {
			continue
		}
		var sigs []string
		for _, sig := range f.Signatures {
			sigs = append(sigs, sig.String(f.Name))
		}
		doc, _, _ := strings.Cut(f.Doc, "\n")
		t.rows = append(t.rows, []string{f.Name, f.Kind.String(), strings.Join(sigs, "; "), doc})
	}
	sortRows(t.rows)
	return t
}

// objects is \d: every model, stream, table and sink of the session.
func (s *Session) objects() table {
	t := textTable("", "name", "kind", "details")
	for _, m := range s.cat.Models {
		var vs []string
		for _, v := range m.Variants {
			vs = append(vs, v.Name)
		}
		t.rows = append(t.rows, []string{m.Name, "model", plural(len(m.Variants), "variant") + " (" + strings.Join(vs, ", ") + ")"})
	}
	for _, x := range s.cat.Streams {
		t.rows = append(t.rows, []string{x.Name, "stream", streamSource(x)})
	}
	for _, x := range s.cat.Tables {
		t.rows = append(t.rows, []string{x.Name, "table", strings.TrimSpace(x.Format + " " + quote(x.Path))})
	}
	for _, x := range s.cat.Sinks {
		t.rows = append(t.rows, []string{x.Name, "sink", sinkTarget(x)})
	}
	sortRows(t.rows)
	return t
}

// describe is \d NAME and DESCRIBE NAME.
func (s *Session) describe(name, at string) error {
	if m := s.cat.Model(name); m != nil {
		title := "Model " + m.Name
		if m.Task != "" {
			title += " (task " + m.Task + ")"
		}
		t := textTable(title, "part", "name", "type", "details")
		for _, c := range m.Inputs {
			t.rows = append(t.rows, []string{"input", c.Name, c.Type, ""})
		}
		for _, c := range m.Outputs {
			t.rows = append(t.rows, []string{"output", c.Name, c.Type, ""})
		}
		for _, v := range m.Variants {
			d := quote(v.File)
			if v.Accuracy != 0 {
				d += fmt.Sprintf(" accuracy %g", v.Accuracy)
			}
			t.rows = append(t.rows, []string{"variant", v.Name, "", strings.TrimSpace(d)})
		}
		return s.printTable(t)
	}
	if x := s.cat.Stream(name); x != nil {
		return s.printTable(columnTable("Stream "+x.Name+" ("+streamSource(x)+")", x.Columns))
	}
	if x := s.cat.Table(name); x != nil {
		return s.printTable(columnTable("Table "+x.Name+" ("+strings.TrimSpace(x.Format+" "+quote(x.Path))+")", x.Columns))
	}
	if x := s.cat.Sink(name); x != nil {
		t := textTable("Sink "+x.Name, "kind", "target", "format")
		t.rows = [][]string{{x.Kind, x.Target, x.Format}}
		return s.printTable(t)
	}
	if f, ok := s.funcs.Lookup(name); ok {
		t := s.functions(f.Name)
		kept := t.rows[:0]
		for _, r := range t.rows {
			if strings.EqualFold(r[0], f.Name) {
				kept = append(kept, r)
			}
		}
		t.rows = kept
		return s.printTable(t)
	}
	msg := fmt.Sprintf("%s: no model, stream, table, sink or function named %q", at, name)
	if sug := s.cat.Suggest(name); sug != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", sug)
	}
	return kindError{kind: catalog.ErrUnknown, msg: msg}
}

func columnTable(title string, cols []catalog.Column) table {
	t := textTable(title, "column", "type")
	for _, c := range cols {
		t.rows = append(t.rows, []string{c.Name, c.Type})
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

func streamSource(x *catalog.Stream) string {
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

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

func quote(s string) string {
	if s == "" {
		return ""
	}
	return "'" + s + "'"
}
