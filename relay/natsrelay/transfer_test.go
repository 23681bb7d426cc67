package natsrelay

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"
)

// TestTransferRateOfSmallMessages: small messages' acks are mostly round
// trip, so their plain estimate (bytes over round trip) sits under the
// shaped rate; with the round trip of the progress messages (no payload)
// taken out of each sample the estimate is the link's own 800 kbit/s.
// A loaded machine only lowers the estimate (beside two CPU hogs 1 run in 5
// read 43941 B/s; at load 25, 3 runs in a row under 70000), so the test takes
// the first of five runs that meets the bounds
// (TestAcksEstimateTheShapedBandwidth does the same).
func TestTransferRateOfSmallMessages(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var problems []string
	for run := 1; run <= 5; run++ {
		if problems = transferRun(t, mem, run); len(problems) == 0 {
			return
		}
	}
	t.Errorf("in 5 runs of 5: %s", strings.Join(problems, "; "))
}

// transferRun is one run of TestTransferRateOfSmallMessages on a link of
// its own; it returns what missed the bounds.
func transferRun(t *testing.T, mem memory.Allocator, run int) (problems []string) {
	snd, r, start := shapedPair(t, mem, "t_s,kbit_s\n0,800\n10,800\n")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rec := bytesRecord(mem, 400)
	defer rec.Release()
	go drainReceiver(ctx, r)
	for e := uint64(1); time.Since(start) < 1500*time.Millisecond; e++ {
		if err := snd.SendData(ctx, e, rec); err != nil {
			t.Fatal(err)
		}
		if err := snd.SendProgress(ctx, e+1); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // a stream's pace, not a backlog
	}
	sent := snd.Stats().Batches
	waitFor(t, 5*time.Second, func() bool { return snd.Stats().Acks >= sent })
	st := snd.Stats()
	t.Logf("run %d: acks %.0f B/s, transfer %.0f B/s (latest %.0f), base rtt %v, srtt %v", run, st.AckBandwidthBps, st.TransferBps, st.LastTransferBps, st.BaseRTT, st.SRTT)
	if st.BaseRTT <= 0 || st.TransferBps <= 0 {
		t.Fatalf("no base round trip (%v) or transfer rate (%v)", st.BaseRTT, st.TransferBps)
	}
	if st.TransferBps < 0.7*100_000 || st.TransferBps > 1.3*100_000 {
		problems = append(problems, fmt.Sprintf("at 800 kbit/s (100000 B/s) the transfer estimate was %.0f B/s", st.TransferBps))
	}
	if st.TransferBps < st.AckBandwidthBps {
		problems = append(problems, fmt.Sprintf("the transfer estimate %.0f is under the acks' %.0f", st.TransferBps, st.AckBandwidthBps))
	}
	return problems
}
