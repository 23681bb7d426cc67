package exec

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/logical"
)

// Subqueries run once before the query and their answers take their place:
// IN keeps SQL's NULLs, a value subquery is NULL without rows and fails the
// query (at its statement) with more than one.
func TestSubqueriesRunFirst(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "t.csv"), []byte("id,n\n1,1\n2,2\n3,\n4,9\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "u.csv"), []byte("k,v\n1,a\n,b\n5,c\n"), 0o644)
	const create = "CREATE TABLE t (id BIGINT, n BIGINT) FROM FILE 't.csv' FORMAT CSV;\nCREATE TABLE u (k BIGINT, v VARCHAR) FROM FILE 'u.csv' FORMAT CSV;\n"
	run := func(sql string) ([][]any, error) {
		out := &collect{}
		err := RunScript(context.Background(), filepath.Join(dir, "q.sql"), create+sql, ScriptOptions{
			Options:   Options{Allocator: mem},
			NewOutput: func() (sinks.Writer, error) { return out, nil },
		})
		return out.rows, err
	}
	got, err := run("SELECT id, n IN (SELECT k FROM u), EXISTS (SELECT k FROM u WHERE k > 4), (SELECT max(k) FROM u WHERE k > 100) FROM t ORDER BY id;")
	if err != nil {
		t.Fatal(err)
	}
	want := [][]any{{int64(1), true, true, nil}, {int64(2), nil, true, nil}, {int64(3), nil, true, nil}, {int64(4), nil, true, nil}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
	got, err = run("SELECT id FROM t WHERE n NOT IN (SELECT k FROM u WHERE k > 100) AND n > (SELECT min(k) FROM u) ORDER BY id;")
	if err != nil || !reflect.DeepEqual(got, [][]any{{int64(2)}, {int64(4)}}) {
		t.Fatalf("NOT IN of no rows, value subquery: %v %v", got, err)
	}
	if _, err := run("SELECT id FROM t WHERE n = (SELECT k FROM u);"); !errors.Is(err, ErrSubquery) {
		t.Fatalf("a value subquery of 3 rows: %v", err)
	}
}

// A subquery in FROM needs no alias (Flink's and DuckDB's queries omit it,
// Nexmark's q7 and q19 among them): its columns go by their names alone.
func TestSubqueryInFromWithoutAlias(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "t.csv"), []byte("id,n\n1,1\n2,2\n3,\n4,9\n"), 0o644)
	const create = "CREATE TABLE t (id BIGINT, n BIGINT) FROM FILE 't.csv' FORMAT CSV;\n"
	run := func(sql string) ([][]any, error) {
		out := &collect{}
		err := RunScript(context.Background(), filepath.Join(dir, "q.sql"), create+sql, ScriptOptions{
			Options:   Options{Allocator: mem},
			NewOutput: func() (sinks.Writer, error) { return out, nil },
		})
		return out.rows, err
	}
	got, err := run("SELECT id, m FROM (SELECT id, n * 2 AS m FROM t WHERE n > 1) WHERE m < 100 ORDER BY id;")
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]any{{int64(2), int64(4)}, {int64(4), int64(18)}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
	got, err = run("SELECT count(*) FROM (SELECT id FROM t) JOIN (SELECT n FROM t WHERE n IS NOT NULL) ON id = n;")
	if err != nil || !reflect.DeepEqual(got, [][]any{{int64(2)}}) {
		t.Fatalf("two unnamed subqueries joined: %v %v", got, err)
	}
	_, err = run("SELECT id FROM (SELECT id FROM t) JOIN (SELECT id, n FROM t) ON n = 1;")
	if err == nil || !strings.Contains(err.Error(), "ambiguous") {
		t.Fatalf("a name both unnamed subqueries have is ambiguous, want an error naming it: %v", err)
	}
}

// ShapeOnly (a coordinator placing a query) builds the graph a run builds
// without running a subquery: the subquery's table is not even read (its
// file is gone here), and the operators are the same, in the same order.
func TestShapeOnlyRunsNoSubquery(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "t.csv"), []byte("id,n\n1,1\n2,2\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "u.csv"), []byte("k\n1\n"), 0o644)
	const src = "CREATE TABLE t (id BIGINT, n BIGINT) FROM FILE 't.csv' FORMAT CSV;\nCREATE TABLE u (k BIGINT) FROM FILE 'u.csv' FORMAT CSV;\n" +
		"SELECT id, EXISTS (SELECT k FROM u) AS e, (SELECT max(k) FROM u) AS m FROM t WHERE n IN (SELECT k FROM u) AND id NOT IN (SELECT k + 1 FROM u);\n"
	shape := func(o Options) ([]string, error) {
		var names []string
		err := RunScript(context.Background(), filepath.Join(dir, "q.sql"), src, ScriptOptions{
			Options:   o,
			NewOutput: func() (sinks.Writer, error) { return &collect{}, nil },
			Plan: func(_ context.Context, bound *logical.Plan, _ *catalog.Catalog, _ planner.Options, o *Options) error {
				built, err := Build(bound, *o)
				if err != nil {
					return err
				}
				for _, op := range built.Graph().Operators {
					names = append(names, op.Name)
				}
				return errShaped
			},
		})
		if errors.Is(err, errShaped) {
			err = nil
		}
		return names, err
	}
	ran, err := shape(Options{Allocator: memory.NewGoAllocator()})
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "u.csv"))
	if _, err := shape(Options{Allocator: memory.NewGoAllocator()}); err == nil {
		t.Fatal("a run's build without the subquery's file: no error, so the build did not run the subquery")
	}
	shaped, err := shape(Options{Allocator: memory.NewGoAllocator(), ShapeOnly: true})
	if err != nil {
		t.Fatalf("ShapeOnly without the subquery's file: %v, want the graph built without running it", err)
	}
	if !reflect.DeepEqual(shaped, ran) {
		t.Errorf("ShapeOnly's operators %v, a run's %v", shaped, ran)
	}
}

var errShaped = errors.New("shaped")
