package bind

import (
	"github.com/tierflow/tierflow/lang"
)

// An outer join's ON may hold, besides the key equalities, conditions on one
// side only: LEFT JOIN u ON t.n = u.k AND u.label <> 'x' AND t.x > 0. The
// executor's join takes keys (and, for inner joins only, other conditions),
// so such conditions fold into the keys: a row failing its side's
// conditions gets a NULL key, which matches nothing, exactly what the ON
// asks for that row, in LEFT, RIGHT and FULL joins alike:
//
//	CASE WHEN t.x > 0 THEN t.n END = CASE WHEN u.label <> 'x' THEN u.k END

// exprSide says which side's columns e reads: 1 left only (or none), 2
// right only, 0 both, a subquery, or a name that does not resolve to one.
func exprSide(e lang.Expr, left, right *scope) int {
	side := 1
	seen := false
	lang.Inspect(e, func(n lang.Node) bool {
		switch x := n.(type) {
		case *lang.Query, *lang.SubqueryExpr, *lang.ExistsExpr:
			side = 0
		case *lang.InExpr:
			if x.Subquery != nil {
				side = 0
			}
		case *lang.ColumnRef:
			if len(x.Names) > 2 {
				side = 0
				break
			}
			qual, name := "", x.Names[len(x.Names)-1]
			if len(x.Names) == 2 {
				qual = x.Names[0]
			}
			_, nl := left.resolve(qual, name)
			_, nr := right.resolve(qual, name)
			s := 0
			switch {
			case nl == 1 && nr == 0:
				s = 1
			case nr == 1 && nl == 0:
				s = 2
			}
			if s == 0 || (seen && s != side) {
				side = 0
			}
			seen = true
			if side != 0 {
				side = s
			}
		}
		return side != 0
	})
	return side
}

// nullSideOn takes out of an outer join's ON the conditions that read only
// its null-supplying side (the right of a LEFT JOIN, the left of a RIGHT
// JOIN): such a condition only decides which of that side's rows may match,
// so it is the same as a filter on that side's input, below the join
// (where it is pushed into the scan and the columns it alone reads are
// never carried through the join). TPC-H Q13's o_comment NOT LIKE ... was
// folded into the join key and every comment went through the join. A
// FULL JOIN preserves both sides: nothing is taken.
func nullSideOn(on lang.Expr, kind lang.JoinKind, left, right *scope) (rest lang.Expr, pushed []lang.Expr) {
	side := 2
	switch kind {
	case lang.JoinLeft:
	case lang.JoinRight:
		side = 1
	default:
		return on, nil
	}
	var kept []lang.Expr
	for _, c := range splitAnd(on) {
		if exprSide(c, left, right) == side && readsColumn(c) {
			pushed = append(pushed, c)
			continue
		}
		kept = append(kept, c)
	}
	if len(pushed) == 0 || !joinsSides(kept, left, right) {
		// Without a key equality the join is not a hash join, and its
		// ON is left as written.
		return on, nil
	}
	return joinAnd(kept), pushed
}

// joinsSides: some condition is an equality of one side's expression with
// the other's (a hash join's key).
func joinsSides(conds []lang.Expr, left, right *scope) bool {
	for _, c := range conds {
		if eq, ok := c.(*lang.BinaryExpr); ok && eq.Op == lang.OpEq {
			l, r := exprSide(eq.Left, left, right), exprSide(eq.Right, left, right)
			if l == 1 && r == 2 || l == 2 && r == 1 {
				return true
			}
		}
	}
	return false
}

// readsColumn: e names a column (a condition of constants alone is no
// side's, exprSide counts it as the left's).
func readsColumn(e lang.Expr) bool {
	found := false
	lang.Inspect(e, func(n lang.Node) bool {
		if _, ok := n.(*lang.ColumnRef); ok {
			found = true
		}
		return !found
	})
	return found
}

// foldOuterOn is on with its one-side conditions folded into its first key
// equality; on itself when there is nothing to fold or no key to fold into.
func foldOuterOn(on lang.Expr, left, right *scope) lang.Expr {
	var lconds, rconds, rest []lang.Expr
	key := -1
	var lkey, rkey lang.Expr
	for _, c := range splitAnd(on) {
		switch exprSide(c, left, right) {
		case 1:
			lconds = append(lconds, c)
			continue
		case 2:
			rconds = append(rconds, c)
			continue
		}
		if eq, ok := c.(*lang.BinaryExpr); ok && eq.Op == lang.OpEq && key < 0 {
			l, r := exprSide(eq.Left, left, right), exprSide(eq.Right, left, right)
			if l == 1 && r == 2 {
				key, lkey, rkey = len(rest), eq.Left, eq.Right
			} else if l == 2 && r == 1 {
				key, lkey, rkey = len(rest), eq.Right, eq.Left
			}
		}
		rest = append(rest, c)
	}
	if key < 0 || len(lconds)+len(rconds) == 0 {
		return on
	}
	guard := func(k lang.Expr, conds []lang.Expr) lang.Expr {
		if len(conds) == 0 {
			return k
		}
		c := joinAnd(conds)
		return &lang.CaseExpr{Pos: k.Position(), Whens: []*lang.WhenClause{{Pos: c.Position(), Cond: c, Result: k}}}
	}
	eq := rest[key].(*lang.BinaryExpr)
	rest[key] = &lang.BinaryExpr{Pos: eq.Pos, OpPos: eq.OpPos, Op: lang.OpEq, Left: guard(lkey, lconds), Right: guard(rkey, rconds)}
	return joinAnd(rest)
}
