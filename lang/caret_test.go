package lang_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/lang"
)

func TestCaret(t *testing.T) {
	long := "SELECT " + strings.Repeat("1 + ", 50000) + "1 FORM t WHERE " + strings.Repeat("x AND ", 50000) + "y"
	col := strings.Index(long, "FORM") + 1
	cases := []struct {
		name, line string
		col        int
		want       string
	}{
		{"short line", "SELECT a FORM t", 10, "SELECT a FORM t\n         ^"},
		{"tabs kept", "\tSELECT a FORM t", 11, "\tSELECT a FORM t\n\t         ^"},
		{"characters, not bytes", "SELECT 'é' FORM t", 12, "SELECT 'é' FORM t\n           ^"},
		{"column past the end", "SELECT", 9, "SELECT\n      ^"},
		{"carriage return dropped", "SELECT a FORM t\r", 10, "SELECT a FORM t\n         ^"},
		{"a long line is cut around the column", long, col,
			"…" + long[col-1-60:col-1+60] + "…\n" + strings.Repeat(" ", 61) + "^"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := lang.Caret(c.line, c.col)
			if got != c.want {
				t.Errorf("Caret(%.40q, %d) =\n%s\nwant\n%s", c.line, c.col, got, c.want)
			}
		})
	}
}

// TestSyntaxErrorOnALongLine: a script on one line of 200 kB gets its
// error with the line cut around the column, not all of it.
func TestSyntaxErrorOnALongLine(t *testing.T) {
	src := "SELECT " + strings.Repeat("1 + ", 1000) + "1 FORM t;"
	_, err := lang.Parse("q.sql", src)
	var e *lang.Error
	if !errors.As(err, &e) {
		t.Fatalf("want a *lang.Error, got %v", err)
	}
	pretty := e.Pretty()
	if len(pretty) > 400 || !strings.Contains(pretty, "FORM") || !strings.HasSuffix(pretty, "^") {
		t.Errorf("Pretty() is %d bytes, want the line cut around FORM:\n%.600s", len(pretty), pretty)
	}
}
