package relaybench

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/relay/inproc"
	"github.com/tierflow/tierflow/relay/natsrelay"
)

// TestRunSmall runs the whole bench at a tiny size: every row is filled and
// the relay moved the bytes it says.
func TestRunSmall(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// A 1 MiB max payload makes the 5000-row batch (1.3 MB) travel in chunks.
	rows, err := Run(ctx, Options{Rows: []int{16, 5000}, MB: 1, Rounds: 1, Latency: 5, Allocator: mem, MaxPayload: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4", len(rows))
	}
	for _, r := range rows {
		if r.BatchesS <= 0 || r.RelayMBs <= 0 || r.RawMBs <= 0 || r.Ratio <= 0 || r.P50us <= 0 || r.P99us < r.P50us || r.Batches < 20 {
			t.Fatalf("row not filled: %+v", r)
		}
	}
	// 5000 rows of ~270 bytes is more than one max payload: chunked.
	if rows[2].BatchKB < 1300 {
		t.Fatalf("5000-row batch is %.0f KB on the wire", rows[2].BatchKB)
	}
	if _, err := Run(ctx, Options{Rows: []int{0}}); err == nil {
		t.Fatalf("zero rows accepted")
	}
}

func benchEnv(b *testing.B) *Env {
	env, err := NewEnv("", 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(env.Close)
	return env
}

// The Go benchmarks report MB/s over the same wire bytes; compare
// BenchmarkRelayNATS with BenchmarkRawNATS of the same size from one run
// (the ratio is what matters, not the absolute numbers).
var benchRows = []int{64, 1024, 4096}

func BenchmarkRelayNATS(b *testing.B) {
	env := benchEnv(b)
	for _, rows := range benchRows {
		b.Run(rowsName(rows), func(b *testing.B) {
			rec := Record(memory.DefaultAllocator, rows)
			defer rec.Release()
			a, c := natsPair(env)
			defer a.Close()
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			probe, err := RelayThroughput(ctx, a, c, rec, 1)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(probe.Bytes))
			b.ResetTimer()
			if _, err := RelayThroughput(ctx, a, c, rec, b.N); err != nil {
				b.Fatal(err)
			}
		})
	}
}

func BenchmarkRawNATS(b *testing.B) {
	env := benchEnv(b)
	for _, rows := range benchRows {
		b.Run(rowsName(rows), func(b *testing.B) {
			rec := Record(memory.DefaultAllocator, rows)
			defer rec.Release()
			a, c := natsPair(env)
			defer a.Close()
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			probe, err := RelayThroughput(ctx, a, c, rec, 1)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(probe.Bytes))
			b.ResetTimer()
			if _, err := RawThroughput(ctx, env.pub, env.sub, int(probe.Bytes), b.N, 32); err != nil {
				b.Fatal(err)
			}
		})
	}
}

func BenchmarkRelayInproc(b *testing.B) {
	for _, rows := range benchRows {
		b.Run(rowsName(rows), func(b *testing.B) {
			rec := Record(memory.DefaultAllocator, rows)
			defer rec.Release()
			tr := inproc.New(relay.Config{})
			defer tr.Close()
			b.ResetTimer()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			if _, err := RelayThroughput(ctx, tr, tr, rec, b.N); err != nil {
				b.Fatal(err)
			}
		})
	}
}

func natsPair(env *Env) (*natsrelay.Transport, *natsrelay.Transport) {
	return natsrelay.New(env.pub, natsrelay.Options{}), natsrelay.New(env.sub, natsrelay.Options{})
}

func rowsName(rows int) string { return "rows=" + strconv.Itoa(rows) }
