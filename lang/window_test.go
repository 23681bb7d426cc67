package lang

import (
	"errors"
	"testing"
)

// TestOverParsesAndPrints checks the OVER clause's shapes: each query prints
// in canonical form, and that form parses back to itself.
func TestOverParsesAndPrints(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"SELECT rank() over (partition by a, b order by c desc) FROM t",
			"SELECT rank() OVER (PARTITION BY a, b ORDER BY c DESC)\nFROM t"},
		{"SELECT sum(x) OVER () FROM t", "SELECT sum(x) OVER ()\nFROM t"},
		{"SELECT sum(x) OVER (ORDER BY ts ROWS 2 PRECEDING) FROM t",
			"SELECT sum(x) OVER (ORDER BY ts ROWS 2 PRECEDING)\nFROM t"},
		{"SELECT avg(x) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '10' SECOND PRECEDING AND CURRENT ROW) FROM s",
			"SELECT avg(x) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '10' SECOND PRECEDING AND CURRENT ROW)\nFROM s"},
		{"SELECT lag(x, 2, 0) OVER (ORDER BY y ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) FROM t",
			"SELECT lag(x, 2, 0) OVER (ORDER BY y ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)\nFROM t"},
		// OVER is contextual: without "(" it is still an alias.
		{"SELECT count(*) over FROM t", "SELECT count(*) AS over\nFROM t"},
		// Named windows; WINDOW is still a table alias where no name AS follows.
		{"SELECT sum(x) OVER w, rank() over w2 FROM t window w AS (PARTITION BY a), w2 AS (ORDER BY b)",
			"SELECT sum(x) OVER w, rank() OVER w2\nFROM t\nWINDOW w AS (PARTITION BY a), w2 AS (ORDER BY b)"},
		{"SELECT a FROM t window WHERE a > 1", "SELECT a\nFROM t AS window\nWHERE a > 1"},
	} {
		s, err := Parse("q.sql", tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		got := Print(s.Statements[0])
		if got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.in, got, tc.want)
			continue
		}
		if again, err := Parse("q.sql", got); err != nil || Print(again.Statements[0]) != got {
			t.Errorf("%q does not read back: %v", got, err)
		}
	}
}

func TestOverSyntaxErrorsHavePositions(t *testing.T) {
	for _, q := range []string{
		"SELECT sum(x) OVER (ORDER BY ts ROWS BETWEEN) FROM t",
		"SELECT sum(x) OVER (PARTITION a) FROM t",
		"SELECT sum(x) OVER (ORDER BY ts ROWS) FROM t",
	} {
		_, err := Parse("q.sql", q)
		var pe *Error
		if err == nil || !errors.As(err, &pe) || pe.Pos.Line != 1 || pe.Pos.Column < 15 {
			t.Errorf("%s: want a syntax error inside OVER, got %v", q, err)
		}
	}
}
