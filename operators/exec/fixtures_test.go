package exec

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
)

// writeParquet writes rec to a Parquet file name in a temporary folder
// under props (nil: the defaults), with the Arrow schema stored, and
// returns its path.
func writeParquet(t testing.TB, name string, rec arrow.Record, props *parquet.WriterProperties) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(rec.Schema(), f, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// sortRows orders rows by their printed form: runs that emit the same rows
// in another order (in parallel, after a spill) then compare row by row.
func sortRows(rows [][]any) {
	sort.Slice(rows, func(i, j int) bool { return fmt.Sprint(rows[i]) < fmt.Sprint(rows[j]) })
}

// rowsMatch says where got differs from want, nil when they hold the same
// rows in the same order; doubles match to within 1e-9 relative (a sum
// folded in another order rounds differently).
func rowsMatch(got, want [][]any) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d rows, want %d", len(got), len(want))
	}
	for i := range got {
		if len(got[i]) != len(want[i]) {
			return fmt.Errorf("row %d: %v, want %v", i, got[i], want[i])
		}
		for j := range got[i] {
			g, w := got[i][j], want[i][j]
			if gf, ok := g.(float64); ok {
				if wf, ok := w.(float64); ok && math.Abs(gf-wf) <= 1e-9*math.Max(1, math.Abs(wf)) {
					continue
				}
			}
			if g != w {
				return fmt.Errorf("row %d column %d: %v, want %v (row %v, want %v)", i, j, g, w, got[i], want[i])
			}
		}
	}
	return nil
}
