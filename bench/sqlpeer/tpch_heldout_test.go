package main

import (
	"context"
	"testing"
	"time"

	"github.com/tierflow/tierflow/bench/tpch"
)

// tpchVariants are queries over the TPC-H tables that are not the 22
// standard texts: the constructs those texts use, in other combinations and
// with other parameters (as an analyst writes them), so that the 22 passing
// is not a property of their exact wording. Each ORDER BY fixes the whole
// order of its answer.
var tpchVariants = []tpch.Query{
	// Calendar arithmetic on DATE columns and constants.
	{Name: "date-interval-day", Text: `SELECT l_returnflag, count(*) FROM lineitem WHERE l_shipdate <= date '1998-12-01' - interval '60' day GROUP BY l_returnflag ORDER BY l_returnflag`},
	{Name: "date-interval-col", Text: `SELECT count(*) FROM lineitem WHERE l_receiptdate > l_commitdate + interval '7' day AND l_shipdate < l_commitdate - interval '1' month`},
	{Name: "date-interval-year-month", Text: `SELECT o_orderpriority, count(*) FROM orders WHERE o_orderdate >= date '1996-02-29' - interval '1' year AND o_orderdate < date '1996-01-31' + interval '1' month GROUP BY o_orderpriority ORDER BY o_orderpriority`},
	{Name: "date-plus-interval-out", Text: `SELECT o_orderkey, o_orderdate + interval '1' month, o_orderdate - interval '1' year FROM orders WHERE o_orderdate >= date '1995-01-29' AND o_orderdate <= date '1995-01-31' ORDER BY o_orderkey LIMIT 10`},
	{Name: "extract-date", Text: `SELECT extract(year FROM o_orderdate) AS y, extract(month FROM o_orderdate) AS m, count(*) FROM orders WHERE o_orderdate < date '1993-01-01' GROUP BY extract(year FROM o_orderdate), extract(month FROM o_orderdate) ORDER BY y, m`},
	{Name: "date-min-max", Text: `SELECT l_linestatus, min(l_shipdate), max(l_receiptdate) FROM lineitem GROUP BY l_linestatus ORDER BY l_linestatus`},
	{Name: "date-string-compare", Text: `SELECT count(*) FROM orders WHERE o_orderdate BETWEEN '1995-03-01' AND '1995-03-31'`},

	// Exact DECIMAL arithmetic and its mixes with integers and doubles.
	{Name: "decimal-sums", Text: `SELECT l_linestatus, sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)), sum(l_quantity * l_discount), avg(l_extendedprice) FROM lineitem GROUP BY l_linestatus ORDER BY l_linestatus`},
	{Name: "decimal-ratio", Text: `SELECT 100.00 * sum(CASE WHEN l_discount >= 0.05 THEN l_extendedprice ELSE 0 END) / sum(l_extendedprice) FROM lineitem WHERE l_quantity < 10`},
	{Name: "decimal-between-literals", Text: `SELECT count(*), sum(l_extendedprice) FROM lineitem WHERE l_discount BETWEEN 0.04 - 0.01 AND 0.04 + 0.01 AND l_quantity < 25.5`},
	{Name: "decimal-double-mix", Text: `SELECT count(*) FROM lineitem WHERE l_extendedprice / l_quantity > 1500 AND l_tax * 2 >= 0.1 AND l_discount::DOUBLE < 0.07`},
	{Name: "decimal-casts", Text: `SELECT p_partkey, CAST(p_retailprice AS INTEGER), CAST(p_retailprice AS DECIMAL(10,1)), round(p_retailprice * 1.1, 2), abs(-p_retailprice) FROM part ORDER BY p_partkey LIMIT 15`},
	{Name: "decimal-min-max-order", Text: `SELECT c_mktsegment, min(c_acctbal), max(c_acctbal), count(*) FROM customer WHERE c_acctbal > -500 GROUP BY c_mktsegment ORDER BY max(c_acctbal) DESC, c_mktsegment`},
	{Name: "decimal-compare-int", Text: `SELECT count(*) FROM partsupp WHERE ps_supplycost > 500 AND ps_availqty * ps_supplycost < 1000000`},

	// Correlated subqueries of every kind.
	{Name: "corr-scalar-select", Text: `SELECT o_orderkey, (SELECT count(*) FROM lineitem WHERE l_orderkey = o_orderkey AND l_quantity > 30) AS big FROM orders WHERE o_orderkey < 200 ORDER BY o_orderkey`},
	{Name: "corr-scalar-noneq", Text: `SELECT p_partkey, (SELECT min(ps_supplycost) FROM partsupp WHERE ps_partkey = p_partkey AND ps_availqty > p_size * 100) FROM part WHERE p_partkey < 60 ORDER BY p_partkey`},
	{Name: "corr-exists-neq", Text: `SELECT count(*) FROM orders WHERE EXISTS (SELECT * FROM lineitem l1 WHERE l1.l_orderkey = o_orderkey AND EXISTS (SELECT * FROM lineitem l2 WHERE l2.l_orderkey = l1.l_orderkey AND l2.l_linenumber <> l1.l_linenumber AND l2.l_suppkey > l1.l_suppkey + 50))`},
	{Name: "corr-exists-decimal", Text: `SELECT count(*) FROM lineitem l1 WHERE EXISTS (SELECT * FROM lineitem l2 WHERE l2.l_orderkey = l1.l_orderkey AND l2.l_linenumber <> l1.l_linenumber AND l2.l_quantity > l1.l_quantity)`},
	{Name: "corr-not-exists-lt", Text: `SELECT s_suppkey FROM supplier WHERE NOT EXISTS (SELECT * FROM partsupp WHERE ps_suppkey = s_suppkey AND ps_availqty < 100) ORDER BY s_suppkey LIMIT 20`},
	{Name: "corr-compare-avg", Text: `SELECT c_custkey, c_acctbal FROM customer c1 WHERE c_acctbal > (SELECT avg(c_acctbal) * 1.8 FROM customer c2 WHERE c2.c_nationkey = c1.c_nationkey) ORDER BY c_custkey`},
	{Name: "corr-in", Text: `SELECT count(*) FROM partsupp WHERE ps_suppkey IN (SELECT s_suppkey FROM supplier WHERE s_nationkey = ps_partkey % 25)`},
	{Name: "corr-not-in", Text: `SELECT count(*) FROM orders WHERE o_custkey NOT IN (SELECT c_custkey FROM customer WHERE c_acctbal < 0 AND c_nationkey <> o_orderkey % 25)`},
	{Name: "corr-greater", Text: `SELECT count(*) FROM lineitem l1 WHERE l_quantity > (SELECT avg(l_quantity) FROM lineitem l2 WHERE l2.l_partkey = l1.l_partkey AND l2.l_shipdate < l1.l_shipdate)`},
	{Name: "corr-two-outer", Text: `SELECT n_name, count(*) FROM customer, nation WHERE c_nationkey = n_nationkey AND EXISTS (SELECT * FROM orders WHERE o_custkey = c_custkey AND o_totalprice > c_acctbal * 20 AND o_orderstatus = 'F') GROUP BY n_name ORDER BY n_name`},

	// Views, CTEs and derived tables with column lists.
	{Name: "view-column-list", Text: `CREATE VIEW rev (supplier_no, total) AS SELECT l_suppkey, sum(l_extendedprice * (1 - l_discount)) FROM lineitem WHERE l_shipdate >= date '1997-01-01' AND l_shipdate < date '1997-01-01' + interval '6' month GROUP BY l_suppkey;
SELECT s_name, total FROM supplier, rev WHERE s_suppkey = supplier_no AND total > (SELECT avg(total) * 1.3 FROM rev) ORDER BY total DESC, s_name;
DROP VIEW rev;`},
	{Name: "view-over-view", Text: `CREATE VIEW big AS SELECT o_orderkey, o_custkey, o_totalprice FROM orders WHERE o_totalprice > 300000;
CREATE VIEW bigcust (k, n) AS SELECT o_custkey, count(*) FROM big GROUP BY o_custkey;
SELECT n, count(*) FROM bigcust GROUP BY n ORDER BY n;`},
	{Name: "cte-column-list", Text: `WITH t (nation, custs) AS (SELECT c_nationkey, count(*) FROM customer GROUP BY c_nationkey) SELECT n_name, custs FROM t, nation WHERE nation = n_nationkey AND custs > 50 ORDER BY custs DESC, n_name`},
	{Name: "derived-column-list", Text: `SELECT cnt, count(*) AS custdist FROM (SELECT c_custkey, count(o_orderkey) FROM customer LEFT OUTER JOIN orders ON c_custkey = o_custkey AND o_comment NOT LIKE '%unusual%deposits%' GROUP BY c_custkey) AS co (k, cnt) GROUP BY cnt ORDER BY custdist DESC, cnt DESC`},

	// Strings.
	{Name: "substring-from-for", Text: `SELECT substring(c_phone FROM 1 FOR 2) AS code, count(*), sum(c_acctbal) FROM customer WHERE substring(c_phone FROM 1 FOR 2) IN ('10', '20', '30', '11') GROUP BY substring(c_phone FROM 1 FOR 2) ORDER BY code`},
	{Name: "substring-from", Text: `SELECT p_partkey, substring(p_type FROM 7), substring(p_name, 3, 4) FROM part ORDER BY p_partkey LIMIT 10`},
	{Name: "like-patterns", Text: `SELECT p_brand, count(*) FROM part WHERE p_type NOT LIKE 'LARGE%' AND p_name LIKE '%g_een%' AND p_container LIKE '%BOX' GROUP BY p_brand ORDER BY p_brand`},

	// Joins the standard texts write in other shapes.
	{Name: "comma-join-or", Text: `SELECT count(*), sum(l_extendedprice) FROM lineitem, part WHERE (p_partkey = l_partkey AND p_brand = 'Brand#34' AND l_quantity BETWEEN 5 AND 15) OR (p_partkey = l_partkey AND p_size < 3 AND l_shipmode = 'AIR')`},
	{Name: "explicit-join-chain", Text: `SELECT r_name, count(DISTINCT o_custkey) FROM region JOIN nation ON r_regionkey = n_regionkey JOIN customer ON c_nationkey = n_nationkey JOIN orders ON o_custkey = c_custkey WHERE o_orderdate >= date '1997-01-01' GROUP BY r_name ORDER BY r_name`},
	{Name: "left-join-both-sides-on", Text: `SELECT c_mktsegment, count(o_orderkey), sum(o_totalprice) FROM customer LEFT JOIN orders ON c_custkey = o_custkey AND o_orderpriority = '1-URGENT' AND o_totalprice > 200000 AND c_acctbal > 0 WHERE c_nationkey < 5 GROUP BY c_mktsegment ORDER BY c_mktsegment`},
	{Name: "right-join-both-sides-on", Text: `SELECT n_name, count(s_suppkey), max(s_acctbal) FROM supplier RIGHT JOIN nation ON s_nationkey = n_nationkey AND s_acctbal > 5000 AND n_regionkey < 3 GROUP BY n_name ORDER BY n_name`},
	{Name: "left-join-on-right-only", Text: `SELECT n_name, r_name FROM nation LEFT JOIN region ON n_regionkey = r_regionkey AND r_name = 'ASIA' ORDER BY n_name`},
	{Name: "self-join-nation", Text: `SELECT n1.n_name, n2.n_name, count(*) FROM supplier, customer, nation n1, nation n2 WHERE s_nationkey = n1.n_nationkey AND c_nationkey = n2.n_nationkey AND n1.n_regionkey = n2.n_regionkey AND s_suppkey < 5 AND n1.n_nationkey <> n2.n_nationkey GROUP BY n1.n_name, n2.n_name ORDER BY n1.n_name, n2.n_name`},
	{Name: "window-rank-decimal", Text: `SELECT n_name, s_name, rk FROM (SELECT n_name, s_name, rank() OVER (PARTITION BY n_name ORDER BY s_acctbal DESC, s_name) AS rk FROM supplier, nation WHERE s_nationkey = n_nationkey) AS x WHERE rk <= 2 ORDER BY n_name, rk`},
	{Name: "union-all", Text: `SELECT 'c' AS k, count(*) AS n FROM customer WHERE c_acctbal < 0 UNION ALL SELECT 's', count(*) FROM supplier WHERE s_acctbal < 0 ORDER BY k`},
	{Name: "date-trunc-month", Text: `SELECT date_trunc('month', o_orderdate) AS m, count(*) FROM orders WHERE o_orderdate < date '1992-06-01' GROUP BY date_trunc('month', o_orderdate) ORDER BY m`},
	{Name: "date-in-list", Text: `SELECT count(*) FROM orders WHERE o_orderdate IN (date '1995-01-01', date '1996-02-29', date '1997-12-31')`},
	{Name: "case-date-decimal", Text: `SELECT CASE WHEN o_orderdate < date '1995-01-01' THEN 'old' ELSE 'new' END AS age, sum(CASE WHEN o_orderpriority IN ('1-URGENT', '2-HIGH') THEN o_totalprice ELSE 0.00 END) FROM orders GROUP BY CASE WHEN o_orderdate < date '1995-01-01' THEN 'old' ELSE 'new' END ORDER BY age`},
	{Name: "scalar-in-select", Text: `SELECT c_mktsegment, count(*), count(*) * 1.0 / (SELECT count(*) FROM customer) FROM customer GROUP BY c_mktsegment ORDER BY c_mktsegment`},
	{Name: "corr-in-having", Text: `SELECT o_custkey, count(*) FROM orders o1 GROUP BY o_custkey HAVING count(*) > (SELECT count(*) FROM orders o2 WHERE o2.o_custkey = o1.o_custkey AND o2.o_orderstatus = 'F') + 10 ORDER BY o_custkey`},
	{Name: "corr-scalar-date", Text: `SELECT o_orderkey, (SELECT max(l_shipdate) FROM lineitem WHERE l_orderkey = o_orderkey) - interval '1' month FROM orders WHERE o_orderkey < 100 ORDER BY o_orderkey`},
	{Name: "corr-exists-or", Text: `SELECT count(*) FROM customer WHERE c_acctbal > 9000 OR EXISTS (SELECT * FROM orders WHERE o_custkey = c_custkey AND o_totalprice > 400000)`},
	{Name: "count-distinct-decimal", Text: `SELECT l_returnflag, count(DISTINCT l_quantity), count(DISTINCT l_shipdate), sum(DISTINCT l_tax) FROM lineitem GROUP BY l_returnflag ORDER BY l_returnflag`},
	{Name: "decimal-group-key", Text: `SELECT l_discount, count(*), sum(l_quantity) FROM lineitem WHERE l_tax = 0.08 GROUP BY l_discount ORDER BY l_discount`},
	{Name: "decimal-join-key", Text: `SELECT count(*) FROM part, partsupp WHERE p_partkey = ps_partkey AND p_retailprice = ps_supplycost + 900.00`},
	{Name: "having-subquery", Text: `SELECT ps_partkey, sum(ps_supplycost * ps_availqty) AS v FROM partsupp GROUP BY ps_partkey HAVING sum(ps_supplycost * ps_availqty) > (SELECT sum(ps_supplycost * ps_availqty) * 0.001 FROM partsupp) ORDER BY v DESC, ps_partkey`},
}

// duckdbSpelling is the query DuckDB runs for a variant it answers wrongly
// as written: the same question in another form.
var duckdbSpelling = map[string]string{
	// DuckDB 1.5.6 counts 3,322 lines of 44,223 (SF 0.01, seed 1) for the
	// EXISTS correlated by =, <> and > on a DECIMAL; the join it means is
	// right.
	"corr-exists-decimal": `SELECT count(*) FROM (SELECT DISTINCT l1.l_orderkey, l1.l_linenumber FROM lineitem l1, lineitem l2 WHERE l2.l_orderkey = l1.l_orderkey AND l2.l_linenumber <> l1.l_linenumber AND l2.l_quantity > l1.l_quantity)`,
}

// TestTPCHVariantsMatchDuckDB: queries over the TPC-H tables other than
// the standard texts give DuckDB's answers.
func TestTPCHVariantsMatchDuckDB(t *testing.T) {
	duck, tf := loadTPCH(t, 0.01, 3, tpch.SpecTypes)
	ctx := context.Background()
	for _, q := range tpchVariants {
		dq := q
		if text, ok := duckdbSpelling[q.Name]; ok {
			dq.Text = text
		}
		want, err := duck.Run(ctx, dq)
		if err != nil {
			t.Fatalf("%s: DuckDB: %v", q.Name, err)
		}
		if len(want) == 0 {
			t.Errorf("%s: no rows: the case tests nothing", q.Name)
		}
		qctx, cancel := context.WithTimeout(ctx, time.Minute)
		got, err := tf.Run(qctx, q)
		cancel()
		if err != nil {
			t.Errorf("%s: tierflow: %v", q.Name, err)
			continue
		}
		if d := tpch.Compare(got, want); d != "" {
			t.Errorf("%s: %s", q.Name, d)
		}
	}
}
