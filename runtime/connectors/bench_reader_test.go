package connectors

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/operators/sources"
)

// sliceInput hands out messages from memory as a core NATS subscription
// would (no header), then an end marker.
type sliceInput struct {
	msgs [][]byte
	i    int
}

func (s *sliceInput) next(context.Context) (message, error) {
	if s.i == len(s.msgs) {
		return message{header: nats.Header{EndHeader: []string{"1"}}}, nil
	}
	s.i++
	return message{data: s.msgs[s.i-1]}, nil
}

func (s *sliceInput) close() error { return nil }

// BenchmarkReaderPerMessage reads 65,536 Nexmark bids (JSON, auction,
// price and dateTime read of 7 fields) through a core NATS source's reader
// (batches, headers, counts, decoding) and, in turns, decodes them alone
// into the same columns (RowBuilder.AppendJSON), and unmarshals them with
// encoding/json into a struct of those columns (what bench ingest's
// decoding subscriber does: a fixed baseline); reader/decode and
// decode/encoding_json are ratios of their CPU times on this goroutine's
// locked thread: what the reader costs beyond decoding, and decoding
// against the standard library's.
func BenchmarkReaderPerMessage(b *testing.B) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "auction", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "price", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "dateTime", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	}, nil)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	msgs := make([][]byte, 1<<16)
	for i := range msgs {
		msgs[i] = fmt.Appendf(nil, `{"auction":%d,"bidder":%d,"price":%d,"channel":"Google","url":"https://www.nexmark.com/abcde/fghij/item.htm?query=1","dateTime":%q,"extra":"qwertyui"}`,
			1000+i%977, 1000+i%1319, 100+i*7919%1000000, base.Add(time.Duration(i)*100*time.Microsecond).Format(time.RFC3339Nano))
	}
	mem := memory.NewGoAllocator()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var took [3]time.Duration
	for range b.N {
		start := threadCPU()
		for _, m := range msgs {
			var v struct {
				Auction  int64     `json:"auction"`
				Price    int64     `json:"price"`
				DateTime time.Time `json:"dateTime"`
			}
			if err := json.Unmarshal(m, &v); err != nil {
				b.Fatal(err)
			}
		}
		took[2] += threadCPU() - start

		start = threadCPU()
		rb := sources.NewRowBuilder(mem, schema)
		for i, m := range msgs {
			if err := rb.AppendJSON(m); err != nil {
				b.Fatal(err)
			}
			if i%4096 == 4095 {
				rb.Finish().Release()
			}
		}
		rb.Release()
		took[0] += threadCPU() - start

		start = threadCPU()
		r := &reader{c: SourceConfig{Subject: "bids", Schema: schema, MaxRows: 4096, MaxDelay: time.Hour, Stats: &Stats{}},
			f: jsonFormat(), in: &sliceInput{msgs: msgs}, ctx: context.Background()}
		rows := 0
		for {
			rec, err := r.Next(mem)
			if err != nil {
				b.Fatal(err)
			}
			if rec == nil {
				break
			}
			rows += int(rec.NumRows())
			rec.Release()
		}
		r.Close()
		took[1] += threadCPU() - start
		if rows != len(msgs) {
			b.Fatalf("%d rows of %d", rows, len(msgs))
		}
	}
	b.ReportMetric(float64(took[1])/float64(took[0]), "reader/decode")
	b.ReportMetric(float64(took[0])/float64(took[2]), "decode/encoding_json")
	b.ReportMetric(float64(took[0].Nanoseconds())/float64(b.N*len(msgs)), "decode_ns/msg")
	b.ReportMetric(float64(took[1].Nanoseconds())/float64(b.N*len(msgs)), "reader_ns/msg")
}

// threadCPU is the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID).
func threadCPU() time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTimeID = 3
	if _, _, e := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}
