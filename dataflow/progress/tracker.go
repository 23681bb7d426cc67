// Package progress is the pure progress-tracking core of the dataflow engine:
// epochs, frontiers and capability counts for one operator instance. It owns no
// goroutines and does no I/O, so every transition can be tested step by step.
//
// The model is timely dataflow's, specialised to what tierflow needs: timestamps
// are totally ordered epochs (no nested scopes) and graphs are DAGs (no
// cycles). Under those two restrictions a frontier is a single epoch, and
// progress can travel node to node along the data edges themselves: each
// sender announces "I will send nothing below F any more" on every channel it
// writes, after the data it covers (channels are FIFO per sender). A receiver's
// input frontier is the minimum over the announcements of its senders; its
// output frontier is the minimum of its held capabilities and the frontiers of
// the inputs connected to that output. Nothing is broadcast all-to-all.
//
// This package must not import the rest of tierflow (not even dataflow).
package progress

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// Epoch is a logical timestamp. Epochs are totally ordered; data at epoch e
// is complete once every frontier that could still deliver it has passed e.
type Epoch uint64

// Closed is the frontier of a channel, input or output that will never carry
// data again. No data may be sent at Closed itself.
const Closed Epoch = math.MaxUint64

// String prints Closed by name so test failures read well.
func (e Epoch) String() string {
	if e == Closed {
		return "closed"
	}
	return fmt.Sprintf("%d", uint64(e))
}

// Error kinds. Callers wrap and test them with errors.Is.
var (
	// ErrRegress: a frontier moved backwards, which would let already
	// delivered notifications be contradicted.
	ErrRegress = errors.New("progress: frontier regressed")
	// ErrNoCapability: a capability count would go negative.
	ErrNoCapability = errors.New("progress: capability not held")
	// ErrBeforeFrontier: a capability or notification was requested at an
	// epoch the operator can no longer produce at.
	ErrBeforeFrontier = errors.New("progress: epoch before frontier")
	// ErrPort: a port or sender index out of range.
	ErrPort = errors.New("progress: no such port")
)

// Counts is a multiset of epochs kept sorted, small by construction (an
// operator holds capabilities at a handful of distinct epochs, e.g. its open
// windows), so a sorted slice beats a heap or a map.
type Counts struct {
	items []count
}

type count struct {
	epoch Epoch
	n     int
}

// Add changes the count of e by delta; it refuses to go negative.
func (c *Counts) Add(e Epoch, delta int) error {
	i := sort.Search(len(c.items), func(i int) bool { return c.items[i].epoch >= e })
	if i < len(c.items) && c.items[i].epoch == e {
		n := c.items[i].n + delta
		if n < 0 {
			return fmt.Errorf("%w: epoch %v count %d%+d", ErrNoCapability, e, c.items[i].n, delta)
		}
		if n == 0 {
			c.items = append(c.items[:i], c.items[i+1:]...)
		} else {
			c.items[i].n = n
		}
		return nil
	}
	if delta < 0 {
		return fmt.Errorf("%w: epoch %v count 0%+d", ErrNoCapability, e, delta)
	}
	if delta == 0 {
		return nil
	}
	c.items = append(c.items, count{})
	copy(c.items[i+1:], c.items[i:])
	c.items[i] = count{epoch: e, n: delta}
	return nil
}

// Count reports how many times e is held.
func (c *Counts) Count(e Epoch) int {
	i := sort.Search(len(c.items), func(i int) bool { return c.items[i].epoch >= e })
	if i < len(c.items) && c.items[i].epoch == e {
		return c.items[i].n
	}
	return 0
}

// Min is the smallest held epoch, or Closed when nothing is held.
func (c *Counts) Min() Epoch {
	if len(c.items) == 0 {
		return Closed
	}
	return c.items[0].epoch
}

// Len is the number of distinct epochs held.
func (c *Counts) Len() int { return len(c.items) }

// Tracker is the progress state of one operator instance: the frontier
// announced by each upstream sender on each input, the capabilities the
// instance holds, its pending notification requests, and the output frontiers
// it has already announced downstream.
//
// Notifications follow timely's notificator: requesting one holds a
// capability at its epoch until it is delivered, so downstream cannot see the
// epoch complete before the operator had a chance to emit its results there.
type Tracker struct {
	senders   [][]Epoch // per input, per sender: last announced frontier
	inputs    []Epoch   // per input: min over its senders
	conn      [][]bool  // [input][output]
	caps      Counts
	notify    Counts  // requested notification epochs (count always 1)
	announced []Epoch // per output: last frontier reported by Changes
}

// NewTracker makes the tracker of an instance with len(senders) inputs,
// where input i is fed by senders[i] upstream channels, and outputs outputs.
// conn[i][o] says whether input i can cause output o; nil connects all.
// Every sender starts at frontier 0 (it may send anything) and the instance
// starts holding no capability: the engine acquires the initial one.
func NewTracker(senders []int, outputs int, conn [][]bool) (*Tracker, error) {
	t := &Tracker{
		senders:   make([][]Epoch, len(senders)),
		inputs:    make([]Epoch, len(senders)),
		conn:      make([][]bool, len(senders)),
		announced: make([]Epoch, outputs),
	}
	if conn != nil && len(conn) != len(senders) {
		return nil, fmt.Errorf("%w: connectivity has %d rows for %d inputs", ErrPort, len(conn), len(senders))
	}
	for i, n := range senders {
		t.senders[i] = make([]Epoch, n)
		if n == 0 {
			// An input nobody writes to is complete from the start.
			t.inputs[i] = Closed
		}
		t.conn[i] = make([]bool, outputs)
		for o := range t.conn[i] {
			if conn == nil {
				t.conn[i][o] = true
				continue
			}
			if len(conn[i]) != outputs {
				return nil, fmt.Errorf("%w: connectivity row %d has %d entries for %d outputs", ErrPort, i, len(conn[i]), outputs)
			}
			t.conn[i][o] = conn[i][o]
		}
	}
	return t, nil
}

// Inputs and Outputs report the shape the tracker was built with.
func (t *Tracker) Inputs() int  { return len(t.inputs) }
func (t *Tracker) Outputs() int { return len(t.announced) }

// UpdateInput records that sender s of input i announced frontier f. It
// reports whether the input's frontier advanced. Announcements must be
// monotone: a regression is an error, a repeat is a no-op.
func (t *Tracker) UpdateInput(i, s int, f Epoch) (bool, error) {
	if i < 0 || i >= len(t.senders) || s < 0 || s >= len(t.senders[i]) {
		return false, fmt.Errorf("%w: input %d sender %d", ErrPort, i, s)
	}
	old := t.senders[i][s]
	if f < old {
		return false, fmt.Errorf("%w: input %d sender %d from %v to %v", ErrRegress, i, s, old, f)
	}
	t.senders[i][s] = f
	if old != t.inputs[i] {
		// This sender was not the minimum, so the minimum cannot move.
		return false, nil
	}
	m := Closed
	for _, e := range t.senders[i] {
		m = min(m, e)
	}
	advanced := m > t.inputs[i]
	t.inputs[i] = m
	return advanced, nil
}

// InputFrontier is the smallest epoch input i may still receive.
func (t *Tracker) InputFrontier(i int) Epoch { return t.inputs[i] }

// Frontier is the smallest epoch any input may still receive: an epoch below
// it is complete on all inputs.
func (t *Tracker) Frontier() Epoch {
	m := Closed
	for _, e := range t.inputs {
		m = min(m, e)
	}
	return m
}

// Acquire adds one capability at e. The caller (the engine) guarantees e is
// justified: derived from a held capability or an input message at e.
func (t *Tracker) Acquire(e Epoch) error {
	if e == Closed {
		return fmt.Errorf("%w: capability at closed", ErrBeforeFrontier)
	}
	return t.caps.Add(e, 1)
}

// Release drops one capability at e.
func (t *Tracker) Release(e Epoch) error { return t.caps.Add(e, -1) }

// Held reports how many capabilities at e the instance holds.
func (t *Tracker) Held(e Epoch) int { return t.caps.Count(e) }

// MinCapability is the smallest epoch held, or Closed.
func (t *Tracker) MinCapability() Epoch { return t.caps.Min() }

// OutputFrontier is the smallest epoch output o may still emit at: the
// minimum of held capabilities and the frontiers of inputs connected to o.
func (t *Tracker) OutputFrontier(o int) Epoch {
	m := t.caps.Min()
	for i := range t.inputs {
		if t.conn[i][o] {
			m = min(m, t.inputs[i])
		}
	}
	return m
}

// RequestNotify asks for a notification at e and holds a capability at e
// until NextNotification hands it out. Requests for the same epoch merge.
// The caller must hold a capability at or below e; e must not be Closed.
func (t *Tracker) RequestNotify(e Epoch) error {
	if e == Closed {
		return fmt.Errorf("%w: notification at closed", ErrBeforeFrontier)
	}
	if t.caps.Min() > e {
		return fmt.Errorf("%w: notification at %v without a capability at or below it (lowest held %v)", ErrBeforeFrontier, e, t.caps.Min())
	}
	if t.notify.Count(e) > 0 {
		return nil
	}
	if err := t.notify.Add(e, 1); err != nil {
		return err
	}
	return t.caps.Add(e, 1)
}

// PendingNotifications is the number of requested, undelivered epochs.
func (t *Tracker) PendingNotifications() int { return t.notify.Len() }

// NextNotification returns the smallest requested epoch that is complete on
// all inputs, removing the request. The capability it held stays held: the
// caller passes it to the operator and Releases it afterwards.
func (t *Tracker) NextNotification() (Epoch, bool) {
	e := t.notify.Min()
	if e == Closed || e >= t.Frontier() {
		return 0, false
	}
	_ = t.notify.Add(e, -1)
	return e, true
}

// Change is an advance of one output frontier.
type Change struct {
	Output   int
	Frontier Epoch
}

// Changes appends to dst the outputs whose frontier advanced since the last
// call and records them as announced. The engine sends each change to every
// channel of that output, after any data already sent on it.
func (t *Tracker) Changes(dst []Change) []Change {
	for o := range t.announced {
		f := t.OutputFrontier(o)
		if f > t.announced[o] {
			t.announced[o] = f
			dst = append(dst, Change{Output: o, Frontier: f})
		}
	}
	return dst
}

// Announced is the last frontier reported for output o.
func (t *Tracker) Announced(o int) Epoch { return t.announced[o] }

// Done reports that the instance can do nothing more: every input is
// closed, no capability is held and no notification is pending.
func (t *Tracker) Done() bool {
	return t.Frontier() == Closed && t.caps.Len() == 0 && t.notify.Len() == 0
}

// SenderFrontier is the last frontier sender s announced on input i.
func (t *Tracker) SenderFrontier(i, s int) Epoch { return t.senders[i][s] }
