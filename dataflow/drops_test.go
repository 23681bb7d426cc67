package dataflow

import "testing"

// TestDropsByEpoch: drops of rows whose epoch is known are kept by epoch,
// so a change of generation can count each epoch's once: a part resumed at
// an epoch ignores its drops below it (From), and what a stopped part
// dropped from the next generation's resume epoch on can be taken off
// (DropsSince, Less).
func TestDropsByEpoch(t *testing.T) {
	var d Drops
	d.From(10)
	d.AddAt(DropDeadline, 5, 3) // replayed below the resume epoch: the earlier generation's
	d.AddAt(DropDeadline, 10, 2)
	d.AddAt(DropDeadline, 20, 1)
	d.Add(DropLate, 4) // no epoch: counted, not by epoch
	if got := d.Snapshot(); got[DropDeadline] != 3 || got[DropLate] != 4 {
		t.Fatalf("snapshot %v, want 3 deadline (not the 3 below epoch 10), 4 late", got)
	}
	by := d.ByEpoch()
	if len(by) != 2 || by[10][DropDeadline] != 2 || by[20][DropDeadline] != 1 {
		t.Fatalf("by epoch %v, want 10: 2, 20: 1", by)
	}
	since := DropsSince(by, 20)
	if kept := d.Snapshot().Less(since); kept[DropDeadline] != 2 || kept[DropLate] != 4 {
		t.Fatalf("kept below epoch 20: %v, want 2 deadline, 4 late", kept)
	}
	if kept := d.Snapshot().Less(DropsSince(by, 10)); kept[DropDeadline] != 0 || len(kept) != 1 {
		t.Fatalf("kept below epoch 10: %v, want only the 4 late", kept)
	}
}

// TestDropsByEpochIsBounded: past maxDropEpochs epochs the oldest are
// kept together, below every resume epoch, and the total stays whole.
func TestDropsByEpochIsBounded(t *testing.T) {
	var d Drops
	for e := Epoch(1); e <= maxDropEpochs+10; e++ {
		d.AddAt(DropDeadline, e, 1)
	}
	d.AddAt(DropDeadline, 1, 1) // older than every epoch kept apart
	by := d.ByEpoch()
	if len(by) != maxDropEpochs {
		t.Fatalf("%d epochs kept apart, want %d", len(by), maxDropEpochs)
	}
	if _, ok := by[10]; ok {
		t.Fatalf("epoch 10 is kept apart: the oldest should have gone")
	}
	if got := d.Snapshot()[DropDeadline]; got != maxDropEpochs+11 {
		t.Fatalf("total %d, want %d", got, maxDropEpochs+11)
	}
	if got := DropsSince(by, maxDropEpochs+10)[DropDeadline]; got != 1 {
		t.Fatalf("since the newest epoch: %d, want 1", got)
	}
}
