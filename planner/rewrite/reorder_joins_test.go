package rewrite_test

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/cardinality"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/planner/rewrite"
)

var update = flag.Bool("update", false, "rewrite the expected outputs of testdata/*.txt")

// tpchTables declares TPC-H's tables (DOUBLE for DECIMAL, TIMESTAMP for
// DATE), and a stream of lineitems for the stream-table cases.
const tpchTables = `
CREATE TABLE region (r_regionkey BIGINT, r_name VARCHAR, r_comment VARCHAR) FROM FILE 'region.parquet' FORMAT PARQUET;
CREATE TABLE nation (n_nationkey BIGINT, n_name VARCHAR, n_regionkey BIGINT, n_comment VARCHAR) FROM FILE 'nation.parquet' FORMAT PARQUET;
CREATE TABLE supplier (s_suppkey BIGINT, s_name VARCHAR, s_address VARCHAR, s_nationkey BIGINT, s_phone VARCHAR, s_acctbal DOUBLE, s_comment VARCHAR) FROM FILE 'supplier.parquet' FORMAT PARQUET;
CREATE TABLE customer (c_custkey BIGINT, c_name VARCHAR, c_address VARCHAR, c_nationkey BIGINT, c_phone VARCHAR, c_acctbal DOUBLE, c_mktsegment VARCHAR, c_comment VARCHAR) FROM FILE 'customer.parquet' FORMAT PARQUET;
CREATE TABLE part (p_partkey BIGINT, p_name VARCHAR, p_mfgr VARCHAR, p_brand VARCHAR, p_type VARCHAR, p_size INT, p_container VARCHAR, p_retailprice DOUBLE, p_comment VARCHAR) FROM FILE 'part.parquet' FORMAT PARQUET;
CREATE TABLE partsupp (ps_partkey BIGINT, ps_suppkey BIGINT, ps_availqty INT, ps_supplycost DOUBLE, ps_comment VARCHAR) FROM FILE 'partsupp.parquet' FORMAT PARQUET;
CREATE TABLE orders (o_orderkey BIGINT, o_custkey BIGINT, o_orderstatus VARCHAR, o_totalprice DOUBLE, o_orderdate TIMESTAMP, o_orderpriority VARCHAR, o_clerk VARCHAR, o_shippriority INT, o_comment VARCHAR) FROM FILE 'orders.parquet' FORMAT PARQUET;
CREATE TABLE lineitem (l_orderkey BIGINT, l_partkey BIGINT, l_suppkey BIGINT, l_linenumber INT, l_quantity DOUBLE, l_extendedprice DOUBLE, l_discount DOUBLE, l_tax DOUBLE, l_returnflag VARCHAR, l_linestatus VARCHAR, l_shipdate TIMESTAMP, l_commitdate TIMESTAMP, l_receiptdate TIMESTAMP, l_shipinstruct VARCHAR, l_shipmode VARCHAR, l_comment VARCHAR) FROM FILE 'lineitem.parquet' FORMAT PARQUET;
CREATE STREAM shipments (l_orderkey BIGINT, l_partkey BIGINT, l_suppkey BIGINT, l_quantity DOUBLE, l_shipdate TIMESTAMP) FROM FILE 'shipments.parquet' FORMAT PARQUET;
`

// injected is statistics given by a case: table -> stats.
type injected map[string]*catalog.TableStats

func (in injected) stats(t *catalog.Table, _ []string) *catalog.TableStats { return in[t.Name] }

// parseStats reads one "stats TABLE rows=N col=DISTINCT[:LO..HI] ..." line.
func parseStats(t *testing.T, line string, in injected) {
	f := strings.Fields(line)
	if len(f) < 3 {
		t.Fatalf("stats line %q: want stats TABLE rows=N ...", line)
	}
	st := &catalog.TableStats{Columns: map[string]*catalog.ColumnStats{}}
	for _, kv := range f[2:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			t.Fatalf("stats line %q: %q is not key=value", line, kv)
		}
		if k == "rows" {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("stats line %q: %v", line, err)
			}
			st.Rows = n
			continue
		}
		cs := &catalog.ColumnStats{}
		d, rng, hasRange := strings.Cut(v, ":")
		n, err := strconv.ParseFloat(d, 64)
		if err != nil {
			t.Fatalf("stats line %q: %v", line, err)
		}
		cs.Distinct = n
		if hasRange {
			lo, hi, _ := strings.Cut(rng, "..")
			cs.Min, cs.Max, cs.HasRange = value(t, lo), value(t, hi), true
		}
		st.Columns[k] = cs
	}
	in[f[1]] = st
}

func value(t *testing.T, s string) any {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f
	}
	if tm, err := time.Parse("2006-01-02", s); err == nil {
		return tm
	}
	return s
}

// TestReorderJoinsGolden runs testdata/reorder_joins.txt: each case is
//
//	reorder
//	stats TABLE rows=N COLUMN=DISTINCT[:MIN..MAX] ...   (zero or more)
//	<query>
//	----
//	<the plan after the rewrites, with estimated rows>
//
// over TPC-H's tables, with the statistics the case injects (a table
// without a stats line has none: the defaults). Run with -update to
// rewrite the expectations.
func TestReorderJoinsGolden(t *testing.T) {
	const path = "testdata/reorder_joins.txt"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for i, c := range parseCases(t, string(b)) {
		if c.cmd != "reorder" {
			t.Fatalf("case %d: unknown command %q", i+1, c.cmd)
		}
		got := reorderCase(t, c.input)
		if !*update && got != c.want {
			t.Errorf("case %d:\n%s\n--- got\n%s\n--- want\n%s", i+1, c.input, got, c.want)
		}
		for _, l := range c.comment {
			fmt.Fprintln(&out, l)
		}
		fmt.Fprintf(&out, "%s\n%s\n----\n%s\n\n", c.cmd, c.input, got)
	}
	if *update {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func reorderCase(t *testing.T, input string) string {
	in := injected{}
	var query []string
	for _, l := range strings.Split(input, "\n") {
		if strings.HasPrefix(l, "stats ") {
			parseStats(t, l, in)
			continue
		}
		query = append(query, l)
	}
	plan, err := bindQuery(strings.Join(query, "\n"))
	if err != nil {
		return "error: " + err.Error()
	}
	rw := rewrite.ApplyWith(plan, rewrite.Options{Stats: in.stats})
	if !rw.Root.Schema().Equal(plan.Root.Schema()) {
		return "the rewrite changed the result schema: " + rw.Root.Schema().String()
	}
	est := cardinality.New(in.stats)
	return strings.TrimRight(logical.Format(rw.Root, func(n logical.Node) []string {
		return []string{fmt.Sprintf("rows≈%.0f", est.Rows(n))}
	}), "\n")
}

func bindQuery(q string) (*logical.Plan, error) {
	script, err := lang.Parse("q.sql", tpchTables+q)
	if err != nil {
		return nil, err
	}
	cat := &catalog.Catalog{}
	var stmt lang.Statement
	for _, s := range script.Statements {
		if ok, err := bind.Apply(cat, s); ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		stmt = s
	}
	return bind.New(cat).Bind(stmt)
}

// The golden file's format (as planner/bind's).
type testCase struct {
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

// A semi or anti join builds its smaller side: the left (the rows it
// outputs) when the statistics say it is the smaller, else the right; a
// null-aware one (NOT IN) always the right.
func TestBuildSideFollowsTheSizes(t *testing.T) {
	for _, tc := range []struct {
		orders, lineitem float64
		kind             logical.JoinKind
		nullAware        bool
		want             bool
	}{
		{57000, 6e6, logical.SemiJoin, false, true},
		{1.5e6, 1000, logical.SemiJoin, false, false},
		{57000, 6e6, logical.AntiJoin, false, true},
		{57000, 6e6, logical.AntiJoin, true, false},
	} {
		plan, err := bindQuery("SELECT o_orderkey FROM orders JOIN lineitem ON o_orderkey = l_orderkey")
		if err != nil {
			t.Fatal(err)
		}
		plan.Root = logical.Transform(plan.Root, func(n logical.Node) logical.Node {
			if j, ok := n.(*logical.Join); ok {
				c := *j
				c.Kind, c.NullAware = tc.kind, tc.nullAware
				return c.WithChildren(j.Left, j.Right)
			}
			return n
		})
		in := injected{"orders": {Rows: tc.orders}, "lineitem": {Rows: tc.lineitem}}
		rw := rewrite.ApplyWith(plan, rewrite.Options{Stats: in.stats})
		var got *logical.Join
		logical.Walk(rw.Root, func(n logical.Node) bool {
			if j, ok := n.(*logical.Join); ok {
				got = j
			}
			return true
		})
		if got == nil || got.BuildLeft != tc.want {
			t.Fatalf("%s join, null-aware %v, orders %v, lineitem %v: %s, want build left %v", tc.kind, tc.nullAware, tc.orders, tc.lineitem, logical.Format(rw.Root, nil), tc.want)
		}
	}
}
