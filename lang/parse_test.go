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
