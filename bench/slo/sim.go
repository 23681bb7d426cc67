package slo

import (
	"fmt"
	"time"

	"github.com/tierflow/tierflow/bench"
	"github.com/tierflow/tierflow/bench/slo/harness"
	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/relay"
)

// The simulated judge: the adapt step's side rule (ml.SideRule, the code the
// engine runs) driven in virtual time over the oracle's link, so that the
// rule is judged on many traces in seconds, and with none of the host's
// load in the numbers. The link is the relay's as the engine shapes it
// (natsrelay's sender): a batch's side is chosen when the adapt step takes
// it, and the step hands it to the link synchronously (dataflow's Emit), so
// the next batch waits, at the source, until the link has carried this one
// (the shaped sender returns at the end of the batch's transfer,
// relay.TransferEnd, and only then publishes it); a batch is among the
// sender's unacknowledged bytes from that publish until its ack, a base
// round trip later, its oldest-sent time the moment it got the link. So a
// queue behind a slow frame is the batches' age when they are decided, not
// bytes on the wire. The rule reads the link through a relay.Meter fed as
// the sender feeds it, on the virtual clock; a batch's result comes half a
// base round trip after its transfer, plus its variant's compute. What the
// engine adds (decode, scheduling, the host's other work) is not in it: the
// engine run stays the judge of record, the simulation the judge of the rule.
//
// A real link's sender does not block: a publish lands in the client's and
// the kernel's buffers and the step goes on, so a batch is decided at
// capture and queues on the wire behind the ones before, its bytes among the
// unacknowledged from the start (queued, --sim-sender queued). The rule must
// hold on both.

// simRun is the rule's run over a trace: its misses, its accuracy over the
// frames in time (each variant at the accuracy vs gives it), its drops and
// frames sent at each variant (smallest first, as vs).
type simRun struct {
	oracleRun
	Dropped int
	Sent    []int
}

// simulateAdaptive replays clients' frames (each offset i/N of a period into
// tr, as the bench shapes them) through the side rule for a latency SLO met
// with probability attain; vs are the size family, smallest side first.
func simulateAdaptive(tr *relay.Trace, clients, frames int, rate float64, slo time.Duration, attain float64, vs []oracleVariant, queued bool) simRun {
	start := time.Unix(0, 0)
	const baseRTT = time.Millisecond // the oracle's
	sides := make([]int, len(vs))
	bySide := map[int]int{}
	for i, v := range vs {
		sides[len(vs)-1-i] = v.Side
		bySide[v.Side] = i
	}
	run := simRun{oracleRun: oracleRun{Name: "adaptive (simulated)"}, Sent: make([]int, len(vs))}
	var inTime int
	var correct float64
	for c := 0; c < clients; c++ {
		sh := relay.TraceShaper{Trace: tr, Start: start, Offset: time.Duration(c) * tr.Period / time.Duration(clients)}
		top := vs[len(vs)-1]
		rule := ml.NewSideRule(sides, 1, 4, slo, time.Duration(top.ComputeMs*float64(time.Millisecond)), attain)
		m := relay.NewMeter(relay.LinkID{}, relay.Send)
		// unacked are the batches published and not yet acknowledged,
		// oldest first: when each got the link, its ack, its bytes.
		type wire struct {
			onLink, acked time.Time
			bytes         int
		}
		var unacked []wire
		free := start // when the link is done with the batches sent so far
		for k := 0; k < frames; k++ {
			at := start.Add(time.Duration(float64(k) / rate * float64(time.Second)))
			now := at
			if !queued && free.After(now) {
				now = free // the batch waited at the source for the link
			}
			for len(unacked) > 0 && !unacked[0].acked.After(now) {
				w := unacked[0]
				m.Ack(w.bytes, w.onLink, w.acked)
				m.AckedMessages(1, w.acked)
				unacked = unacked[1:]
			}
			var bytes int64
			for _, w := range unacked {
				bytes += int64(w.bytes)
			}
			m.Unacked(bytes)
			if len(unacked) > 0 {
				m.Oldest(unacked[0].onLink, unacked[0].bytes)
			} else {
				m.Oldest(time.Time{}, 0)
				// An idle link's last progress message, acked in its base
				// round trip: what the sender's base estimate reads.
				m.AckEmpty(now.Add(-baseRTT), now)
			}
			side := rule.Decide(now.UnixNano(), at.UnixNano(), []dataflow.LinkState{m.SnapshotAt(now).LinkState()}, 1)
			if side == 0 {
				run.Dropped++
				continue
			}
			i := bySide[side]
			v := vs[i]
			run.Sent[i]++
			n := int(v.Bytes)
			m.Wire(n)
			m.Batch(1)
			rule.Sent(side, 1, int64(side*side*4))
			onLink := now
			if free.After(onLink) {
				onLink = free // queued behind the batches on the wire
			}
			free = relay.TransferEnd(sh, onLink, n)
			compute := time.Duration(v.ComputeMs * float64(time.Millisecond))
			m.Residence(compute)
			unacked = append(unacked, wire{onLink: onLink, acked: free.Add(baseRTT), bytes: n})
			if free.Add(baseRTT/2).Add(compute).Sub(at) <= slo {
				inTime++
				correct += v.Accuracy
			}
		}
	}
	run.SLOMissRate = round4(1 - float64(inTime)/float64(clients*frames))
	if inTime > 0 {
		run.Accuracy = round2(correct / float64(inTime))
	}
	return run
}

// simulateTraces judges the side rule on every trace as the engine's runs
// are judged (judge): the static policies are the oracle's static runs
// (the same link model), adaptive the simulated rule, each frame it sent
// weighed at its variant's accuracy.
func simulateTraces(o sloOptions, variants []harness.Variant, trs []*relay.Trace, progress func(k int, tr *relay.Trace)) ([]sloPolicyRow, []sloBoundRow, []sloVerdictRow) {
	vs := make([]oracleVariant, len(variants))
	for i, v := range variants {
		vs[i] = oracleVariant{Name: v.Name, Side: v.Side, Bytes: float64(v.Side*v.Side*4) + frameOverhead, Accuracy: round2(100 * v.Accuracy)}
		if len(v.BatchMs) > 0 {
			vs[i].ComputeMs = v.BatchMs[0]
		}
	}
	var rows []sloPolicyRow
	var bounds []sloBoundRow
	var verdicts []sloVerdictRow
	for k, tr := range trs {
		if progress != nil {
			progress(k, tr)
		}
		frames := sloFrames(o, tr)
		static, _, _ := oracleBounds(tr, o.clients, frames, o.rate, o.slo, vs)
		result := func(policy string, r oracleRun) *harness.Result {
			return &harness.Result{Policy: policy, Clients: o.clients, SLOMs: float64(o.slo) / float64(time.Millisecond),
				Requests: o.clients * frames, SLOMissRate: r.SLOMissRate, Accuracy: r.Accuracy}
		}
		var runs []*harness.Result
		for _, p := range []string{"static-smallest", "static-middle", "static-largest"} {
			runs = append(runs, result(p, static[staticIndex(p, len(vs))]))
		}
		sim := simulateAdaptive(tr, o.clients, frames, o.rate, o.slo, dataflow.DefaultAttainment, vs, o.simSender == "queued")
		a := result("adaptive", sim.oracleRun)
		a.Ran = map[string]int64{}
		for i, n := range sim.Sent {
			a.Ran[vs[i].Name] = int64(n)
		}
		runs = append(runs, a)
		b, v := judge(o, tr, variants, runs)
		for _, r := range runs {
			rows = append(rows, policyRow(tr.Name, r))
		}
		bounds, verdicts = append(bounds, b...), append(verdicts, v)
	}
	return rows, bounds, verdicts
}

// runBenchSLOSimulated is bench slo --simulate: every trace judged with
// the side rule in virtual time (simulateAdaptive), no engine run.
func runBenchSLOSimulated(benv *bench.Env, o sloOptions, trs []*relay.Trace) error {
	variants, err := sloVariants(o)
	if err != nil {
		return err
	}
	fmt.Fprintln(benv.Err, "simulated: the adapt step's side rule in virtual time over the oracle's link model (no engine; the engine run is the judge of record)")
	rows, bounds, verdicts := simulateTraces(o, variants, trs, nil)
	return printSLOEngine(benv, o, rows, bounds, verdicts, nil, nil)
}
