package dataaware_test

import (
	"strings"
	"testing"
)

// TestSneakPeekPolicyOnTheEngine: the SneakPeek re-plan policy as the
// coordinator runs it (runtime/policy.SneakPeek, `run --replan-data-aware`):
// it finds the DATA AWARE query's model call over a JetStream stream, taps
// the stream's subject with an estimator of its own and, when the class
// mix shifts from footwear and bags to tops, re-plans the query to the
// variant that meets ACCURACY on the new mix (cnn), at an epoch, with
// every row written once. A small form of TestLiveMixShiftSwitchesVariant
// (600 rows a phase).
func TestSneakPeekPolicyOnTheEngine(t *testing.T) {
	t.Parallel() // a cluster of its own, paced by its publisher: it waits beside the live test
	x, y := loadIDX(t, "test")
	var shoes, tops []int
	for i, l := range y {
		switch l {
		case 5, 7, 8, 9:
			shoes = append(shoes, i)
		case 0, 2, 3, 4:
			tops = append(tops, i)
		}
	}
	const n = 600
	shoes, tops = shoes[:n], tops[:n]
	ids := append(append(append(append([]int(nil), shoes...), tops...), tops...), tops...)
	run := runLiveWith(t, true, x, y, ids, true)
	if len(run.rows) != len(ids) {
		t.Fatalf("%d rows of %d (replans %v)", len(run.rows), len(ids), run.replans)
	}
	switched := false
	for _, r := range run.replans {
		switched = switched || strings.Contains(r, "class mix of classify moved") && strings.Contains(r, "classify: ") && strings.Contains(r, "-> cnn")
	}
	if !switched {
		t.Fatalf("no re-plan by the class mix switched classify to cnn: %v", run.replans)
	}
	acc, m := accuracy(run.rows, n+2*n, len(ids))
	t.Logf("last pass (%d rows) at %.2f%%; replans %v", m, acc, run.replans)
	if acc < 85 {
		t.Fatalf("the last pass over the tops measures %.2f%%, want >= 85 (replans %v)", acc, run.replans)
	}
}
