package progress

import (
	"errors"
	"reflect"
	"testing"
)

func mustTracker(t *testing.T, senders []int, outputs int, conn [][]bool) *Tracker {
	t.Helper()
	tr, err := NewTracker(senders, outputs, conn)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func check(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
}

func TestCountsKeepSortedAndRefuseNegative(t *testing.T) {
	var c Counts
	check(t, "empty min", c.Min(), Closed)
	for _, e := range []Epoch{5, 2, 9, 2} {
		if err := c.Add(e, 1); err != nil {
			t.Fatal(err)
		}
	}
	check(t, "min", c.Min(), Epoch(2))
	check(t, "count 2", c.Count(2), 2)
	check(t, "len", c.Len(), 3)
	_ = c.Add(2, -2)
	check(t, "min after drop", c.Min(), Epoch(5))
	if err := c.Add(2, -1); !errors.Is(err, ErrNoCapability) {
		t.Fatalf("negative count: got %v", err)
	}
	if err := c.Add(5, -2); !errors.Is(err, ErrNoCapability) {
		t.Fatalf("over-release: got %v", err)
	}
	check(t, "count 5 untouched", c.Count(5), 1)
}

// A source: holds a capability, downgrades it epoch by epoch, drops it.
func TestSourceCapabilityDrivesOutputFrontier(t *testing.T) {
	tr := mustTracker(t, nil, 1, nil)
	check(t, "no inputs: frontier", tr.Frontier(), Closed)
	check(t, "no capability, no inputs: closed", tr.OutputFrontier(0), Closed)
	if err := tr.Acquire(0); err != nil {
		t.Fatal(err)
	}
	check(t, "output at 0", tr.OutputFrontier(0), Epoch(0))
	check(t, "nothing announced yet", tr.Changes(nil), []Change(nil))
	// Downgrade 0 -> 3: acquire new, release old.
	_ = tr.Acquire(3)
	_ = tr.Release(0)
	check(t, "after downgrade", tr.Changes(nil), []Change{{0, 3}})
	check(t, "announced", tr.Announced(0), Epoch(3))
	check(t, "no repeat", tr.Changes(nil), []Change(nil))
	check(t, "not done while holding", tr.Done(), false)
	_ = tr.Release(3)
	check(t, "drop closes output", tr.Changes(nil), []Change{{0, Closed}})
	check(t, "done", tr.Done(), true)
	if err := tr.Release(3); !errors.Is(err, ErrNoCapability) {
		t.Fatalf("double release: %v", err)
	}
}

// An input fed by three senders (an exchange): the input frontier is the
// minimum of their announcements and only moves when the minimum does.
func TestInputFrontierIsMinOverSenders(t *testing.T) {
	tr := mustTracker(t, []int{3}, 1, nil)
	steps := []struct {
		sender   int
		f        Epoch
		advanced bool
		frontier Epoch
	}{
		{0, 5, false, 0},
		{1, 2, false, 0},
		{2, 4, true, 2},
		{1, 7, true, 4},
		{2, 4, false, 4}, // repeat: no-op
		{2, Closed, true, 5},
		{0, Closed, true, 7},
		{1, Closed, true, Closed},
	}
	for i, s := range steps {
		adv, err := tr.UpdateInput(0, s.sender, s.f)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		check(t, "advanced", adv, s.advanced)
		check(t, "frontier", tr.InputFrontier(0), s.frontier)
		check(t, "output follows input", tr.OutputFrontier(0), s.frontier)
	}
	check(t, "done", tr.Done(), true)
}

func TestRegressionAndBadPortsAreErrors(t *testing.T) {
	tr := mustTracker(t, []int{1}, 1, nil)
	if _, err := tr.UpdateInput(0, 0, 4); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.UpdateInput(0, 0, 3); !errors.Is(err, ErrRegress) {
		t.Fatalf("regress: %v", err)
	}
	if _, err := tr.UpdateInput(1, 0, 3); !errors.Is(err, ErrPort) {
		t.Fatalf("bad input: %v", err)
	}
	if _, err := tr.UpdateInput(0, 1, 3); !errors.Is(err, ErrPort) {
		t.Fatalf("bad sender: %v", err)
	}
	if err := tr.Acquire(Closed); !errors.Is(err, ErrBeforeFrontier) {
		t.Fatalf("capability at closed: %v", err)
	}
	if _, err := NewTracker([]int{1}, 2, [][]bool{{true}}); !errors.Is(err, ErrPort) {
		t.Fatalf("bad connectivity: %v", err)
	}
}

// Notifications: requested under a capability, delivered in epoch order once
// every input has passed the epoch, holding the output frontier until then.
func TestNotificationsWaitForAllInputs(t *testing.T) {
	tr := mustTracker(t, []int{1, 1}, 1, nil)
	// Data at epoch 2 arrives on input 0: the engine lends a capability.
	_ = tr.Acquire(2)
	if err := tr.RequestNotify(2); err != nil {
		t.Fatal(err)
	}
	if err := tr.RequestNotify(2); err != nil { // merges
		t.Fatal(err)
	}
	_ = tr.Acquire(5)
	_ = tr.RequestNotify(5)
	_ = tr.Release(5)
	_ = tr.Release(2) // the lent capabilities end with the callbacks
	check(t, "held by notifications", tr.Held(2)+tr.Held(5), 2)
	check(t, "pending", tr.PendingNotifications(), 2)
	if err := tr.RequestNotify(1); err == nil {
		t.Fatal("notification below every held capability accepted")
	}

	_, _ = tr.UpdateInput(0, 0, 10)
	if _, ok := tr.NextNotification(); ok {
		t.Fatal("delivered while input 1 is still at 0")
	}
	check(t, "output held back by input 1", tr.Changes(nil), []Change(nil))
	_, _ = tr.UpdateInput(1, 0, 3)
	e, ok := tr.NextNotification()
	check(t, "first notification", []any{e, ok}, []any{Epoch(2), true})
	if _, ok := tr.NextNotification(); ok {
		t.Fatal("epoch 5 delivered while input 1 is at 3")
	}
	// The notification's capability still holds output at 2 until released.
	check(t, "output held at 2", tr.OutputFrontier(0), Epoch(2))
	check(t, "announce 2", tr.Changes(nil), []Change{{0, 2}})
	_ = tr.Release(2)
	check(t, "announce 3", tr.Changes(nil), []Change{{0, 3}})
	_, _ = tr.UpdateInput(1, 0, Closed)
	e, ok = tr.NextNotification()
	check(t, "second notification", []any{e, ok}, []any{Epoch(5), true})
	check(t, "not done before release", tr.Done(), false)
	_ = tr.Release(5)
	check(t, "output now follows input 0", tr.Changes(nil), []Change{{0, 10}})
	_, _ = tr.UpdateInput(0, 0, Closed)
	check(t, "closed", tr.Changes(nil), []Change{{0, Closed}})
	check(t, "done", tr.Done(), true)
}

// Connectivity: an output not connected to an input does not wait for it.
func TestConnectivityLimitsWhatOutputsWaitFor(t *testing.T) {
	tr := mustTracker(t, []int{1, 1}, 2, [][]bool{{true, false}, {false, true}})
	_, _ = tr.UpdateInput(0, 0, 7)
	check(t, "only output 0 moves", tr.Changes(nil), []Change{{0, 7}})
	_, _ = tr.UpdateInput(1, 0, Closed)
	check(t, "output 1 closes independently", tr.Changes(nil), []Change{{1, Closed}})
	check(t, "frontier is min over inputs", tr.Frontier(), Epoch(7))
}

// An input with no senders is complete from the start.
func TestUnfedInputIsClosed(t *testing.T) {
	tr := mustTracker(t, []int{0, 1}, 1, nil)
	check(t, "input 0", tr.InputFrontier(0), Closed)
	check(t, "frontier", tr.Frontier(), Epoch(0))
}
