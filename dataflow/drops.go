package dataflow

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Reasons a query drops rows (or messages) on purpose. These names are the
// keys of every report: the run summary, SHOW QUERIES, EXPLAIN ANALYZE and
// JSON statistics.
const (
	DropLate          = "late"            // behind the watermark: their window had closed
	DropMalformed     = "malformed"       // did not fit the schema (--on-error skip)
	DropSlowConsumer  = "slow_consumer"   // core NATS: the subscription's buffer was full
	DropOversized     = "oversized"       // larger than a message may be
	DropNullEventTime = "null_event_time" // no event time, so no window
	// DropDisconnected counts core NATS messages published while no part
	// of the query was subscribed to its stream: during a NATS server
	// outage, or while a recovery re-deployed the query. Core NATS keeps
	// nothing for an absent subscriber; the coordinator counts them.
	DropDisconnected = "disconnected"
	// DropDeadline counts rows an ML operator dropped before compute: a
	// query WITH (LATENCY <= x) whose row could no longer meet its
	// deadline (ingest + x) even in a batch of its own (Jellyfish's lazy
	// drop), or that the source's adaptation dropped before the link, where
	// not even its smallest input size would cross in time. Each is an SLO
	// miss too.
	DropDeadline = "deadline"
)

// DropReasons are the reasons in report order.
var DropReasons = []string{DropLate, DropMalformed, DropSlowConsumer, DropOversized, DropNullEventTime, DropDisconnected, DropDeadline}

// Drops counts what a query dropped, by reason. The zero value is ready;
// safe for concurrent use, so every operator and source of a query adds to
// one.
//
// Drops of rows whose epoch is known (AddAt) are also kept by epoch, so
// that a change of generation counts each epoch's drops once: the older
// generation's where it committed the epoch, the newer one's where it
// replayed it. A re-deployed part ignores drops below the epoch it resumed
// from (From), and the drops an older part made at epochs the next one
// replays are taken off by the coordinator (ByEpoch, DropsSince).
type Drops struct {
	n [7]atomic.Int64 // by index in DropReasons

	mu    sync.Mutex
	from  Epoch
	at    map[Epoch]*[7]int64
	below [7]int64 // AddAt's drops of epochs pushed out of at
}

// maxDropEpochs bounds the epochs Drops keeps apart. A part has only a few
// epochs in flight (a sink's frontier trails the newest drop by a batch or
// two), so the epoch a next generation resumes from is among the newest;
// older epochs' drops are kept together as below every resume epoch.
const maxDropEpochs = 1024

// From makes d ignore the drops AddAt is given for epochs below e: a part
// that replays what an earlier generation committed (to rebuild state, or
// as fast as it reads up to e) writes none of those epochs' rows, and the
// earlier generation's rows and drops of them are the query's.
func (d *Drops) From(e Epoch) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.from = e
}

// AddAt counts n drops for reason of rows at epoch e (see Add).
func (d *Drops) AddAt(reason string, e Epoch, n int64) {
	if n == 0 || d == nil {
		return
	}
	i := slices.Index(DropReasons, reason)
	if i < 0 {
		panic(fmt.Sprintf("dataflow: unknown drop reason %q", reason))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if e < d.from {
		return
	}
	d.n[i].Add(n)
	if d.at == nil {
		d.at = map[Epoch]*[7]int64{}
	}
	c := d.at[e]
	if c == nil {
		if len(d.at) >= maxDropEpochs {
			oldest := e
			for k := range d.at {
				oldest = min(oldest, k)
			}
			if oldest == e { // older than every kept epoch
				d.below[i] += n
				return
			}
			for j, v := range d.at[oldest] {
				d.below[j] += v
			}
			delete(d.at, oldest)
		}
		c = &[7]int64{}
		d.at[e] = c
	}
	c[i] += n
}

// ByEpoch is AddAt's counts by epoch (the newest maxDropEpochs epochs).
func (d *Drops) ByEpoch() map[Epoch]DropCounts {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var out map[Epoch]DropCounts
	for k, v := range d.at {
		for i, n := range v {
			if n != 0 {
				if out == nil {
					out = map[Epoch]DropCounts{}
				}
				if out[k] == nil {
					out[k] = DropCounts{}
				}
				out[k][DropReasons[i]] += n
			}
		}
	}
	return out
}

// Add counts n drops for reason (one of DropReasons; anything else is a
// programming error and panics, which the engine turns into the query's
// error).
func (d *Drops) Add(reason string, n int64) {
	if n == 0 || d == nil {
		return
	}
	i := slices.Index(DropReasons, reason)
	if i < 0 {
		panic(fmt.Sprintf("dataflow: unknown drop reason %q", reason))
	}
	d.n[i].Add(n)
}

// Snapshot reads the counts.
func (d *Drops) Snapshot() DropCounts {
	if d == nil {
		return nil
	}
	var c DropCounts
	for i, r := range DropReasons {
		if v := d.n[i].Load(); v != 0 {
			if c == nil {
				c = DropCounts{}
			}
			c[r] = v
		}
	}
	return c
}

// Dropping is an operator that drops rows on purpose and counts them in
// the query's Drops: the executor hands it the query's counter when it
// builds the instance.
type Dropping interface {
	CountDropsIn(*Drops)
}

// DropCounts are drops by reason (only reasons with drops), as they travel
// between processes and into JSON: {"late": 3, "slow_consumer": 120}.
type DropCounts map[string]int64

// Total is the number of drops of every reason.
func (c DropCounts) Total() int64 {
	var t int64
	for _, v := range c {
		t += v
	}
	return t
}

// Merge adds o's counts to c's (a nil c gets a new map) and returns it.
func (c DropCounts) Merge(o DropCounts) DropCounts {
	for r, v := range o {
		if v == 0 {
			continue
		}
		if c == nil {
			c = DropCounts{}
		}
		c[r] += v
	}
	return c
}

// DropsSince is the drops of c (a part's, by epoch: Drops.ByEpoch) at
// epochs e and later: what a generation whose sinks committed below e
// dropped of the rows the next generation replays.
func DropsSince(c map[Epoch]DropCounts, e Epoch) DropCounts {
	var out DropCounts
	for k, v := range c {
		if k >= e {
			out = out.Merge(v)
		}
	}
	return out
}

// Less is c less o, reason by reason (a new map; a reason it leaves at
// zero or below is left out).
func (c DropCounts) Less(o DropCounts) DropCounts {
	var out DropCounts
	for r, v := range c {
		if v -= o[r]; v > 0 {
			if out == nil {
				out = DropCounts{}
			}
			out[r] = v
		}
	}
	return out
}

// String is "3 late, 120 slow_consumer" in report order ("" for none).
func (c DropCounts) String() string {
	var parts []string
	for _, r := range DropReasons {
		if v := c[r]; v != 0 {
			parts = append(parts, fmt.Sprintf("%d %s", v, r))
		}
	}
	return strings.Join(parts, ", ")
}
