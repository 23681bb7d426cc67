package relay

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/tierflow/tierflow/internal/arrowx"
)

type endKey struct {
	link LinkID
	dir  Direction
}

// Ends is the bookkeeping every backend shares: each link end is open at most
// once per transport, every meter stays listed for Stats after its end closed,
// and Close closes whatever is still open.
type Ends struct {
	mu     sync.Mutex
	open   map[endKey]io.Closer
	meters []*Meter
	closed bool
}

// Add registers a new end and returns its meter.
func (e *Ends) Add(link LinkID, dir Direction, end io.Closer) (*Meter, error) {
	m := NewMeter(link, dir)
	return m, e.AddMeter(m, end)
}

// AddMeter registers a new end with a meter the backend made earlier (the
// in-process backend meters a receiver's queue before the receiver opens).
func (e *Ends) AddMeter(m *Meter, end io.Closer) error {
	link, dir := m.link, m.dir
	if err := link.Validate(); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return fmt.Errorf("open %s end of %s: %w", dir, link, ErrClosed)
	}
	if e.open == nil {
		e.open = make(map[endKey]io.Closer)
	}
	k := endKey{link, dir}
	if _, ok := e.open[k]; ok {
		return fmt.Errorf("open %s end of %s: %w", dir, link, ErrLinkInUse)
	}
	e.open[k] = end
	e.meters = append(e.meters, m)
	return nil
}

// Remove forgets a closed end, so the link can be opened again.
func (e *Ends) Remove(link LinkID, dir Direction) {
	e.mu.Lock()
	delete(e.open, endKey{link, dir})
	e.mu.Unlock()
}

// Stats snapshots every meter ever registered.
func (e *Ends) Stats() []LinkStats {
	e.mu.Lock()
	ms := append([]*Meter(nil), e.meters...)
	e.mu.Unlock()
	out := make([]LinkStats, len(ms))
	for i, m := range ms {
		out[i] = m.Snapshot()
	}
	return out
}

// CloseAll refuses new ends and closes the open ones.
func (e *Ends) CloseAll() error {
	e.mu.Lock()
	e.closed = true
	ends := make([]io.Closer, 0, len(e.open))
	for _, c := range e.open {
		ends = append(ends, c)
	}
	e.mu.Unlock()
	var errs []error
	for _, c := range ends {
		if err := c.Close(); err != nil && !errors.Is(err, ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// RecordBytes is the size of rec's buffers: what the in-process backend meters
// as bytes, since nothing is serialised there.
func RecordBytes(rec arrow.Record) int64 { return arrowx.RecordBytes(rec) }
