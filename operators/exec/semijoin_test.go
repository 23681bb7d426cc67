package exec

import (
	"context"
	"fmt"
	"math/rand"
	"runtime"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/planner/rewrite"
)

// writeKeyed writes rows of (c0 BIGINT, c1 BIGINT, c2 BIGINT) named names,
// c1 NULL where the value is nil.
func writeKeyed(t *testing.T, name string, names [3]string, rows [][3]any) string {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: names[0], Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: names[1], Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: names[2], Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for _, r := range rows {
		for c, v := range r {
			if v == nil {
				b.Field(c).AppendNull()
			} else {
				b.Field(c).(*array.Int64Builder).Append(v.(int64))
			}
		}
	}
	rec := b.NewRecord()
	defer rec.Release()
	return writeParquet(t, name, rec, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(64)))
}

// The executor runs semi, anti and mark joins (what decorrelated EXISTS,
// IN and NOT IN become), null-aware or not, with a condition beside the
// key, and semi and anti joins that build their left side (BuildLeft):
// the rows are SQL's, one by one, on one core, on every core (a shared
// build probed by several instances), under a memory limit (spilled), and
// as one operator (a cluster's graph).
func TestSemiAntiMarkJoins(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	var trows, urows [][3]any
	key := func(dom int) any {
		if rng.Intn(10) == 0 {
			return nil
		}
		return int64(rng.Intn(dom))
	}
	for i := range 700 {
		trows = append(trows, [3]any{int64(i), key(40), int64(rng.Intn(4))})
	}
	for i := range 90 {
		urows = append(urows, [3]any{int64(i), key(30), int64(rng.Intn(4))})
	}
	decl := fmt.Sprintf("CREATE TABLE t FROM FILE '%s' FORMAT PARQUET;\nCREATE TABLE u FROM FILE '%s' FORMAT PARQUET;\n",
		writeKeyed(t, "t.parquet", [3]string{"id", "n", "x"}, trows), writeKeyed(t, "u.parquet", [3]string{"uid", "k", "y"}, urows))
	uHasNull := false
	for _, u := range urows {
		uHasNull = uHasNull || u[1] == nil
	}
	for _, tc := range []struct {
		kind      logical.JoinKind
		nullAware bool
		residual  bool
		buildLeft bool
	}{
		{logical.SemiJoin, false, false, false},
		{logical.SemiJoin, false, true, false},
		{logical.AntiJoin, false, false, false},
		{logical.AntiJoin, false, true, false},
		{logical.AntiJoin, true, false, false},
		{logical.MarkJoin, false, true, false},
		{logical.MarkJoin, true, false, false},
		{logical.SemiJoin, false, true, true},
		{logical.AntiJoin, false, false, true},
		{logical.AntiJoin, false, true, true},
	} {
		q := "SELECT t.id, t.n, t.x FROM t JOIN u ON t.n = u.k"
		if tc.residual {
			q += " AND t.x <> u.y"
		}
		// The rows SQL's rules give.
		var want [][]any
		for _, tr := range trows {
			found := false
			for _, ur := range urows {
				if tr[1] != nil && ur[1] != nil && tr[1] == ur[1] && (!tc.residual || tr[2] != ur[2]) {
					found = true
				}
			}
			unknown := tc.nullAware && !found && (tr[1] == nil || uHasNull)
			row := []any{tr[0], tr[1], tr[2]}
			switch tc.kind {
			case logical.SemiJoin:
				if found {
					want = append(want, row)
				}
			case logical.AntiJoin:
				if !found && !unknown {
					want = append(want, row)
				}
			case logical.MarkJoin:
				var m any = found
				if unknown {
					m = nil
				}
				want = append(want, append(row, m))
			}
		}
		sortRows(want)
		name := fmt.Sprintf("%s null-aware=%v residual=%v build-left=%v", tc.kind, tc.nullAware, tc.residual, tc.buildLeft)
		for _, run := range []struct {
			name  string
			procs int
			opts  Options
		}{
			{"one core", 1, Options{Parallelism: 1}},
			{"every core", 4, Options{Parallelism: AllCores}},
			{"spilling", 4, Options{MemoryLimit: 1}},
			{"as on a cluster", 4, Options{Parallelism: AllCores, Relayed: true}},
		} {
			func() {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(run.procs))
				got, err := runAsJoin(t, decl, q, run.opts, func(j *logical.Join) *logical.Join {
					c := *j
					c.Kind, c.NullAware, c.BuildLeft = tc.kind, tc.nullAware, tc.buildLeft
					if tc.kind == logical.MarkJoin {
						return logical.NewMarkJoin(j.Left, j.Right, j.On, "m", tc.nullAware, j.Pos)
					}
					return c.WithChildren(j.Left, j.Right).(*logical.Join)
				})
				if err != nil {
					t.Fatalf("%s (%s): %v", name, run.name, err)
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("%s (%s): %d rows, want %d\ngot  %v\nwant %v", name, run.name, len(got), len(want), head(got), head(want))
				}
			}()
		}
	}
}

func head(rows [][]any) [][]any { return rows[:min(len(rows), 8)] }

// runAsJoin binds q (one join under a projection of left columns), turns
// its join into what change makes of it (a mark join's projection gains
// the mark), rewrites and runs it; rows sorted, nothing leaked.
func runAsJoin(t *testing.T, decl, q string, o Options, change func(*logical.Join) *logical.Join) ([][]any, error) {
	t.Helper()
	script, err := lang.Parse("q.sql", decl+q+";")
	if err != nil {
		return nil, err
	}
	cat := &catalog.Catalog{Files: FileSchemas{}}
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
	plan, err := bind.New(cat).Bind(stmt)
	if err != nil {
		return nil, err
	}
	plan.Root = logical.Transform(plan.Root, func(n logical.Node) logical.Node {
		switch x := n.(type) {
		case *logical.Join:
			return change(x)
		case *logical.Project:
			if j, ok := x.Input.(*logical.Join); ok && j.Kind == logical.MarkJoin {
				nl := j.Left.Schema().NumFields()
				exprs := append(append([]expr.Expr(nil), x.Exprs...), &expr.Column{Index: nl, Name: j.Mark, DataType: expr.Bool})
				return logical.NewProject(j, exprs, append(append([]string(nil), x.Names...), j.Mark), x.Pos)
			}
		}
		return n
	})
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	o.Allocator = mem
	out := &collect{}
	o.Output = out
	built, err := Build(rewrite.Apply(plan), o)
	if err != nil {
		return nil, err
	}
	if _, err := built.Run(context.Background()); err != nil {
		return nil, err
	}
	sortRows(out.rows)
	return out.rows, nil
}
