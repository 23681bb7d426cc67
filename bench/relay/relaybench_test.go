package relay

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/relay/inproc"
	"github.com/tierflow/tierflow/relay/natsrelay"
)

// The test binary doubles as the peer process: run with these variables
// set it serves as ServePeer and exits.
const (
	envPeerURL     = "RELAYBENCH_TEST_PEER_URL"
	envPeerControl = "RELAYBENCH_TEST_PEER_CONTROL"
)

func TestMain(m *testing.M) {
	if url := os.Getenv(envPeerURL); url != "" {
		if err := ServePeer(context.Background(), url, os.Getenv(envPeerControl), os.Stdin); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func testPeer(url, control string) *exec.Cmd {
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(os.Environ(), envPeerURL+"="+url, envPeerControl+"="+control)
	return c
}

// TestRunAcrossProcesses runs the receiving ends in a real second process:
// the peer saw every batch, row and byte (Run checks and fails otherwise),
// and the across-process rows carry ratios and latencies of their own.
func TestRunAcrossProcesses(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	// A guard against a hang, not a bound on speed: alone it takes about
	// 6 s, beside two CPU hogs on two cores more than 20 (main 2fdc0a2
	// too).
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var ticks []string
	o := Options{Rows: []int{16, 5000}, MB: 1, Rounds: 2, Latency: 5, Allocator: mem, MaxPayload: 1 << 20,
		Peer: testPeer, Tick: func(what string) { ticks = append(ticks, what) }}
	rows, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 6 {
		t.Fatalf("%d rows, want 6 (nats and inproc in process, nats across, per size)", len(rows))
	}
	if len(ticks) != o.Steps() || o.Steps() != 2*2*3 {
		t.Errorf("%d ticks, Steps says %d: %q", len(ticks), o.Steps(), ticks)
	}
	for i, want := range []string{ModeInProcess, ModeInProcess, ModeProcesses} {
		for _, r := range []Row{rows[i], rows[3+i]} {
			if r.Mode != want {
				t.Errorf("row %s: mode %q, want %q", r.Case, r.Mode, want)
			}
		}
	}
	for _, r := range []Row{rows[2], rows[5]} {
		if r.Backend != "nats" || r.Batches < 20 || r.RelayMBs <= 0 || r.RawMBs <= 0 || r.CPUusMB <= 0 || r.RawCPUusMB <= 0 {
			t.Fatalf("across-process row not filled: %+v", r)
		}
		if d := r.Ratio - r.RelayMBs/r.RawMBs; d > 1e-9 || d < -1e-9 {
			t.Errorf("ratio %v is not relay/raw %v/%v", r.Ratio, r.RelayMBs, r.RawMBs)
		}
		if r.P50us <= 0 || r.P99us < r.P50us || r.RawP50us <= 0 || r.RawP99us < r.RawP50us {
			t.Errorf("latencies not filled: %+v", r)
		}
		if d := r.AddedP99s - (r.P99us - r.RawP99us); d > 1e-9 || d < -1e-9 {
			t.Errorf("added p99 %v is not relay - raw", r.AddedP99s)
		}
	}
	if rows[5].BatchKB != rows[3].BatchKB || rows[5].BatchKB < 1300 {
		t.Errorf("across processes moved %.0f KB batches, in process %.0f", rows[5].BatchKB, rows[3].BatchKB)
	}
}

// TestPeerFailure: a peer that dies is an error naming it, not a hang.
func TestPeerFailure(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dead := func(url, control string) *exec.Cmd { return exec.Command(os.Args[0], "-test.run=^$", "-no-such-flag") }
	_, err := Run(ctx, Options{Rows: []int{16}, MB: 1, Rounds: 1, Latency: 2, Peer: dead, Modes: []string{"processes"}})
	if !errors.Is(err, ErrPeer) {
		t.Fatalf("got %v, want ErrPeer", err)
	}
	if _, err := Run(ctx, Options{Rows: []int{16}, Modes: []string{"processes"}}); !errors.Is(err, ErrBadOptions) {
		t.Fatalf("processes without a peer: %v", err)
	}
	if _, err := Run(ctx, Options{Rows: []int{16}, Modes: []string{"sideways"}}); !errors.Is(err, ErrBadOptions) {
		t.Fatalf("unknown mode: %v", err)
	}
}

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
		if r.Mode != ModeInProcess {
			t.Fatalf("mode %q without a peer", r.Mode)
		}
		if r.BatchesS <= 0 || r.RelayMBs <= 0 || r.RawMBs <= 0 || r.Ratio <= 0 || r.P50us <= 0 || r.P99us < r.P50us || r.Batches < 20 {
			t.Fatalf("row not filled: %+v", r)
		}
	}
	// The NATS row of a batch that fits one message carries the baseline
	// that encodes and decodes it; a chunked batch's and the in-process
	// backend's rows do not.
	for i, r := range rows {
		if i == 0 {
			if r.RawIPCMBs <= 0 || r.IPCRatio != r.RelayMBs/r.RawIPCMBs {
				t.Errorf("%s: raw with Arrow IPC %v MB/s, ratio %v", r.Case, r.RawIPCMBs, r.IPCRatio)
			}
			// And raw NATS with its window kept over NATS, as the relay's.
			if r.RawCreditedMBs <= 0 || r.RawCreditedCPUusMB <= 0 || r.CreditedRatio != r.RelayMBs/r.RawCreditedMBs {
				t.Errorf("%s: raw with its window over NATS %v MB/s, ratio %v", r.Case, r.RawCreditedMBs, r.CreditedRatio)
			}
		} else if r.RawIPCMBs != 0 || r.IPCRatio != 0 || r.RawCreditedMBs != 0 || r.CreditedRatio != 0 {
			t.Errorf("%s (%.0f KB): raw with Arrow IPC or with its window over NATS filled", r.Case, r.BatchKB)
		}
	}
	// The relay's window grows for the 16-row batch and not for the 5000-row
	// one (32 of those are more than 2 MiB): raw NATS runs again with the
	// relay's in-flight bytes only for the first.
	if r := rows[0]; r.RawWindow != relay.DefaultWindow || r.SameWindow <= r.RawWindow || r.RawSameMBs <= 0 || r.SameRatio != r.RelayMBs/r.RawSameMBs || r.RawSameCPUusMB <= 0 {
		t.Errorf("%s: raw %d in flight, again with %d: %v MB/s, ratio %v", r.Case, r.RawWindow, r.SameWindow, r.RawSameMBs, r.SameRatio)
	}
	if r := rows[2]; r.RawWindow != relay.DefaultWindow || r.SameWindow != 0 || r.RawSameMBs != 0 || r.SameRatio != 0 {
		t.Errorf("%s: raw again with %d in flight: %v MB/s", r.Case, r.SameWindow, r.RawSameMBs)
	}
	// 5000 rows of ~270 bytes is more than one max payload: chunked.
	if rows[2].BatchKB < 1300 {
		t.Fatalf("5000-row batch is %.0f KB on the wire", rows[2].BatchKB)
	}
	if _, err := Run(ctx, Options{Rows: []int{0}}); err == nil {
		t.Fatalf("zero rows accepted")
	}
}

// TestRawIPCThroughput: the baseline that encodes and decodes moves every
// batch, counts the bytes that arrived, and leaks nothing; a batch over the
// server's max payload is an error naming it, not a hang.
func TestRawIPCThroughput(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	env, err := NewEnv("", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rec := Record(mem, 64)
	defer rec.Release()
	got, err := RawIPCThroughput(ctx, env.pub, env.sub, mem, rec, 300, 8)
	if err != nil {
		t.Fatal(err)
	}
	if got.Batches != 300 || got.Bytes < 300*64*270 || got.Elapsed <= 0 {
		t.Fatalf("moved %d batches, %d bytes in %v", got.Batches, got.Bytes, got.Elapsed)
	}
	big := Record(mem, 5000) // 1.3 MB, over the 1 MiB max payload
	defer big.Release()
	if _, err := RawIPCThroughput(ctx, env.pub, env.sub, mem, big, 2, 8); !errors.Is(err, ErrBadOptions) {
		t.Fatalf("a batch over the max payload: %v, want ErrBadOptions", err)
	}
}

func benchEnv(b testing.TB) *Env {
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
	benchNATS(b, func(ctx context.Context, env *Env, a, c relay.Transport, rec arrow.Record, _ int, n int) (Throughput, error) {
		return RelayThroughput(ctx, a, c, rec, n)
	})
}

func BenchmarkRawNATS(b *testing.B) {
	benchNATS(b, func(ctx context.Context, env *Env, _, _ relay.Transport, _ arrow.Record, bytes int, n int) (Throughput, error) {
		return RawThroughput(ctx, env.pub, env.sub, bytes, n, 32)
	})
}

// benchNATS runs move over a relay pair on the embedded server for every
// batch size, with the wire bytes of one relayed batch as the byte count, so
// that the relay and raw benchmarks report MB/s over the same bytes.
func benchNATS(b *testing.B, move func(ctx context.Context, env *Env, a, c relay.Transport, rec arrow.Record, bytes, n int) (Throughput, error)) {
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
			size := wireBytes(ctx, b, env, rows)
			b.SetBytes(int64(size))
			b.ResetTimer()
			t, err := move(ctx, env, a, c, rec, size, b.N)
			if err != nil {
				b.Fatal(err)
			}
			reportCPU(b, t)
		})
	}
}

// BenchmarkRawIPCNATS is bare NATS for a user who encodes and decodes
// the Arrow batch (RawIPCThroughput): what the relay adds over that is its
// protocol.
func BenchmarkRawIPCNATS(b *testing.B) {
	benchNATS(b, func(ctx context.Context, env *Env, _, _ relay.Transport, rec arrow.Record, _ int, n int) (Throughput, error) {
		return RawIPCThroughput(ctx, env.pub, env.sub, memory.DefaultAllocator, rec, n, 32)
	})
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

// reportCPU adds the process CPU time per batch, which a busy machine
// disturbs less than the wall clock.
func reportCPU(b *testing.B, t Throughput) {
	b.ReportMetric(float64(t.CPU.Nanoseconds())/float64(t.Batches), "cpu-ns/op")
}

func natsPair(env *Env) (*natsrelay.Transport, *natsrelay.Transport) {
	return natsrelay.New(env.pub, natsrelay.Options{}), natsrelay.New(env.sub, natsrelay.Options{})
}

func rowsName(rows int) string { return "rows=" + strconv.Itoa(rows) }

// wireBytes is what one relayed batch of rows costs on the wire, probed
// over a relay pair of its own: the byte count that the relay and the raw
// benchmarks report MB/s over.
func wireBytes(ctx context.Context, tb testing.TB, env *Env, rows int) int {
	tb.Helper()
	rec := Record(memory.DefaultAllocator, rows)
	defer rec.Release()
	a, c := natsPair(env)
	defer a.Close()
	defer c.Close()
	probe, err := RelayThroughput(ctx, a, c, rec, 1)
	if err != nil {
		tb.Fatal(err)
	}
	return int(probe.Bytes)
}
