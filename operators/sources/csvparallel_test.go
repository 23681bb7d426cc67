package sources

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
)

var typedSchema = arrow.NewSchema([]arrow.Field{
	{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "s", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
	{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "g", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: true},
	{Name: "tn", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Nullable: true},
}, nil)

// typedCSV is n rows of every type csvTyped reads, with NULLs, CRLF line
// ends, blank lines and, where odd is set, values only the scanner reads
// (spaces, zones, exponents, mixed case) scattered through the file.
func typedCSV(n int, seed uint64, odd bool) string {
	r := rand.New(rand.NewPCG(seed, 1))
	var b strings.Builder
	b.WriteString("i,s,f,g,name,ok,ts,tn,extra\n")
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	for k := range n {
		ts := fmt.Sprintf("%04d-%02d-%02d %02d:%02d:%02d", 1900+r.IntN(300), 1+r.IntN(12), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60))
		if r.IntN(3) == 0 {
			ts += "." + fmt.Sprint(r.IntN(1000000))
		}
		row := []string{fmt.Sprint(r.Int64N(1<<40) - 1<<39), fmt.Sprint(r.IntN(60000) - 30000), fmt.Sprintf("%.2f", r.Float64()*1e5),
			fmt.Sprint(r.Float32()), pick("AIR", "MAIL", "ünï", "", "x y"), pick("true", "f", "1", "0", ""), ts, pick(ts, "2024-02-29", "")}
		if odd && r.IntN(20) == 0 {
			switch c := r.IntN(len(row)); c {
			case 0, 1:
				row[c] = pick(" 5", "+7", "-0", "007 ")
			case 2, 3:
				row[c] = pick("1e3", " 2.5", "Inf", "0x1p-2")
			case 5:
				row[c] = pick("TrUe", "FALSE")
			case 6, 7:
				row[c] = pick("2024-01-01T00:00:02Z", "2024-01-01 3:04:05", " 2024-01-01", "2024-01-01 00:00")
			}
		}
		if r.IntN(7) == 0 {
			row[r.IntN(len(row))] = ""
		}
		b.WriteString(strings.Join(row, ","))
		b.WriteString(",tail")
		switch {
		case k%97 == 0:
			b.WriteString("\r\n")
		case k%211 == 0:
			b.WriteString("\n\n")
		default:
			b.WriteString("\n")
		}
	}
	return strings.TrimSuffix(b.String(), "\n") // no line break after the last row
}

type csvRun struct {
	rows     [][]any
	err      string
	messages []string
	par      bool // the parallel typed read ran
	seq      bool // and handed over to the scanner
	// buffers is how many chunk buffers the parallel read made, queued
	// the chunks its queue holds.
	buffers, queued int
}

// readCSV reads path with the typed parallel read (chunks of chunk bytes)
// or, chunk 0, with the scanner alone, and checks nothing leaks.
func readCSV(t *testing.T, path string, schema *arrow.Schema, policy OnError, chunk int) csvRun {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rep := &Report{}
	r, err := OpenCSVTable(path, schema, 64, policy, rep)
	if err != nil {
		t.Fatal(err)
	}
	if chunk == 0 {
		r.plan = nil
	} else {
		r.chunkBytes = chunk
	}
	var out csvRun
	for {
		rec, err := r.Next(mem)
		if err != nil {
			out.err = err.Error()
			break
		}
		if rec == nil {
			break
		}
		out.rows = append(out.rows, readAll(t, mem, &oneRecord{rec})...)
	}
	out.par, out.seq = r.par != nil, r.sequential
	out.messages = rep.Messages()
	p := r.par
	r.Close() // the splitter has ended: its counts are read after
	if p != nil {
		out.buffers, out.queued = p.made, cap(p.queue)
	}
	return out
}

// oneRecord reads as a Reader of one record.
type oneRecord struct{ rec arrow.Record }

func (o *oneRecord) Schema() *arrow.Schema { return o.rec.Schema() }
func (o *oneRecord) Close() error          { return nil }
func (o *oneRecord) Next(memory.Allocator) (arrow.Record, error) {
	r := o.rec
	o.rec = nil
	return r, nil
}

func sameRun(t *testing.T, what string, got, want csvRun) {
	t.Helper()
	if got.err != "" && got.err == want.err && reflect.DeepEqual(got.messages, want.messages) {
		return // the rows before a failure come in batches of either size
	}
	if got.err != want.err || !reflect.DeepEqual(got.messages, want.messages) || len(got.rows) != len(want.rows) {
		t.Fatalf("%s: typed read: %d rows, err %q, problems %q\nscanner: %d rows, err %q, problems %q",
			what, len(got.rows), got.err, got.messages, len(want.rows), want.err, want.messages)
	}
	for i := range got.rows {
		if !reflect.DeepEqual(got.rows[i], want.rows[i]) {
			t.Fatalf("%s: row %d: typed read %v, scanner %v", what, i, got.rows[i], want.rows[i])
		}
	}
}

// The typed parallel read gives the scanner's rows, NULLs and errors on
// every chunk size, including chunks that cut lines and values the typed
// parse leaves to TextValue.
func TestCSVParallelReadsWhatTheScannerReads(t *testing.T) {
	for _, odd := range []bool{false, true} {
		path := write(t, "t.csv", typedCSV(3000, 7, odd))
		want := readCSV(t, path, typedSchema, Fail, 0)
		if want.err != "" || len(want.rows) != 3000 {
			t.Fatalf("scanner: %d rows, %s", len(want.rows), want.err)
		}
		for _, chunk := range []int{1, 100, 4096, csvChunkBytes} {
			got := readCSV(t, path, typedSchema, Fail, chunk)
			if !got.par || got.seq {
				t.Fatalf("chunk %d: parallel %v, handed to the scanner %v", chunk, got.par, got.seq)
			}
			sameRun(t, fmt.Sprintf("odd %v, chunk %d", odd, chunk), got, want)
		}
	}
	// Inferred schema: the rows read for inference come first, then the
	// parallel read from where inference stopped.
	path := write(t, "big.csv", typedCSV(2500, 9, false))
	sameRun(t, "inferred", readCSV(t, path, nil, Fail, 512), readCSV(t, path, nil, Fail, 0))
	// A projection: only some columns, out of header order.
	proj := arrow.NewSchema([]arrow.Field{typedSchema.Field(6), typedSchema.Field(2), typedSchema.Field(4)}, nil)
	sameRun(t, "projection", readCSV(t, path, proj, Fail, 300), readCSV(t, path, proj, Fail, 0))
}

func TestCSVParallelBadRowsAtTheirLines(t *testing.T) {
	text := typedCSV(2000, 3, false)
	lines := strings.Split(text, "\n")
	lines[700] = "oops," + lines[700]            // not an integer
	lines[1500] = "1,2"                          // too few fields
	lines[1800] = "1,2,3,4,\xff,t,2024-01-01,,x" // not UTF-8
	path := write(t, "bad.csv", strings.Join(lines, "\n"))
	for _, policy := range []OnError{Fail, Skip} {
		want := readCSV(t, path, typedSchema, policy, 0)
		if policy == Skip && len(want.messages) != 3 || policy == Fail && !strings.Contains(want.err, "bad.csv:701:") {
			t.Fatalf("scanner: %q %q", want.err, want.messages)
		}
		for _, chunk := range []int{50, 8192} {
			sameRun(t, fmt.Sprintf("policy %d, chunk %d", policy, chunk), readCSV(t, path, typedSchema, policy, chunk), want)
		}
	}
}

// A quote may hide a line break, so the read hands over to the scanner at
// the chunk where the first quote is, and the rows stay the scanner's.
func TestCSVParallelHandsQuotesToTheScanner(t *testing.T) {
	lines := strings.Split(typedCSV(1500, 5, false), "\n")
	lines[900] = `5,6,7.5,8,"a, ""quoted""` + "\n" + `name",t,2024-01-01,,x`
	lines[1200] = `5,6,7.5,8,"open,t,2024-01-01,,x`
	path := write(t, "q.csv", strings.Join(lines, "\n"))
	for _, policy := range []OnError{Fail, Skip} {
		want := readCSV(t, path, typedSchema, policy, 0)
		got := readCSV(t, path, typedSchema, policy, 1000)
		if !got.par || !got.seq {
			t.Fatalf("parallel %v, handed to the scanner %v", got.par, got.seq)
		}
		sameRun(t, fmt.Sprintf("policy %d", policy), got, want)
	}
}

// Closing in the middle stops the workers and releases what they parsed
// ahead (the checked allocator in readCSV would see a leak).
func TestCSVParallelCloseEarly(t *testing.T) {
	path := write(t, "c.csv", typedCSV(5000, 11, false))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r, err := OpenCSVTable(path, typedSchema, 64, Fail, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.chunkBytes = 2048
	rec, err := r.Next(mem)
	if err != nil || rec == nil {
		t.Fatal(rec, err)
	}
	rec.Release()
	r.Close()
}

func TestParseCSVTimeMatchesParseTime(t *testing.T) {
	for _, s := range []string{"1970-01-01", "1997-10-23 00:00:00.000", "2024-02-29T23:59:59.123456789", "1900-03-01 12:00:00.5",
		"0001-01-01 00:00:00", "1969-12-31 23:59:59.999999", "2261-12-31 23:59:59"} {
		want, err := ParseTime(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, unit := range []arrow.TimeUnit{arrow.Second, arrow.Millisecond, arrow.Microsecond, arrow.Nanosecond} {
			if unit == arrow.Nanosecond && want.Year() < 1678 {
				continue // not an int64 of nanoseconds
			}
			w, _ := arrow.TimestampFromTime(want, unit)
			if got, ok := parseCSVTime([]byte(s), unit); !ok || got != w {
				t.Errorf("%s in %s: %d %v, want %d", s, unit, got, ok, w)
			}
		}
	}
	for _, s := range []string{"2023-02-29", "2024-13-01", "2024-01-01 24:00:00", "2024-01-01 1:00:00", "2024-01-01 00:00:00.", "2024-01-01 00:00:00Z", "2024-1-01"} {
		if _, ok := parseCSVTime([]byte(s), arrow.Microsecond); ok {
			t.Errorf("%q: read, want it left to ParseTime", s)
		}
	}
}

// The parallel parse works for the reading query: its chunks are parsed
// as steps of the query's CPU share (dataflow.Helper) and charged to it.
// Before, they ran on every core outside any step, ungated and charged to
// no one: a query reading a large file took the processors from a small
// one beside it, whatever its share said.
func TestCSVParallelParseIsChargedToTheQuery(t *testing.T) {
	path := write(t, "t.csv", typedCSV(20000, 7, false))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r, err := OpenCSVTable(path, typedSchema, 256, Fail, &Report{})
	if err != nil {
		t.Fatal(err)
	}
	r.chunkBytes = 16 << 10
	// Beside another query: a query alone is charged nothing (its steps
	// read no clock, dataflow.CPU), as nothing is weighed against it.
	cpu := dataflow.NewCPU(0)
	share := cpu.Join("q")
	defer share.Leave()
	defer cpu.Join("other").Leave()
	r.UseCPU(share.Helper())
	rows := 0
	for {
		rec, err := r.Next(mem)
		if err != nil {
			t.Fatal(err)
		}
		if rec == nil {
			break
		}
		rows += int(rec.NumRows())
		rec.Release()
	}
	r.Close()
	if rows != 20000 || r.par == nil {
		t.Fatalf("%d rows, parallel %v", rows, r.par != nil)
	}
	if used := share.Used(); used <= 0 {
		t.Errorf("the query was charged %s for parsing 20,000 rows on its helpers", used)
	}
}

// A small file's parallel read takes a buffer the size of the file, not a
// whole chunk (1 MiB): each of 500 UNION ALL branches over a 400 KB file
// took 1 MiB, and the query 7 s of zeroing memory.
func TestCSVParallelBufferFitsASmallFile(t *testing.T) {
	text := typedCSV(200, 7, false)
	path := write(t, "small.csv", text)
	read := func() uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got := readCSV(t, path, typedSchema, Fail, csvChunkBytes)
		runtime.ReadMemStats(&after)
		if !got.par || len(got.rows) != 200 {
			t.Fatalf("parallel %v, %d rows", got.par, len(got.rows))
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	read() // warm: the plan's one-time costs
	if a := read(); a >= csvChunkBytes {
		t.Errorf("reading a %d-byte file allocated %d bytes: a whole chunk's buffer", len(text), a)
	}
}

// The splitter reads each chunk into the buffer of one the reader is done
// with: a file of many chunks makes only as many buffers as are in flight
// at once (the queue's, the one being cut, the reader's), not one a chunk,
// and the rows are still the scanner's (the test above reads every chunk
// size through the same reuse, lines cut across chunks included).
func TestCSVParallelReusesChunkBuffers(t *testing.T) {
	path := write(t, "many.csv", typedCSV(6000, 13, false))
	want := readCSV(t, path, typedSchema, Fail, 0)
	got := readCSV(t, path, typedSchema, Fail, 4096)
	if !got.par {
		t.Fatal("the read was not parallel")
	}
	sameRun(t, "chunks of 4096 bytes", got, want)
	chunks := len(typedCSV(6000, 13, false))/4096 + 1
	if bound := 2 * (got.queued + 2); got.buffers > bound || chunks < 3*bound {
		t.Errorf("%d chunks made %d buffers, want at most %d (the chunks in flight)", chunks, got.buffers, bound)
	}
	t.Logf("%d chunks made %d buffers", chunks, got.buffers)
}

// Cutting the file into chunks (a buffer zeroed, the file read into it,
// its lines counted) is the query's work as much as parsing them: it is a
// step of the query's share too. Ungated, it was a quarter of a worker's
// CPU under the abusive queries of #25 (profile of a worker process),
// charged to no one (about half of what a read spends). So most of the
// CPU the process spends reading is charged to the query: what is not is
// the reader's hand-out of records and, beside another query, the thread
// hand-offs of steps locked to their threads (their charges are then their
// threads' clocks alone: 0.73-0.81 of the process's CPU, beside two CPU
// hogs too, where an unlocked query alone was charged wall time, above 1;
// with the chunking uncharged, 0.58-0.59).
func TestCSVParallelChunkingIsChargedToTheQuery(t *testing.T) {
	path := write(t, "t.csv", typedCSV(100_000, 7, false))
	mem := memory.NewGoAllocator()
	r, err := OpenCSVTable(path, typedSchema, 4096, Fail, &Report{})
	if err != nil {
		t.Fatal(err)
	}
	// Beside another query, idle: a query alone is charged nothing.
	cpu := dataflow.NewCPU(0)
	share := cpu.Join("q")
	defer share.Leave()
	defer cpu.Join("other").Leave()
	r.UseCPU(share.Helper())
	// The collector's threads are nobody's query: off for the read, so
	// what the process spends is the read's.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	before := processCPU()
	for {
		rec, err := r.Next(mem)
		if err != nil {
			t.Fatal(err)
		}
		if rec == nil {
			break
		}
		rec.Release()
	}
	r.Close()
	spent := processCPU() - before
	if r.par == nil {
		t.Fatal("not read in parallel")
	}
	used := share.Used()
	t.Logf("charged %s of the %s the process spent reading (%.2f)", used, spent, float64(used)/float64(spent))
	if used < spent*2/3 {
		t.Errorf("the query was charged %s of the %s the process spent reading its file", used, spent)
	}
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// A chunk's parse refused anywhere by its query's budget (its first
// builders, an append, a batch's record or the next batch's builders)
// gives back everything it allocated: refused in its first builders, it
// kept those made before the refusal, and the budget counted them after
// the read had failed.
func TestCSVParseRefusedGivesBackWhatItMade(t *testing.T) {
	var text strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&text, "%d,customer number %07d,%d.%02d\n", i, i*7919%10_000_000, i%100_000, i%100)
	}
	data := []byte(text.String())
	r, err := OpenCSVTable(readAheadCSV(t, 10), readAheadSchema, 1024, Fail, &Report{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.plan == nil {
		t.Fatal("no typed plan")
	}
	refused := 0
	for limit := int64(1 << 10); limit <= 256<<10; limit += 3 << 10 {
		checked := memory.NewCheckedAllocator(memory.NewGoAllocator())
		budget := dataflow.NewMemory("query q", limit, nil)
		func() {
			defer func() {
				if p := recover(); p != nil {
					refused++
				}
			}()
			recs, _ := r.plan.parse(data, budget.Allocator(checked), 1024, func() {})
			for _, rec := range recs {
				rec.Release()
			}
		}()
		if n := checked.CurrentAlloc(); n != 0 {
			t.Errorf("under %s the parse left %d bytes allocated", dataflow.Bytes(limit), n)
		}
		budget.Close()
	}
	if refused == 0 {
		t.Fatal("no limit refused the parse")
	}
}
