package expr

import "github.com/apache/arrow/go/v17/arrow"

// SubqueryKind is how a subquery is used.
type SubqueryKind int

// Subquery kinds.
const (
	// ScalarSubquery is (SELECT ...) as a value: NULL for no row.
	ScalarSubquery SubqueryKind = iota
	// ExistsSubquery is EXISTS (SELECT ...).
	ExistsSubquery
	// InSubquery is x [NOT] IN (SELECT ...), with IN's NULL semantics.
	InSubquery
)

// Subquery is an uncorrelated subquery used in an expression. It reads
// tables only and does not depend on the row, so an executor runs Plan once,
// before the query, and puts its answer in place: a literal (scalar,
// EXISTS) or an IN list of literals. Plan is the bound query, a
// logical.Node (this package may not import logical).
type Subquery struct {
	Kind SubqueryKind
	// Expr is IN's tested value, cast to Elem; nil otherwise.
	Expr    Expr
	Negated bool
	Plan    any
	// Elem is the type the subquery's column is compared or returned as.
	Elem arrow.DataType
}

func (s *Subquery) Type() arrow.DataType {
	if s.Kind == ScalarSubquery {
		return s.Elem
	}
	return Bool
}

func (s *Subquery) Children() []Expr {
	if s.Expr == nil {
		return nil
	}
	return []Expr{s.Expr}
}

func (s *Subquery) WithChildren(ch ...Expr) Expr {
	c := *s
	if s.Expr == nil {
		mustCount("Subquery", len(ch), 0)
		return &c
	}
	mustCount("Subquery", len(ch), 1)
	c.Expr = ch[0]
	return &c
}

func (s *Subquery) String() string {
	switch s.Kind {
	case ExistsSubquery:
		return "EXISTS (subquery)"
	case InSubquery:
		not := ""
		if s.Negated {
			not = "NOT "
		}
		return "(" + s.Expr.String() + " " + not + "IN (subquery))"
	}
	return "(subquery)"
}
