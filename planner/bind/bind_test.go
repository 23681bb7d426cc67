package bind_test

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/planner/lower"
	"github.com/tierflow/tierflow/planner/rewrite"
)

var update = flag.Bool("update", false, "rewrite the expected outputs of testdata/*.txt")

// A golden file is a list of cases, each:
//
//	<command>
//	<query, one or more lines>
//	----
//	<expected output>
//	<blank line>
//
// Commands: bind (the bound logical plan), rewrite (after the rewrite rules),
// lower (the optimizer problem: sources, operators, edges), error (the bind
// errors). Run with -update to rewrite the expectations.
type testCase struct {
	// comment is the # lines above the case, kept by -update.
	comment          []string
	cmd, input, want string
}

func parseCases(t testing.TB, src string) []testCase {
	var cases []testCase
	var comment []string
	lines := strings.Split(src, "\n")
	for i := 0; i < len(lines); {
		if strings.TrimSpace(lines[i]) == "" {
			i++
			continue
		}
		if strings.HasPrefix(lines[i], "#") {
			comment = append(comment, lines[i])
			i++
			continue
		}
		c := testCase{comment: comment, cmd: strings.TrimSpace(lines[i])}
		comment = nil
		i++
		var in []string
		for i < len(lines) && lines[i] != "----" {
			in = append(in, lines[i])
			i++
		}
		if i >= len(lines) {
			t.Fatalf("case %q: no ----", c.cmd)
		}
		i++
		var out []string
		for i < len(lines) && lines[i] != "" {
			out = append(out, lines[i])
			i++
		}
		c.input = strings.Join(in, "\n")
		c.want = strings.Join(out, "\n")
		cases = append(cases, c)
	}
	return cases
}

func TestGolden(t *testing.T) {
	cat, err := catalog.LoadFile("testdata/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	inf, err := infra.LoadFile("testdata/infra.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			cases := parseCases(t, string(b))
			var out strings.Builder
			for i, c := range cases {
				got := run(t, c, cat, inf)
				if !*update && got != c.want {
					t.Errorf("%s case %d (%s):\n%s\n--- got\n%s\n--- want\n%s", f, i+1, c.cmd, c.input, got, c.want)
				}
				for _, l := range c.comment {
					fmt.Fprintln(&out, l)
				}
				fmt.Fprintf(&out, "%s\n%s\n----\n%s\n\n", c.cmd, c.input, got)
			}
			if *update {
				if err := os.WriteFile(f, []byte(out.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func run(t *testing.T, c testCase, cat *catalog.Catalog, inf *infra.Infra) string {
	script, err := lang.Parse("q.sql", c.input)
	if err != nil {
		return "parse error: " + err.Error()
	}
	cat = cat.Clone()
	var stmt lang.Statement
	for _, s := range script.Statements {
		if ok, err := bind.Apply(cat, s); ok {
			if err != nil {
				return "ddl error: " + err.Error()
			}
			continue
		}
		stmt = s
	}
	plan, err := bind.New(cat).Bind(stmt)
	if c.cmd == "error" {
		if err == nil {
			return "no error"
		}
		if !errors.Is(err, bind.ErrBind) && !errors.Is(err, bind.ErrUnknown) && !errors.Is(err, bind.ErrNotSupported) {
			return "error of unknown kind: " + err.Error()
		}
		return err.Error()
	}
	if err != nil {
		return "error: " + err.Error()
	}
	switch c.cmd {
	case "bind":
		return strings.TrimRight(logical.Format(plan.Root, schema), "\n")
	case "rewrite":
		rw := rewrite.Apply(plan)
		// Rewrites never change what the query returns.
		if !rw.Root.Schema().Equal(plan.Root.Schema()) {
			return "rewrite changed the result schema: " + rw.Root.Schema().String()
		}
		return strings.TrimRight(logical.Format(rw.Root, schema), "\n")
	case "lower":
		res, err := lower.Lower(rewrite.Apply(plan), cat, inf, lower.Options{})
		if err != nil {
			return "error: " + err.Error()
		}
		return problem(res)
	}
	t.Fatalf("unknown command %q", c.cmd)
	return ""
}

func schema(n logical.Node) []string {
	var cols []string
	for _, f := range n.Schema().Fields() {
		cols = append(cols, f.Name+" "+f.Type.String())
	}
	return []string{"out: " + strings.Join(cols, ", ")}
}

func problem(res *lower.Result) string {
	p := res.Problem
	var b strings.Builder
	for _, s := range p.Sources {
		fmt.Fprintf(&b, "source %s rate %g tier %s\n", s.Name, s.Rate, s.Tier)
	}
	for _, o := range p.Operators {
		var vs []string
		for _, v := range o.Variants {
			var ws []string
			for w, l := range v.LatencyMs {
				ws = append(ws, fmt.Sprintf("%s:%g", w, l))
			}
			sort.Strings(ws)
			vs = append(vs, v.Name+"{"+strings.Join(ws, " ")+"}")
		}
		fmt.Fprintf(&b, "operator %s kind %s accuracy_inputs %v variants %s\n", o.Name, o.Kind, o.AccuracyInputs, strings.Join(vs, " "))
	}
	for _, e := range p.Edges {
		var sz []string
		for _, s := range e.Sizes {
			sz = append(sz, fmt.Sprintf("%s:%.4g", s.FromVariant, s.KB))
		}
		fmt.Fprintf(&b, "edge %s -> %s ratio %.4g kb %.4g %s\n", e.From, e.To, e.Ratio, e.KB, strings.Join(sz, " "))
	}
	acc := "none"
	if p.Objectives.MinAccuracy != nil {
		acc = fmt.Sprint(*p.Objectives.MinAccuracy)
	}
	fmt.Fprintf(&b, "objectives sink %s accuracy %s throughput %.4g", p.Objectives.Sink, acc, p.Objectives.Throughput)
	for _, s := range res.Stages {
		var fused []string
		for _, n := range s.Fused {
			fused = append(fused, strings.SplitN(n.Describe(), " ", 2)[0])
		}
		if len(fused) > 0 {
			fmt.Fprintf(&b, "\nstage %s runs %s", s.Name, strings.Join(fused, ", "))
		}
	}
	return b.String()
}

// The streaming example (examples/streaming) binds: window bounds, an
// aggregate inside round(), a stream-table join.
func TestStreamingExample(t *testing.T) {
	path := filepath.Join("..", "..", "examples", "streaming", "query.sql")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	script, err := lang.Parse(path, string(src))
	if err != nil {
		t.Fatal(err)
	}
	cat := &catalog.Catalog{}
	var plan *logical.Plan
	for _, s := range script.Statements {
		if ok, err := bind.Apply(cat, s); ok {
			if err != nil {
				t.Fatal(err)
			}
			continue
		}
		if plan, err = bind.New(cat).Bind(s); err != nil {
			t.Fatal(err)
		}
	}
	if plan == nil {
		t.Fatal("no query in the example")
	}
	var got []string
	for _, f := range plan.Root.Schema().Fields() {
		got = append(got, f.Name+" "+f.Type.String())
	}
	want := "site utf8, window_start timestamp[us, tz=UTC], window_end timestamp[us, tz=UTC], readings int64, avg_temp float64, max_humidity float64"
	if strings.Join(got, ", ") != want {
		t.Errorf("result schema\n got %s\nwant %s", strings.Join(got, ", "), want)
	}
	var agg *logical.Aggregate
	logical.Walk(plan.Root, func(n logical.Node) bool {
		if a, ok := n.(*logical.Aggregate); ok {
			agg = a
		}
		return agg == nil
	})
	if agg == nil || agg.Window == nil || agg.Window.Kind != logical.Tumble || len(agg.Aggs) != 3 {
		t.Fatalf("want a TUMBLE aggregate with count, avg and max, got %v", agg)
	}
}

// Grouping errors carry their kind: a misplaced aggregate is ErrBind, a
// window bound without a window is ErrUnknown.
func TestGroupingErrorKinds(t *testing.T) {
	cat, err := catalog.LoadFile("testdata/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		q    string
		kind error
	}{
		{"SELECT sensor FROM readings WHERE max(temperature) > 1", bind.ErrBind},
		{"SELECT sum(max(temperature)) FROM readings", bind.ErrBind},
		{"SELECT sensor, temperature, count(*) FROM readings GROUP BY sensor", bind.ErrBind},
		{"SELECT window_start, count(*) FROM readings GROUP BY sensor", bind.ErrUnknown},
	} {
		script, err := lang.Parse("q.sql", c.q)
		if err != nil {
			t.Fatal(err)
		}
		_, err = bind.New(cat).Bind(script.Statements[0])
		if !errors.Is(err, c.kind) {
			t.Errorf("%s: got %v, want %v", c.q, err, c.kind)
		}
	}
}

// A stream's source max delay comes from CREATE STREAM ... WITH as from the
// catalog YAML; a misspelt option is an error at its position.
func TestStreamSourceMaxDelayOption(t *testing.T) {
	apply := func(src string) (*catalog.Catalog, error) {
		script, err := lang.Parse("s.sql", src)
		if err != nil {
			t.Fatal(err)
		}
		cat := &catalog.Catalog{}
		_, err = bind.Apply(cat, script.Statements[0])
		return cat, err
	}
	cat, err := apply("CREATE STREAM s (a INT) FROM NATS 's' FORMAT JSON WITH (source_max_delay_ms = 2.5);")
	if err != nil {
		t.Fatal(err)
	}
	if st := cat.Stream("s"); st == nil || st.SourceMaxDelayMs != 2.5 {
		t.Fatalf("stream %+v", st)
	}
	if _, err := apply("CREATE STREAM s (a INT) FROM NATS 's' WITH (source_max_delai_ms = 1);"); err == nil || !strings.Contains(err.Error(), "s.sql:1:") {
		t.Fatalf("misspelt option: %v", err)
	}
	y := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(y, []byte("streams:\n  - {name: s, source: nats, subject: s, source_max_delay_ms: 7, columns: [{name: a, type: INT}]}\n"), 0o644)
	c, err := catalog.LoadFile(y)
	if err != nil {
		t.Fatal(err)
	}
	if st := c.Stream("s"); st == nil || st.SourceMaxDelayMs != 7 {
		t.Fatalf("YAML stream %+v", st)
	}
}
