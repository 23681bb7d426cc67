package dataflow

import (
	"fmt"
	"slices"
	"strings"
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
type Drops struct {
	n [7]atomic.Int64 // by index in DropReasons
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
