package bind

import (
	"strings"
	"time"

	"github.com/alecthomas/participle/v2/lexer"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/expr"
)

// timestampLayouts are the texts a TIMESTAMP literal, or a string compared
// with a TIMESTAMP, may take: DuckDB's 'YYYY-MM-DD[ HH:MM[:SS[.f]]]', T for
// the space allowed.
var timestampLayouts = []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04", "2006-01-02T15:04", "2006-01-02"}

func parseTimestampText(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	for _, layout := range timestampLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// textAsTime is e as a TIMESTAMP literal when it is a string literal that
// meets a TIMESTAMP (ts >= '2026-01-01', ts BETWEEN '...' AND '...'), as
// DuckDB casts it; e otherwise. A text that is no timestamp is reported at p.
func (b *Binder) textAsTime(e, other expr.Expr, p lexer.Position) expr.Expr {
	l, ok := e.(*expr.Literal)
	if !ok || other == nil || !expr.IsString(l.DataType) || !expr.IsTemporal(other.Type()) {
		return e
	}
	s, _ := l.Value.(string)
	t, ok := parseTimestampText(s)
	if !ok {
		b.errorf(p, ErrBind, "'%s' is compared with a TIMESTAMP but is not one: want 'YYYY-MM-DD[ HH:MM:SS]'", s)
		return nil
	}
	out, _ := expr.NewLiteral(t)
	return out
}

func isComparison(op lang.BinaryOp) bool {
	switch op {
	case lang.OpEq, lang.OpNe, lang.OpLt, lang.OpLe, lang.OpGt, lang.OpGe, "!=":
		return true
	}
	return false
}
