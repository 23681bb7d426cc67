package lang

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// exampleFiles are every query under examples/, which must all parse.
func exampleFiles(t testing.TB) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir("../examples", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && filepath.Ext(path) == ".sql" {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no example queries found")
	}
	return files
}

func TestExamplesParse(t *testing.T) {
	for _, f := range exampleFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(f, string(b)); err != nil {
			var pe *Error
			if errors.As(err, &pe) {
				t.Errorf("%s", pe.Pretty())
			} else {
				t.Errorf("%s: %v", f, err)
			}
		}
	}
}

func TestParseShape(t *testing.T) {
	s, err := Parse("q.sql", `SELECT a + b * 2 AS x FROM t WHERE NOT a = 1 OR b IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	q := s.Statements[0].(*Query)
	it := q.Select.Items[0]
	if it.Alias != "x" {
		t.Errorf("alias = %q", it.Alias)
	}
	add, ok := it.Expr.(*BinaryExpr)
	if !ok || add.Op != OpAdd {
		t.Fatalf("item = %#v, want a + (b * 2)", it.Expr)
	}
	if mul, ok := add.Right.(*BinaryExpr); !ok || mul.Op != OpMul {
		t.Errorf("right of + = %#v, want b * 2", add.Right)
	}
	or, ok := q.Select.Where.(*BinaryExpr)
	if !ok || or.Op != OpOr {
		t.Fatalf("where = %#v, want OR at the top", q.Select.Where)
	}
	if not, ok := or.Left.(*UnaryExpr); !ok || not.Op != OpNot {
		t.Errorf("left of OR = %#v, want NOT (a = 1)", or.Left)
	} else if eq, ok := not.X.(*BinaryExpr); !ok || eq.Op != OpEq {
		t.Errorf("operand of NOT = %#v, want a = 1", not.X)
	}
	if isn, ok := or.Right.(*IsNullExpr); !ok || !isn.Not {
		t.Errorf("right of OR = %#v, want b IS NOT NULL", or.Right)
	}
	if p := add.Position(); p.Line != 1 || p.Column != 8 || p.Filename != "q.sql" {
		t.Errorf("position of a + ... = %v, want q.sql:1:8", p)
	}
}

func TestParseErrorKind(t *testing.T) {
	_, err := Parse("q.sql", "SELECT a FORM t")
	if !errors.Is(err, ErrSyntax) {
		t.Fatalf("err = %v, want ErrSyntax", err)
	}
	var pe *Error
	if !errors.As(err, &pe) || pe.Pos.Line != 1 || pe.Pos.Column != 10 {
		t.Fatalf("err = %#v, want a *Error at 1:10", err)
	}
}

// The TPC-H constructs parse and print back to text that parses to the
// same print: DECIMAL(p, s) and NUMERIC, calendar intervals, SUBSTRING
// ... FROM ... FOR, a FROM item's column list, CREATE VIEW and DROP VIEW.
func TestParseSQLForAnalysts(t *testing.T) {
	for _, src := range []string{
		`CREATE TABLE t (a DECIMAL(15, 2), b NUMERIC(4), c DECIMAL, d DATE) FROM FILE 't.parquet' FORMAT PARQUET`,
		`SELECT CAST(x AS DECIMAL(5, 1)), d + INTERVAL '3' MONTH, d - INTERVAL 1 YEAR, INTERVAL '1 year 2 months 3 days' FROM t`,
		`SELECT SUBSTRING(c_phone FROM 1 FOR 2), SUBSTRING(s FROM 3), substring(s, 1, 2) FROM t`,
		`SELECT c_count, count(*) FROM (SELECT c_custkey, count(o_orderkey) FROM customer GROUP BY c_custkey) AS c_orders (c_custkey, c_count) GROUP BY c_count`,
		`CREATE VIEW revenue0 (supplier_no, total_revenue) AS SELECT l_suppkey, sum(l_extendedprice) FROM lineitem GROUP BY l_suppkey`,
		`CREATE OR REPLACE VIEW IF NOT EXISTS v AS SELECT 1`,
		`DROP VIEW IF EXISTS revenue0`,
	} {
		s, err := Parse("q.sql", src)
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		once := Print(s)
		s2, err := Parse("q.sql", once)
		if err != nil {
			t.Errorf("%s printed as\n%s\nwhich does not parse: %v", src, once, err)
			continue
		}
		if twice := Print(s2); twice != once {
			t.Errorf("print is not stable:\n%s\n---\n%s", once, twice)
		}
	}
	s, _ := Parse("q.sql", `SELECT SUBSTRING(p FROM 1 FOR 2) FROM t`)
	f := s.Statements[0].(*Query).Select.Items[0].Expr.(*FuncCall)
	if f.Name != "substring" || len(f.Args) != 3 {
		t.Fatalf("SUBSTRING ... FROM ... FOR is %#v", f)
	}
	iv := &IntervalLit{Value: "1 year 2 days"}
	if m, sec, err := iv.Parts(); m != 12 || sec != 2*86400 || err != nil {
		t.Fatalf("INTERVAL '1 year 2 days': %d months %v s %v", m, sec, err)
	}
	if _, err := (&IntervalLit{Value: "3", Unit: Month}).Seconds(); !errors.Is(err, ErrCalendarInterval) {
		t.Fatalf("a month has a fixed length: %v", err)
	}
	for _, bad := range []string{`SELECT CAST(x AS DECIMAL(15,)) FROM t`, `CREATE VIEW v`, `SELECT SUBSTRING(s FROM) FROM t`} {
		if _, err := Parse("q.sql", bad); !errors.Is(err, ErrSyntax) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
