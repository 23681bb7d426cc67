package exec

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/sinks"
)

// A join whose condition compares the two sides (in ON or in the WHERE
// over a comma join, where the join order leaves it above a cross join)
// answers as the nested loop does, through every way the executor builds
// a table join: one probe, a probe per core, the join that spills past
// the memory limit, a stream probing the table; inner, LEFT and FULL
// joins and EXISTS. The counts are computed here, pair by pair. A NULL
// time matches nothing.
func TestBandJoinsAnswerAsTheNestedLoop(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(3))
	type row = bandRow
	write := func(name string, n int) []row {
		var rows []row
		var b strings.Builder
		b.WriteString("id,k,t\n")
		for i := range n {
			r := row{id: i, k: rng.Intn(4)}
			if rng.Intn(50) > 0 {
				v := rng.Intn(100_000)
				r.t = &v
				fmt.Fprintf(&b, "%d,%d,%d\n", i, r.k, v)
			} else {
				fmt.Fprintf(&b, "%d,%d,\n", i, r.k)
			}
			rows = append(rows, r)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return rows
	}
	as, bs := write("a.csv", 3000), write("b.csv", 2500)
	count := func(match func(a, b row) bool) int64 {
		n := int64(0)
		for _, a := range as {
			for _, b := range bs {
				if a.t != nil && b.t != nil && match(a, b) {
					n++
				}
			}
		}
		return n
	}
	decl := "CREATE TABLE a (id INT, k INT, t BIGINT) FROM FILE '" + filepath.Join(dir, "a.csv") + "' FORMAT CSV;\n" +
		"CREATE TABLE b (id INT, k INT, t BIGINT) FROM FILE '" + filepath.Join(dir, "b.csv") + "' FORMAT CSV;\n" +
		"CREATE STREAM s (id INT, k INT, t BIGINT) FROM FILE '" + filepath.Join(dir, "a.csv") + "' FORMAT CSV;\n"
	cases := []struct {
		name, sql string
		want      int64
	}{
		{"between in ON", "SELECT count(*) FROM a JOIN b ON a.t BETWEEN b.t - 40 AND b.t + 40",
			count(func(a, b row) bool { return *a.t >= *b.t-40 && *a.t <= *b.t+40 })},
		{"comma join, WHERE", "SELECT count(*) FROM a, b WHERE b.t > a.t AND b.t <= a.t + 100",
			count(func(a, b row) bool { return *b.t > *a.t && *b.t <= *a.t+100 })},
		{"with a key", "SELECT count(*) FROM a JOIN b ON a.k = b.k AND a.t < b.t AND a.t + 500 >= b.t",
			count(func(a, b row) bool { return a.k == b.k && *a.t < *b.t && *a.t+500 >= *b.t })},
		{"a stream probing", "SELECT count(*) FROM s JOIN b ON s.t BETWEEN b.t AND b.t + 60",
			count(func(a, b row) bool { return *a.t >= *b.t && *a.t <= *b.t+60 })},
		{"left join", "SELECT count(*) FROM a LEFT JOIN b ON a.t BETWEEN b.t - 40 AND b.t + 40",
			outer(as, bs, func(a, b row) bool { return *a.t >= *b.t-40 && *a.t <= *b.t+40 }, false)},
		{"a stream's left join", "SELECT count(*) FROM s LEFT JOIN b ON s.k = b.k AND s.t > b.t AND s.t <= b.t + 200",
			outer(as, bs, func(a, b row) bool { return a.k == b.k && *a.t > *b.t && *a.t <= *b.t+200 }, false)},
		{"full join", "SELECT count(*) FROM a FULL JOIN b ON a.t < b.t AND a.t + 30 >= b.t",
			outer(as, bs, func(a, b row) bool { return *a.t < *b.t && *a.t+30 >= *b.t }, true)},
		{"semi join", "SELECT count(*) FROM a WHERE EXISTS (SELECT 1 FROM b WHERE b.t BETWEEN a.t - 30 AND a.t)",
			func() int64 {
				n := int64(0)
				for _, a := range as {
					for _, b := range bs {
						if a.t != nil && b.t != nil && *b.t >= *a.t-30 && *b.t <= *a.t {
							n++
							break
						}
					}
				}
				return n
			}()},
	}
	for _, c := range cases {
		if c.want == 0 {
			t.Fatalf("%s: no matches to count", c.name)
		}
		for _, o := range []struct {
			name string
			opts Options
		}{
			{"one probe", Options{}},
			{"a probe per core", Options{Parallelism: 2}},
			{"spilling", Options{MemoryLimit: 256 << 20}},
		} {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			o.opts.Allocator = mem
			out := &collect{}
			err := RunScript(context.Background(), "q.sql", decl+c.sql+";", ScriptOptions{
				Options:   o.opts,
				NewOutput: func() (sinks.Writer, error) { return out, nil },
			})
			if err != nil {
				t.Fatalf("%s, %s: %v", c.name, o.name, err)
			}
			if len(out.rows) != 1 || out.rows[0][0] != c.want {
				t.Errorf("%s, %s: rows %v, want [[%d]]", c.name, o.name, out.rows, c.want)
			}
			mem.AssertSize(t, 0)
		}
	}
}

// bandRow is a row of the band test's tables; t is nil for NULL.
type bandRow struct {
	k  int
	t  *int
	id int
}

// outer counts the rows of a LEFT JOIN of as and bs on match (a FULL JOIN
// when full): each matching pair, and each row of as (and of bs) that
// matches none, NULL times matching nothing.
func outer(as, bs []bandRow, match func(a, b bandRow) bool, full bool) int64 {
	n := int64(0)
	bHit := make([]bool, len(bs))
	for _, a := range as {
		hit := false
		for k, b := range bs {
			if a.t != nil && b.t != nil && match(a, b) {
				n++
				hit, bHit[k] = true, true
			}
		}
		if !hit {
			n++
		}
	}
	if full {
		for _, h := range bHit {
			if !h {
				n++
			}
		}
	}
	return n
}
