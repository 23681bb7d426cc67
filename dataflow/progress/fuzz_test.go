package progress

import (
	"testing"
)

// model is the obviously correct tracker: everything recomputed from
// scratch, as the definitions in the package doc say.
type model struct {
	senders [][]Epoch
	conn    [][]bool
	caps    map[Epoch]int
	notify  map[Epoch]bool
	free    map[Epoch]int // capabilities acquired directly (releasable)
}

func (m *model) inputFrontier(i int) Epoch {
	f := Closed
	for _, e := range m.senders[i] {
		f = min(f, e)
	}
	return f
}

func (m *model) frontier() Epoch {
	f := Closed
	for i := range m.senders {
		f = min(f, m.inputFrontier(i))
	}
	return f
}

func (m *model) output(o int) Epoch {
	f := Closed
	for e, n := range m.caps {
		if n > 0 {
			f = min(f, e)
		}
	}
	for i := range m.senders {
		if m.conn[i][o] {
			f = min(f, m.inputFrontier(i))
		}
	}
	return f
}

// FuzzTrackerMatchesModel drives a tracker (2 inputs with 2 and 1 senders,
// 2 outputs, input 1 connected to output 1 only) with random operations and
// compares every observable with the model. A delivered notification must
// be complete and come before every later pending one (a late request for an
// already complete epoch is delivered at once, so deliveries need not be
// monotone over time); announced frontiers must only grow.
func FuzzTrackerMatchesModel(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
	f.Add([]byte{2, 5, 3, 2, 0, 7, 0, 9, 1, 9, 4, 4, 5, 5})
	f.Add([]byte{6, 1, 6, 3, 7, 0, 7, 1, 0, 255, 1, 255, 4, 255})
	f.Fuzz(func(t *testing.T, ops []byte) {
		conn := [][]bool{{true, true}, {false, true}}
		tr, err := NewTracker([]int{2, 1}, 2, conn)
		if err != nil {
			t.Fatal(err)
		}
		m := &model{senders: [][]Epoch{{0, 0}, {0}}, conn: conn, caps: map[Epoch]int{}, notify: map[Epoch]bool{}, free: map[Epoch]int{}}
		announced := []Epoch{0, 0}
		for len(ops) >= 2 {
			op, arg := ops[0]%8, Epoch(ops[1]%16)
			if ops[1] == 255 {
				arg = Closed
			}
			ops = ops[2:]
			switch op {
			case 0, 1, 2: // sender announcement: input 0 sender 0/1, input 1 sender 0
				i, s := 0, int(op)
				if op == 2 {
					i, s = 1, 0
				}
				_, err := tr.UpdateInput(i, s, arg)
				if (arg < m.senders[i][s]) != (err != nil) {
					t.Fatalf("update %d/%d to %v from %v: err %v", i, s, arg, m.senders[i][s], err)
				}
				if err == nil {
					m.senders[i][s] = arg
				}
			case 3, 4: // acquire
				if arg == Closed {
					continue
				}
				if err := tr.Acquire(arg); err != nil {
					t.Fatal(err)
				}
				m.caps[arg]++
				m.free[arg]++
			case 5: // release one the caller acquired (not a notification's)
				if m.free[arg] == 0 && m.caps[arg] > 0 {
					continue
				}
				err := tr.Release(arg)
				if (m.caps[arg] == 0) != (err != nil) {
					t.Fatalf("release %v held %d: err %v", arg, m.caps[arg], err)
				}
				if err == nil {
					m.caps[arg]--
					m.free[arg]--
				}
			case 6: // notify request
				err := tr.RequestNotify(arg)
				ok := arg != Closed
				held := false
				for e, n := range m.caps {
					held = held || (n > 0 && e <= arg)
				}
				if ok && held != (err == nil) {
					t.Fatalf("notify %v: err %v, holding one at or below: %v", arg, err, held)
				}
				if err == nil && !m.notify[arg] {
					m.notify[arg] = true
					m.caps[arg]++
				}
			case 7: // deliver notifications, releasing each afterwards
				for {
					e, ok := tr.NextNotification()
					if !ok {
						break
					}
					if !m.notify[e] || e >= m.frontier() {
						t.Fatalf("notification %v: requested %v, frontier %v", e, m.notify[e], m.frontier())
					}
					for r := range m.notify {
						if r < e {
							t.Fatalf("notification %v before pending %v", e, r)
						}
					}
					delete(m.notify, e)
					if err := tr.Release(e); err != nil {
						t.Fatal(err)
					}
					m.caps[e]--
				}
			}
			for i := range m.senders {
				if got, want := tr.InputFrontier(i), m.inputFrontier(i); got != want {
					t.Fatalf("input %d frontier %v, want %v", i, got, want)
				}
			}
			for o := 0; o < 2; o++ {
				if got, want := tr.OutputFrontier(o), m.output(o); got != want {
					t.Fatalf("output %d frontier %v, want %v", o, got, want)
				}
			}
			for _, c := range tr.Changes(nil) {
				if c.Frontier <= announced[c.Output] {
					t.Fatalf("announced %v after %v", c.Frontier, announced[c.Output])
				}
				announced[c.Output] = c.Frontier
			}
			if tr.PendingNotifications() != len(m.notify) {
				t.Fatalf("pending %d, want %d", tr.PendingNotifications(), len(m.notify))
			}
		}
	})
}
