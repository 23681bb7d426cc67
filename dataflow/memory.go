package dataflow

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow/go/v17/arrow/memory"
)

// ErrMemory: a query would hold more memory than its limit on a worker (or
// than the worker's process-wide guard).
var ErrMemory = errors.New("over the memory limit")

// LimitError is ErrMemory with who asked and how far it was: the operator
// (or "arrow buffers", "relay") whose growth was refused, what it and the
// whole query held, and the limit.
type LimitError struct {
	Holder string
	// Held is what Holder held, Used what the whole budget held, Want the
	// growth refused, Limit the budget's limit. Budget names the budget
	// ("query q1 on worker w1", "worker w1's memory guard").
	Held, Used, Want, Limit int64
	Budget                  string
	// Top is the operator with the largest state in the budget when it
	// is not Holder: the one whose state filled the budget, when another
	// (a scan's next batch) was the one refused. Records in flight (the
	// Arrow buffers, an operator's output, the relay's messages) are Top
	// only when no operator keeps any state: links and read-ahead bound
	// them, so they can outweigh the state to blame (a DISTINCT's set
	// under a scan's parsed chunks) without being the cause; with no
	// state, the operator whose output fills the budget (a cross join's
	// product) is the cause.
	Top Holder
}

func (e *LimitError) Error() string {
	msg := fmt.Sprintf("%s holds %s and asked for %s more: %s holds %s, over its memory limit of %s",
		e.Holder, Bytes(e.Held), Bytes(e.Want), e.Budget, Bytes(e.Used), Bytes(e.Limit))
	if e.Top.Name != "" {
		msg += fmt.Sprintf("; %s holds the most (%s)", e.Top.Name, Bytes(e.Top.Held))
	}
	return msg
}

func (e *LimitError) Unwrap() error { return ErrMemory }

// Bytes prints a byte count the way a person reads it.
func Bytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// ParseBytes reads a size as a person writes it: a number of bytes, or one
// with a unit (KB, MB, GB, KiB, MiB, GiB). Empty is 0.
func ParseBytes(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	num, mult := strings.TrimSpace(s), int64(1)
	for _, u := range units {
		if n, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || (mult > 1 && n > math.MaxInt64/mult) {
		return 0, fmt.Errorf("%q: want a size such as 536870912 or 512MiB", s)
	}
	return n * mult, nil
}

// Memory is one budget of memory: a query's on one worker, or a worker's
// process-wide guard (the parent of every query's). Everything a query
// holds is charged to it, by holder:
//
//   - the Arrow buffers its operators allocate (Memory.Allocator: charged
//     at Allocate, refused past the limit);
//   - what it holds that no allocator made (Charge: a record the relay
//     decoded in place of its message, the relay's unacknowledged frames);
//   - what its operators keep in Go structures beside their records (each
//     instance's Account: hash tables, window and session state, sort
//     indexes), which they Grow and Shrink as they change.
//
// Growth past the limit is refused: Account.Grow returns a *LimitError,
// which the operator either answers by spilling (the aggregation and the
// table join write their state to disk) or returns, failing the query with
// its name; the allocator panics with it, which the operator's recovery
// turns into the query's failure. The zero budget (limit 0) counts and
// never refuses. A child budget charges its parent too (a query's charges
// count against the worker's guard), and is refused when either is full.
type Memory struct {
	name   string
	limit  int64
	parent atomic.Pointer[Memory] // nil once closed
	used   atomic.Int64
	peak   atomic.Int64
	// over closes the first time used passes the limit (OverLimit).
	over     chan struct{}
	overOnce sync.Once

	mu       sync.Mutex
	accounts []*Account
	arrow    *Account // the allocator's holder
	relay    *Account // Charge's holder
	ahead    *readAheadPool
}

// NewMemory is a budget named name (what a refusal calls it) of limit
// bytes (0: no limit), charging parent too when it is not nil.
func NewMemory(name string, limit int64, parent *Memory) *Memory {
	m := &Memory{name: name, limit: limit, over: make(chan struct{})}
	m.parent.Store(parent)
	m.arrow = m.Account("arrow buffers")
	m.relay = m.Account("relay frames, decoded messages and images")
	return m
}

// Limit is the budget's limit (0: none).
func (m *Memory) Limit() int64 {
	if m == nil {
		return 0
	}
	return m.limit
}

// Used is what the budget holds now.
func (m *Memory) Used() int64 {
	if m == nil {
		return 0
	}
	return m.used.Load()
}

// Name is what the budget is called.
func (m *Memory) Name() string { return m.name }

// OverLimit closes once the budget has passed its limit (a charge that
// could not be refused: an allocation's, the relay's).
func (m *Memory) OverLimit() <-chan struct{} { return m.over }

// Account is a new holder of the budget, named name (an operator instance:
// "join#0"). A nil budget's accounts count nothing and never refuse.
func (m *Memory) Account(name string) *Account {
	a := &Account{m: m, name: name}
	if m == nil {
		return a
	}
	m.mu.Lock()
	m.accounts = append(m.accounts, a)
	m.mu.Unlock()
	return a
}

// Holder is what one account holds.
type Holder struct {
	Name string
	Held int64
}

// Holders are the budget's accounts that hold something, largest first.
func (m *Memory) Holders() []Holder {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Holder
	for _, a := range m.accounts {
		if h := a.held.Load(); h > 0 {
			out = append(out, Holder{a.name, h})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Held > out[j].Held })
	return out
}

// blame is the account LimitError.Top names: the operator state holding
// the most; with no state at all, the operator output holding the most
// records; nil when neither holds anything. The shared pools (the Arrow
// buffers of no one operator, the relay's messages) are never blamed.
func (m *Memory) blame() *Account {
	m.mu.Lock()
	defer m.mu.Unlock()
	var state, output *Account
	for _, a := range m.accounts {
		if a == m.arrow || a == m.relay || a.held.Load() <= 0 {
			continue
		}
		top := &state
		if a.output {
			top = &output
		}
		if *top == nil || a.held.Load() > (*top).held.Load() {
			*top = a
		}
	}
	if state != nil {
		return state
	}
	return output
}

// charge adds n to m and its parents; with refuse, growth past a limit is
// undone and refused.
func (m *Memory) charge(a *Account, n int64, refuse bool) error {
	for b := m; b != nil; b = b.parent.Load() {
		used := b.used.Add(n)
		if n > 0 && b.limit > 0 && used > b.limit {
			if refuse {
				for u := m; ; u = u.parent.Load() {
					u.used.Add(-n)
					if u == b {
						break
					}
				}
				e := &LimitError{Holder: a.name, Held: a.held.Load(), Used: used - n, Want: n, Limit: b.limit, Budget: b.name}
				if top := b.blame(); top != nil && top != a {
					e.Top = Holder{top.name, top.held.Load()}
				}
				return e
			}
			b.overOnce.Do(func() { close(b.over) })
		}
		if n > 0 {
			for p := b.peak.Load(); used > p && !b.peak.CompareAndSwap(p, used); p = b.peak.Load() {
			}
		}
	}
	return nil
}

// Close gives back to the parent budgets whatever this one still holds
// (what a failed query's operators never released) and detaches it: its
// later charges count here only. A worker closes a query's budget when the
// query ends, so its guard never keeps what a dead query leaked.
func (m *Memory) Close() {
	if m == nil {
		return
	}
	p := m.parent.Swap(nil)
	if u := m.used.Load(); u != 0 {
		for b := p; b != nil; b = b.parent.Load() {
			b.used.Add(-u)
		}
	}
}

// Peak is the most the budget held at once.
func (m *Memory) Peak() int64 {
	if m == nil {
		return 0
	}
	return m.peak.Load()
}

// ResetPeak starts Peak again from what the budget holds now (a
// measurement of one query's peak on a guard several ran under).
func (m *Memory) ResetPeak() {
	if m != nil {
		m.peak.Store(m.used.Load())
	}
}

// Allocator is an allocator over mem that charges every buffer to the
// budget ("arrow buffers") and refuses, by panicking with a *LimitError,
// an allocation that would take the budget past its limit: the operator
// that asked fails with it (its recovery turns the panic into its error)
// instead of the worker running out of memory.
func (m *Memory) Allocator(mem memory.Allocator) memory.Allocator {
	if m == nil {
		return mem
	}
	return &budgetAllocator{Allocator: mem, m: m, acct: m.arrow}
}

type budgetAllocator struct {
	memory.Allocator
	m    *Memory
	acct *Account // m.arrow, or an operator's output (OutputAllocator)
}

// OutputAllocator is mem for one operator instance, named name: when mem
// charges a budget (Memory.Allocator's), what it allocates is charged to
// that operator's output ("join[0] output") instead of the shared pool, so
// a refusal, and the worker's report of a query over its limit, can say
// whose records fill the budget. Any other allocator is returned as is.
func OutputAllocator(mem memory.Allocator, name string) memory.Allocator {
	b, ok := mem.(*budgetAllocator)
	if !ok {
		return mem
	}
	a := b.m.Account(name + " output")
	a.output = true
	return &budgetAllocator{Allocator: b.Allocator, m: b.m, acct: a}
}

// Unrefused is mem for code that allocates on goroutines no operator's
// recovery covers: Arrow's compute kernels run on one of their own, where
// a refusal's panic ended the process (a query's projection at its limit
// took its worker down). When mem charges a budget, Unrefused's charge the
// same budget but are never refused: a charge past the limit marks the
// budget over it (OverLimit), and the worker fails the query holding it,
// as it does for every charge that cannot be refused; the overrun is one
// kernel's output. Any other allocator is returned as is.
func Unrefused(mem memory.Allocator) memory.Allocator {
	b, ok := mem.(*budgetAllocator)
	if !ok {
		return mem
	}
	return &unrefusedAllocator{b}
}

type unrefusedAllocator struct{ *budgetAllocator }

func (u *unrefusedAllocator) Allocate(n int) []byte {
	_ = u.acct.grow(int64(n)+allocPadding, false)
	return u.Allocator.Allocate(n)
}

func (u *unrefusedAllocator) Reallocate(n int, old []byte) []byte {
	if d := n - len(old); d > 0 {
		_ = u.acct.grow(int64(d), false)
	} else {
		u.acct.Shrink(int64(-d))
	}
	return u.Allocator.Reallocate(n, old)
}

// allocPadding is what an allocation costs beyond the bytes asked: Arrow's
// Go allocator makes each buffer 64 bytes longer to align it. Counting
// it matters for small buffers: a one-row record's 8-byte column takes
// 72, and a query emitting a million of them holds 9 times what their
// lengths say.
const allocPadding = 64

func (b *budgetAllocator) Allocate(n int) []byte {
	if err := b.acct.grow(int64(n)+allocPadding, true); err != nil {
		panic(err)
	}
	return b.Allocator.Allocate(n)
}

func (b *budgetAllocator) Reallocate(n int, old []byte) []byte {
	if d := n - len(old); d > 0 {
		if err := b.acct.grow(int64(d), true); err != nil {
			panic(err)
		}
	} else {
		b.acct.Shrink(int64(-d))
	}
	return b.Allocator.Reallocate(n, old)
}

func (b *budgetAllocator) Free(buf []byte) {
	// A buffer never allocated frees nil (Arrow's resizable buffers do,
	// released before their first Resize: the IPC reader's at a stream's
	// end): nothing was charged for it. An allocation of 0 bytes is not
	// nil, and gives back its padding.
	if buf != nil {
		b.acct.Shrink(int64(len(buf)) + allocPadding)
	}
	b.Allocator.Free(buf)
}

// ReadAheadFraction is the share of a query's budget its readers may hold
// parsed ahead of the operators that consume them (a CSV file's chunks, a
// Parquet file's row groups): what is read ahead is the scan's, not
// state, so it stays a bounded part of the budget and the rest is left to
// the state the query keeps. A quarter leaves three quarters for state
// and for the records on the links between operators.
const ReadAheadFraction = 4

// Wrapper is an allocator over another (a bound on a file's buffers): what
// ReadAhead looks through to find the query's budget.
type Wrapper interface{ Wrapped() memory.Allocator }

// ReadAhead is how many bytes of records the readers allocating from mem's
// budget may hold parsed ahead of their consumers, together (each reads
// out of a ReadAheadGate of the budget's pool): the smallest limit on mem's budget
// and the budgets above it (the query's, the worker's guard), divided by
// ReadAheadFraction; 0 when nothing limits mem (read ahead as the cores
// allow). It never depends on the machine's core count, so neither does
// whether a query fits its budget.
func ReadAhead(mem memory.Allocator) int64 { return budgetOf(mem).readAhead() }

// readAhead is ReadAhead of b (0 for nil).
func (b *budgetAllocator) readAhead() int64 {
	if b == nil {
		return 0
	}
	var limit int64
	for m := b.m; m != nil; m = m.parent.Load() {
		if m.limit > 0 && (limit == 0 || m.limit < limit) {
			limit = m.limit
		}
	}
	return limit / ReadAheadFraction
}

// Charge counts n bytes the budget's query holds that no allocator of its
// made (a record decoded in place of its message, a frame kept until its
// ack, an image's decoded pixels), until Uncharge. It refuses, with a *LimitError, growth past the
// limit.
func (b *budgetAllocator) Charge(n int64) error { return b.charges().grow(n, true) }

// Uncharge gives back what Charge counted.
func (b *budgetAllocator) Uncharge(n int64) { b.charges().Shrink(n) }

// charges is the account Charge counts in: an operator's output when the
// allocator is its own (OutputAllocator: what it holds beside its records,
// a scan's text, is its too, and a refusal names it), else the shared
// pool of the relay's frames and messages.
func (b *budgetAllocator) charges() *Account {
	if b.acct.output {
		return b.acct
	}
	return b.m.relay
}

// ChargerOf is the Charger under mem's wrappers (Wrapper), nil when mem
// charges no budget: what a reader holds that its allocator did not make
// (a file's text read ahead) is charged there.
func ChargerOf(mem memory.Allocator) Charger {
	if b := budgetOf(mem); b != nil {
		return b
	}
	return nil
}

// Charger is an allocator that also counts memory it did not allocate
// (Memory.Allocator's): the relay charges decoded messages and frames
// awaiting their ack to the query whose allocator it was given.
type Charger interface {
	Charge(n int64) error
	Uncharge(n int64)
}

// Account is one holder of a budget: an operator instance's state beside
// the records it keeps (which its allocator or the relay already count).
// Safe for concurrent use.
type Account struct {
	m    *Memory
	name string
	held atomic.Int64
	// output: the account counts records an operator made (its
	// OutputAllocator's), not state it keeps.
	output bool
}

// Name is the holder's name.
func (a *Account) Name() string { return a.name }

// Held is what the account holds.
func (a *Account) Held() int64 { return a.held.Load() }

// Budget is what the account's budget holds, all its accounts together,
// and its limit (0: none; a nil account has neither): an operator whose
// state is records other accounts were charged for (a join's table, by
// the scans that made it) reads from it how full its query is.
func (a *Account) Budget() (used, limit int64) {
	if a == nil || a.m == nil {
		return 0, 0
	}
	return a.m.Used(), a.m.Limit()
}

// Grow charges n more bytes, or refuses them with a *LimitError (wrapping
// ErrMemory) when the budget, or its parent's, would pass its limit.
func (a *Account) Grow(n int64) error { return a.grow(n, true) }

func (a *Account) grow(n int64, refuse bool) error {
	if n <= 0 || a == nil {
		return nil
	}
	if a.m != nil {
		if err := a.m.charge(a, n, refuse); err != nil {
			return err
		}
	}
	a.held.Add(n)
	return nil
}

// Shrink gives back n bytes.
func (a *Account) Shrink(n int64) {
	if n <= 0 || a == nil {
		return
	}
	a.held.Add(-n)
	if a.m != nil {
		_ = a.m.charge(a, -n, false)
	}
}

// Resize sets what the account holds to n: a Grow or a Shrink of the
// difference.
func (a *Account) Resize(n int64) error {
	if a == nil {
		return nil
	}
	if d := n - a.held.Load(); d > 0 {
		return a.Grow(d)
	} else if d < 0 {
		a.Shrink(-d)
	}
	return nil
}

// Close gives back everything the account holds.
func (a *Account) Close() {
	if a != nil {
		a.Shrink(a.held.Load())
	}
}
