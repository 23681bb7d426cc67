package tpch

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet/file"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
)

const testSF = 0.002

// readTable reads a generated table back whole.
func readTable(t *testing.T, dir, name string) arrow.Table {
	t.Helper()
	r, err := file.OpenParquetFile(filepath.Join(dir, name+".parquet"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fr, err := pqarrow.NewFileReader(r, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tb.Release)
	return tb
}

// columnOf returns a table's column as one array.
func columnOf(t *testing.T, tb arrow.Table, name string) arrow.Array {
	t.Helper()
	idx := tb.Schema().FieldIndices(name)
	if len(idx) != 1 {
		t.Fatalf("no column %s", name)
	}
	chunks := tb.Column(idx[0]).Data().Chunks()
	a, err := array.Concatenate(chunks, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Release)
	return a
}

func generate(t *testing.T, o GenOptions) string {
	t.Helper()
	dir := t.TempDir()
	if err := Generate(context.Background(), dir, o); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The files depend on the seed only, not on how many workers wrote them.
func TestGenerateIsDeterministic(t *testing.T) {
	a := generate(t, GenOptions{SF: testSF, Seed: 7, Workers: 1, RowGroupRows: 1000})
	b := generate(t, GenOptions{SF: testSF, Seed: 7, Workers: 3, RowGroupRows: 1000})
	c := generate(t, GenOptions{SF: testSF, Seed: 8, Workers: 3, RowGroupRows: 1000})
	for _, tb := range Tables {
		fa, _ := os.ReadFile(filepath.Join(a, tb.Name+".parquet"))
		fb, _ := os.ReadFile(filepath.Join(b, tb.Name+".parquet"))
		fc, _ := os.ReadFile(filepath.Join(c, tb.Name+".parquet"))
		if len(fa) == 0 || !bytes.Equal(fa, fb) {
			t.Errorf("%s: 1 and 3 workers wrote different files (%d, %d bytes)", tb.Name, len(fa), len(fb))
		}
		if tb.Name != "region" && tb.Name != "nation" && bytes.Equal(fa, fc) {
			t.Errorf("%s: seeds 7 and 8 wrote the same file", tb.Name)
		}
	}
}

// The generated data has the specification's cardinalities, keys and the
// relations between columns that the queries rely on.
func TestGenerateFollowsTheSpecification(t *testing.T) {
	dir := generate(t, GenOptions{SF: 0.01, Seed: 1, RowGroupRows: 4096})
	for name, want := range map[string]int64{"region": 5, "nation": 25, "supplier": 100, "customer": 1500, "part": 2000, "partsupp": 8000, "orders": 15000} {
		if n := readTable(t, dir, name).NumRows(); n != want {
			t.Errorf("%s: %d rows, want %d", name, n, want)
		}
	}
	orders := readTable(t, dir, "orders")
	lines := readTable(t, dir, "lineitem")
	if n := lines.NumRows(); n < 15000*3 || n > 15000*5 {
		t.Errorf("lineitem: %d rows, want about 4 per order", n)
	}
	okey := columnOf(t, orders, "o_orderkey").(*array.Int64)
	cust := columnOf(t, orders, "o_custkey").(*array.Int32)
	status := columnOf(t, orders, "o_orderstatus").(*array.String)
	total := columnOf(t, orders, "o_totalprice").(*array.Decimal128)
	odate := columnOf(t, orders, "o_orderdate").(*array.Date32)
	for i := 0; i < okey.Len(); i++ {
		if want := int64(i/8*32 + i%8 + 1); okey.Value(i) != want {
			t.Fatalf("order %d: key %d, want %d (8 of every 32)", i, okey.Value(i), want)
		}
		if cust.Value(i)%3 == 0 {
			t.Fatalf("order %d: customer %d: a third of customers (key divisible by 3) have no orders", i, cust.Value(i))
		}
		if d := odate.Value(i).ToTime(); d.Before(time.Date(1992, 1, 1, 0, 0, 0, 0, time.UTC)) || d.After(time.Date(1998, 8, 2, 0, 0, 0, 0, time.UTC)) {
			t.Fatalf("order %d: date %s outside 1992-01-01 .. 1998-08-02", i, d)
		}
	}
	lkey := columnOf(t, lines, "l_orderkey").(*array.Int64)
	part := columnOf(t, lines, "l_partkey").(*array.Int32)
	qty := columnOf(t, lines, "l_quantity").(*array.Decimal128)
	price := columnOf(t, lines, "l_extendedprice").(*array.Decimal128)
	disc := columnOf(t, lines, "l_discount").(*array.Decimal128)
	ship := columnOf(t, lines, "l_shipdate").(*array.Date32)
	receipt := columnOf(t, lines, "l_receiptdate").(*array.Date32)
	flag := columnOf(t, lines, "l_returnflag").(*array.String)
	lstatus := columnOf(t, lines, "l_linestatus").(*array.String)
	current := arrow.Date32FromTime(time.Date(1995, 6, 17, 0, 0, 0, 0, time.UTC))
	o := -1
	var shipped, n int
	checkOrder := func() {
		if o < 0 {
			return
		}
		want := "P"
		if shipped == n {
			want = "F"
		} else if shipped == 0 {
			want = "O"
		}
		if status.Value(o) != want {
			t.Fatalf("order %d: status %s with %d of %d lines shipped, want %s", okey.Value(o), status.Value(o), shipped, n, want)
		}
		if total.Value(o).Sign() <= 0 {
			t.Fatalf("order %d: total %v", okey.Value(o), total.Value(o))
		}
	}
	for i := 0; i < lkey.Len(); i++ {
		if o < 0 || lkey.Value(i) != okey.Value(o) {
			checkOrder()
			o++
			shipped, n = 0, 0
			if lkey.Value(i) != okey.Value(o) {
				t.Fatalf("line %d: order %d, want the next order %d", i, lkey.Value(i), okey.Value(o))
			}
		}
		n++
		q := qty.Value(i).LowBits() / 100
		if want := uint64(q) * uint64(retailPrice(int64(part.Value(i)))); price.Value(i).LowBits() != want {
			t.Fatalf("line %d: extended price %v, want quantity x retail price %d", i, price.Value(i), want)
		}
		if q < 1 || q > 50 || disc.Value(i).LowBits() > 10 {
			t.Fatalf("line %d: quantity %d, discount %v", i, q, disc.Value(i))
		}
		if ship.Value(i) <= current {
			shipped++
			if lstatus.Value(i) != "F" {
				t.Fatalf("line %d: shipped before 1995-06-17, status %s", i, lstatus.Value(i))
			}
		}
		if (receipt.Value(i) <= current) != (flag.Value(i) != "N") {
			t.Fatalf("line %d: received %s, return flag %s", i, receipt.Value(i).ToTime(), flag.Value(i))
		}
	}
	checkOrder()

	// The words the queries look for are there.
	words := map[string]bool{}
	comments := columnOf(t, orders, "o_comment").(*array.String)
	for i := 0; i < comments.Len(); i++ {
		c := comments.Value(i)
		if strings.Contains(c, "special") && strings.Contains(c[strings.Index(c, "special"):], "requests") {
			words["special requests"] = true
		}
	}
	sc := columnOf(t, readTable(t, dir, "supplier"), "s_comment").(*array.String)
	for i := 0; i < sc.Len(); i++ {
		if strings.Contains(sc.Value(i), "Customer ") && (strings.Contains(sc.Value(i), "Complaints") || strings.Contains(sc.Value(i), "Recommends")) {
			words["Customer"] = true
		}
	}
	pn := columnOf(t, readTable(t, dir, "part"), "p_name").(*array.String)
	for i := 0; i < pn.Len(); i++ {
		if strings.HasPrefix(pn.Value(i), "forest") {
			words["forest"] = true
		}
		if f := strings.Fields(pn.Value(i)); len(f) != 5 {
			t.Fatalf("part name %q: want five colors", pn.Value(i))
		}
	}
	for _, w := range []string{"special requests", "forest"} {
		if !words[w] {
			t.Errorf("no %q in the data", w)
		}
	}
}

// A folder is reused for the same options and rewritten for others.
func TestGenerateReusesItsFiles(t *testing.T) {
	dir := t.TempDir()
	o := GenOptions{SF: testSF, Seed: 1, RowGroupRows: 1000}
	if err := Generate(context.Background(), dir, o); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "lineitem.parquet")
	old := time.Unix(1, 0)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	if err := Generate(context.Background(), dir, o); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); !fi.ModTime().Equal(old) {
		t.Fatal("the same data set was generated again")
	}
	o.Types = DoubleTypes
	if err := Generate(context.Background(), dir, o); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.ModTime().Equal(old) {
		t.Fatal("other types did not regenerate the files")
	}
	if ty := readTable(t, dir, "lineitem").Schema().Field(4).Type; ty.ID() != arrow.FLOAT64 {
		t.Fatalf("l_quantity is %s with --types double", ty)
	}
}

func TestGenerateRejectsABadScale(t *testing.T) {
	for _, sf := range []float64{0, -1, 1e9} {
		if err := Generate(context.Background(), t.TempDir(), GenOptions{SF: sf}); err == nil {
			t.Errorf("sf %v accepted", sf)
		}
	}
}

func TestGenerateReportsProgress(t *testing.T) {
	var log bytes.Buffer
	generate(t, GenOptions{SF: testSF, Seed: 1, Progress: &log})
	for _, tb := range Tables {
		if !strings.Contains(log.String(), " "+tb.Name+", ") {
			t.Errorf("no progress line for %s:\n%s", tb.Name, log.String())
		}
	}
}
