package sources

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// streamSchema reads every kind csvStream parses, and a narrow integer.
var streamSchema = arrow.NewSchema([]arrow.Field{
	{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "n", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
	{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "t", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
}, nil)

// readStream reads path as a stream (OpenCSV) of batches of batch rows,
// typed (csvStream) or by the scanner alone, and describes what it gave:
// each record's rows, the error and the rows reported bad.
func readStream(t *testing.T, path string, batch int, policy OnError, scanner bool) string {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rep := &Report{}
	r, err := OpenCSV(path, streamSchema, batch, policy, rep)
	if err != nil {
		return "open: " + err.Error()
	}
	defer r.Close()
	if scanner {
		r.plan = nil
	}
	var out strings.Builder
	for {
		rec, err := r.Next(mem)
		if err != nil {
			fmt.Fprintf(&out, "error: %v\n", err)
			break
		}
		if rec == nil {
			break
		}
		fmt.Fprintf(&out, "record of %d:\n", rec.NumRows())
		for i := range int(rec.NumRows()) {
			for j, col := range rec.Columns() {
				if j > 0 {
					out.WriteString(" | ")
				}
				if col.IsNull(i) {
					out.WriteString("NULL")
				} else {
					out.WriteString(col.ValueStr(i))
				}
			}
			out.WriteString("\n")
		}
		rec.Release()
	}
	fmt.Fprintf(&out, "bad %d: %s\n", rep.BadRows.Load(), strings.Join(rep.Messages(), "; "))
	return out.String()
}

// checkStreamMatchesScanner fails t unless the typed stream read of data
// gives what the scanner gives: the same records (rows, values, batch
// boundaries), the same error, the same bad rows, under both policies and
// in batches of 1, 3 and 4,096 rows.
func checkStreamMatchesScanner(t *testing.T, data []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.csv")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, policy := range []OnError{Fail, Skip} {
		for _, batch := range []int{1, 3, 4096} {
			want := readStream(t, path, batch, policy, true)
			if got := readStream(t, path, batch, policy, false); got != want {
				t.Fatalf("policy %v, batch %d, file:\n%s\ntyped:\n%s\nscanner:\n%s", policy, batch, data, got, want)
			}
		}
	}
}

var streamSeeds = []string{
	"i,n,f,s,b,t\n1,2,3.5,x,true,2026-01-01 00:00:00.000400\n4,5,6,y,F,2026-01-01T00:00:01Z\n",
	// Refused by the typed rules, read by the scanner: spaces, a long
	// integer, a narrow one out of range, bad UTF-8, a bool of another
	// spelling, a time of another layout, too few fields; blank lines,
	// CRLF, no final line break.
	"i,n,f,s,b,t\n 7,1,1,a,yes,2026-01-01\n\n12345678901234567890,1,1,a,1,2026-01-01 10:30\r\n1,40000,1,a,0,2026-01-01\n1,2,x,\xff,TRUE,2026-1-1\n1,2\n,,,,,\n8,9,1e3,z,t,2026-01-01T00:00:00+02:00",
	// A quote halfway: the scanner reads from that line on, a line break
	// inside quotes included.
	"i,n,f,s,b,t\n1,1,1,a,1,2026-01-01\n2,2,2,\"b\nc\",0,2026-01-01\n3,3,3,d,1,2026-01-01\n",
	// Columns in another order than declared, and one not read.
	"t,x,s,b,f,n,i\n2026-01-01 00:00:00,ignored,s,false,0.5,3,9\n2026-02-01 00:00:00,,,,,,\n",
	"i,n,f,s,b,t\n\"unterminated,1,1,a,1,2026-01-01\n",
}

// A stream's CSV read typed gives what the scanner gives, row for row,
// record for record and error for error.
func TestCSVStreamMatchesScanner(t *testing.T) {
	for _, s := range streamSeeds {
		checkStreamMatchesScanner(t, []byte(s))
	}
	// A line longer than the read buffer, between short ones.
	long := "i,n,f,s,b,t\n1,1,1,a,1,2026-01-01\n2,2,2," + strings.Repeat("x", 3*csvBuffer) + ",0,2026-01-01\n3,3,3,c,1,2026-01-01\n"
	checkStreamMatchesScanner(t, []byte(long))
	// Many batches, a refused row in some of them.
	var b strings.Builder
	b.WriteString("i,n,f,s,b,t\n")
	for i := range 1500 {
		sp := ""
		if i%377 == 0 {
			sp = " "
		}
		fmt.Fprintf(&b, "%s%d,%d,%d.25,w%d,%t,2026-01-01 00:00:%02d.%06d\n", sp, i, i%100, i, i, i%3 == 0, i%60, i)
	}
	checkStreamMatchesScanner(t, []byte(b.String()))
}

func FuzzCSVStream(f *testing.F) {
	for _, s := range streamSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkStreamMatchesScanner(t, data) })
}

// BenchmarkScanStreamCSV reads 100,000 Nexmark bids (bench nexmark's
// bid.csv form: auction, price and dateTime read of 7 fields) as a
// stream's CSV file in turns: by the scanner with time.Parse's layouts
// (layouts: the read before parseTimeText), by the scanner with
// parseTimeText (text), and typed (csvStream). text/layouts and
// typed/layouts are ratios of the process's CPU times, the collector's
// work included.
func BenchmarkScanStreamCSV(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("auction,bidder,price,channel,url,dateTime,extra\n")
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 100_000 {
		fmt.Fprintf(&sb, "%d,%d,%d,Google,https://www.nexmark.com/abcde/fghij/klmno/item.htm?query=1&channel_id=%d,%s,qwertyui\n",
			1000+i%977, 1000+i%1319, 100+i*7919%1000000, i*31, base.Add(time.Duration(i)*100*time.Microsecond).Format("2006-01-02 15:04:05.000000"))
	}
	path := filepath.Join(b.TempDir(), "bid.csv")
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "auction", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "price", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "dateTime", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	}, nil)
	mem := memory.NewGoAllocator()
	defer func() { timeText = true }()
	var took [3]time.Duration
	for range b.N {
		for k := range 3 {
			timeText = k > 0
			start := processCPU()
			r, err := OpenCSV(path, schema, 4096, Fail, &Report{})
			if err != nil {
				b.Fatal(err)
			}
			if k < 2 {
				r.plan = nil
			}
			if n, err := drain(mem, r); err != nil || n != 100_000 {
				b.Fatal(n, err)
			}
			r.Close()
			took[k] += processCPU() - start
		}
	}
	b.ReportMetric(float64(took[1])/float64(took[0]), "text/layouts")
	b.ReportMetric(float64(took[2])/float64(took[0]), "typed/layouts")
}
