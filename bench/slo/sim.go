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
// load in the numbers. Each client's frames go one a batch at capture time;
// the rule reads the link as the relay's sender would (a relay.Meter fed the
// acks of the frames sent so far, its unacknowledged bytes and its oldest
// message on the wire, read on the virtual clock); a frame crosses the link
// behind the ones before it exactly as the oracle's do (relay.TransferEnd),
// then its variant's compute, and its ack comes back half a base round trip
// after it arrived. What the engine adds (decode, scheduling, the host's
// other work) is not in it: the engine run stays the judge of record, the
// simulation the judge of the rule.

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
func simulateAdaptive(tr *relay.Trace, clients, frames int, rate float64, slo time.Duration, attain float64, vs []oracleVariant) simRun {
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
		type wire struct {
			onLink, acked time.Time
			bytes         int
			compute       time.Duration
		}
		var q []wire // on the link or acknowledged later, in order
		free := start
		for k := 0; k < frames; k++ {
			at := start.Add(time.Duration(float64(k) / rate * float64(time.Second)))
			for len(q) > 0 && !q[0].acked.After(at) {
				m.Ack(q[0].bytes, q[0].onLink, q[0].acked)
				m.AckedMessages(1, q[0].acked)
				m.Residence(q[0].compute)
				q = q[1:]
			}
			if !free.After(at) {
				// An idle link carries a progress message in its base
				// round trip: what the sender's base estimate reads.
				m.AckEmpty(at.Add(-baseRTT), at)
			}
			var unacked int64
			for _, w := range q {
				unacked += int64(w.bytes)
			}
			m.Unacked(unacked)
			if len(q) > 0 {
				m.Oldest(q[0].onLink, q[0].bytes)
			} else {
				m.Oldest(time.Time{}, 0)
			}
			side := rule.Decide(at.UnixNano(), at.UnixNano(), []dataflow.LinkState{m.SnapshotAt(at).LinkState()}, 1)
			if side == 0 {
				run.Dropped++
				continue
			}
			i := bySide[side]
			v := vs[i]
			run.Sent[i]++
			payload := side * side * 4
			n := int(v.Bytes)
			m.Wire(n)
			m.Batch(1)
			rule.Sent(side, 1, int64(payload))
			from := at
			if free.After(from) {
				from = free
			}
			free = relay.TransferEnd(sh, from, n)
			compute := time.Duration(v.ComputeMs * float64(time.Millisecond))
			arrived := free.Add(baseRTT / 2)
			q = append(q, wire{onLink: from, acked: arrived.Add(baseRTT / 2), bytes: n, compute: compute})
			if arrived.Add(compute).Sub(at) <= slo {
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
		sim := simulateAdaptive(tr, o.clients, frames, o.rate, o.slo, dataflow.DefaultAttainment, vs)
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
