package relay

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// TestRawCredited: every byte arrives, and a window smaller than the
// stream makes the publisher wait on the counts that come back (a count
// that never came would time it out).
func TestRawCredited(t *testing.T) {
	env := benchEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tp, err := RawCreditedThroughput(ctx, env.pub, env.sub, 1000, 101, 4)
	if err != nil {
		t.Fatal(err)
	}
	if tp.Bytes != 101000 || tp.Batches != 101 {
		t.Errorf("%+v", tp)
	}
}

// BenchmarkRawNATSCredited is BenchmarkRawNATS at 64 rows with its window
// kept over NATS (RawCreditedThroughput), beside BenchmarkRawNATS's counter in
// process, at raw's window (32) and the relay's (117 at 64 rows): what
// the in-process baseline's free flow control is worth against a relay
// whose credit crosses NATS.
func BenchmarkRawNATSCredited(b *testing.B) {
	env := benchEnv(b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	size := wireBytes(ctx, b, env, 64)
	for _, w := range []int{32, 117} {
		for _, over := range []bool{false, true} {
			name := "window=" + strconv.Itoa(w) + "/counter"
			if over {
				name = "window=" + strconv.Itoa(w) + "/nats"
			}
			b.Run(name, func(b *testing.B) {
				b.SetBytes(int64(size))
				b.ResetTimer()
				var tp Throughput
				var err error
				if over {
					tp, err = RawCreditedThroughput(ctx, env.pub, env.sub, size, b.N, w)
				} else {
					tp, err = RawThroughput(ctx, env.pub, env.sub, size, b.N, w)
				}
				if err != nil {
					b.Fatal(err)
				}
				reportCPU(b, tp)
			})
		}
	}
}
