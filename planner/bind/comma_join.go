package bind

import (
	"github.com/tierflow/tierflow/lang"
)

// FROM a, b WHERE a.k = b.k is how many analysts write an inner join. The
// WHERE equalities that compare a column of the relations so far with a
// column of the next one become that join's ON (a hash join, where a CROSS
// JOIN and a filter would pair every row); the other conjuncts stay in WHERE.
// The answer is the same: an inner join's ON and a WHERE above it filter
// the same pairs.

// splitAnd lists the conjuncts of e (nil: none).
func splitAnd(e lang.Expr) []lang.Expr {
	if e == nil {
		return nil
	}
	if a, ok := e.(*lang.BinaryExpr); ok && a.Op == lang.OpAnd {
		return append(splitAnd(a.Left), splitAnd(a.Right)...)
	}
	return []lang.Expr{e}
}

// joinAnd is the conjunction of es, nil for none.
func joinAnd(es []lang.Expr) lang.Expr {
	var out lang.Expr
	for _, e := range es {
		if out == nil {
			out = e
		} else {
			out = &lang.BinaryExpr{Pos: out.Position(), OpPos: e.Position(), Op: lang.OpAnd, Left: out, Right: e}
		}
	}
	return out
}

// commaJoinKeys takes from conj (marking them used) the equalities between
// a column only left has and a column only right has.
func commaJoinKeys(conj []lang.Expr, used []bool, left, right *scope) []lang.Expr {
	only := func(e lang.Expr, in, other *scope) bool {
		c, ok := e.(*lang.ColumnRef)
		if !ok || len(c.Names) > 2 {
			return false
		}
		qual, name := "", c.Names[len(c.Names)-1]
		if len(c.Names) == 2 {
			qual = c.Names[0]
		}
		_, n := in.resolve(qual, name)
		_, m := other.resolve(qual, name)
		return n == 1 && m == 0
	}
	var keys []lang.Expr
	for i, c := range conj {
		eq, ok := c.(*lang.BinaryExpr)
		if used[i] || !ok || eq.Op != lang.OpEq {
			continue
		}
		if (only(eq.Left, left, right) && only(eq.Right, right, left)) || (only(eq.Left, right, left) && only(eq.Right, left, right)) {
			used[i] = true
			keys = append(keys, c)
		}
	}
	return keys
}
