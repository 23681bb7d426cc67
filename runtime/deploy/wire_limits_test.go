package deploy

import "testing"

// A lost worker's last heartbeat blames a query only when the worker was
// at least half full and that query held most of it (#25: a poison query
// is failed, not placed on the next worker to kill it too).
func TestWorkerMemoryCulprit(t *testing.T) {
	const gib = 1 << 30
	for _, c := range []struct {
		name string
		m    *WorkerMemory
		want string
	}{
		{"no report", nil, ""},
		{"nothing held", &WorkerMemory{GuardBytes: 8 * gib, HeapBytes: 7 * gib}, ""},
		{"one query holds most of a full guard", &WorkerMemory{GuardBytes: 8 * gib, HeldBytes: 6 * gib, HeapBytes: 7 * gib, Top: "big", TopBytes: 5 * gib}, "big"},
		{"the worker was mostly empty", &WorkerMemory{GuardBytes: 8 * gib, HeldBytes: 2 * gib, HeapBytes: 3 * gib, Top: "q", TopBytes: 2 * gib}, ""},
		{"no query holds most", &WorkerMemory{GuardBytes: 8 * gib, HeldBytes: 6 * gib, HeapBytes: 7 * gib, Top: "q", TopBytes: 2 * gib}, ""},
		{"no guard: the machine's memory", &WorkerMemory{HeldBytes: 9 * gib, HeapBytes: 10 * gib, Top: "big", TopBytes: 9 * gib}, "big"},
	} {
		if got := c.m.Culprit(16 * gib); got != c.want {
			t.Errorf("%s: blamed %q, want %q", c.name, got, c.want)
		}
	}
}
