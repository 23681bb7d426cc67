package dataflow

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"
)

func TestMemoryRefusesPastItsLimit(t *testing.T) {
	guard := NewMemory("worker w1's memory guard", 1000, nil)
	q := NewMemory("query q1 on worker w1", 600, guard)
	a, b := q.Account("window[0]"), q.Account("join[0]")
	if err := a.Grow(400); err != nil {
		t.Fatal(err)
	}
	err := b.Grow(300)
	var le *LimitError
	if !errors.Is(err, ErrMemory) || !errors.As(err, &le) || le.Holder != "join[0]" || le.Limit != 600 {
		t.Fatalf("join past the query's limit: %v", err)
	}
	if q.Used() != 400 || guard.Used() != 400 || b.Held() != 0 {
		t.Fatalf("after a refusal: query %d, guard %d, join %d; want 400, 400, 0", q.Used(), guard.Used(), b.Held())
	}
	// The guard refuses what another query's budget would allow.
	other := NewMemory("query q2", 0, guard)
	if err := other.Account("sort[0]").Grow(700); !errors.As(err, &le) || !strings.Contains(le.Budget, "guard") {
		t.Fatalf("past the guard: %v", err)
	}
	a.Shrink(400)
	if q.Used() != 0 || guard.Used() != 0 {
		t.Fatalf("after shrinking: %d %d", q.Used(), guard.Used())
	}
	if err := a.Resize(500); err != nil || q.Used() != 500 {
		t.Fatalf("resize: %v %d", err, q.Used())
	}
	a.Close()
	if q.Used() != 0 || len(q.Holders()) != 0 {
		t.Fatalf("after close: %d %v", q.Used(), q.Holders())
	}
}

func TestMemoryAllocatorRefusesByPanicking(t *testing.T) {
	checked := memory.NewCheckedAllocator(memory.NewGoAllocator())
	q := NewMemory("query q1", 1<<20, nil)
	mem := q.Allocator(checked)
	b := mem.Allocate(1000)
	if q.Used() < 1000 {
		t.Fatalf("used %d after allocating 1000", q.Used())
	}
	func() {
		defer func() {
			err := Recovered("join[0] batch", recover())
			if !errors.Is(err, ErrMemory) || errors.Is(err, ErrPanic) {
				t.Fatalf("a refused allocation: %v, want ErrMemory and no panic", err)
			}
		}()
		mem.Allocate(2 << 20)
	}()
	mem.Free(b)
	if q.Used() != 0 {
		t.Fatalf("used %d after freeing", q.Used())
	}
	checked.AssertSize(t, 0)
	c := mem.(Charger)
	if err := c.Charge(1 << 19); err != nil {
		t.Fatal(err)
	}
	if err := c.Charge(1 << 20); !errors.Is(err, ErrMemory) {
		t.Fatalf("charge past the limit: %v", err)
	}
	c.Uncharge(1 << 19)
	if q.Used() != 0 {
		t.Fatalf("used %d after uncharging", q.Used())
	}
}

// A nil budget counts nothing and refuses nothing.
func TestNilMemory(t *testing.T) {
	var m *Memory
	a := m.Account("x[0]")
	if err := a.Grow(1 << 40); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if m.Allocator(memory.DefaultAllocator) != memory.DefaultAllocator {
		t.Fatal("a nil budget wrapped the allocator")
	}
}

// A refusal names the budget's largest holder when another asked: a scan's
// next batch refused because a window's state filled the query's budget
// says the window holds the most, so the failure names the operator to
// blame, not the one that happened to ask.
func TestMemoryRefusalNamesTheLargestHolder(t *testing.T) {
	q := NewMemory("query q1 on worker w1", 1000, nil)
	win, scan := q.Account("aggregate[0]"), q.Account("scan e[0]")
	if err := win.Grow(900); err != nil {
		t.Fatal(err)
	}
	err := scan.Grow(200)
	var le *LimitError
	if !errors.As(err, &le) || le.Holder != "scan e[0]" || le.Top.Name != "aggregate[0]" || le.Top.Held != 900 ||
		!strings.Contains(err.Error(), "aggregate[0] holds the most (900 B)") {
		t.Fatalf("%v: want the scan refused, naming aggregate[0] as the largest holder", err)
	}
	// The largest asking for more: named once.
	if err := win.Grow(200); err == nil || strings.Contains(err.Error(), "holds the most") {
		t.Fatalf("%v: the holder refused is the largest, no second name", err)
	}
}

// Records in flight are not state: a scan's parsed batches (the Arrow
// pool) that outweigh a DISTINCT's set, refused their next buffer, still
// name the set as what filled the budget; with no operator state at all,
// no one else is named.
func TestMemoryRefusalBlamesStateNotRecordsInFlight(t *testing.T) {
	q := NewMemory("query q1 on worker w1", 10<<10, nil)
	set := q.Account("aggregate[0]")
	if err := set.Grow(4 << 10); err != nil {
		t.Fatal(err)
	}
	alloc := q.Allocator(memory.NewGoAllocator())
	alloc.Allocate(5 << 10) // the batches in flight: more than the set
	err := func() (err error) {
		defer func() { err, _ = recover().(error) }()
		alloc.Allocate(2 << 10)
		return nil
	}()
	var le *LimitError
	if !errors.As(err, &le) || le.Holder != "arrow buffers" || le.Top.Name != "aggregate[0]" || !strings.Contains(err.Error(), "aggregate[0] holds the most") {
		t.Fatalf("%v: want the Arrow buffer refused, naming aggregate[0]'s state", err)
	}
	bare := NewMemory("query q2 on worker w1", 1<<10, nil)
	err = bare.Account("scan e[0]").Grow(2 << 10)
	if !errors.As(err, &le) || le.Top.Name != "" {
		t.Fatalf("%v: no operator state, no one else to name", err)
	}
}

// With no operator state at all, the operator whose output fills the
// budget is the one to blame (a cross join's product queued behind a slow
// sink), not the scan refused its next batch; state, when any is kept,
// still comes first.
func TestMemoryRefusalBlamesTheLargestOutputWithoutState(t *testing.T) {
	q := NewMemory("query q1 on worker w1", 10<<10, nil)
	pool := q.Allocator(memory.NewGoAllocator())
	scan, join := OutputAllocator(pool, "scan e[0]"), OutputAllocator(pool, "join[0]")
	join.Allocate(6 << 10)
	scan.Allocate(1 << 10)
	refused := func() (err error) {
		defer func() { err, _ = recover().(error) }()
		scan.Allocate(4 << 10)
		return nil
	}
	var le *LimitError
	err := refused()
	if !errors.As(err, &le) || le.Holder != "scan e[0] output" || le.Top.Name != "join[0] output" ||
		!strings.Contains(err.Error(), "join[0] output holds the most") {
		t.Fatalf("%v: want the scan refused, naming the join's output", err)
	}
	// Freed records leave the output account: what was the join's is
	// given back through the allocator that made it.
	buf := join.Allocate(1 << 10)
	join.Free(buf)
	if got := q.Holders(); len(got) != 2 || got[0] != (Holder{"join[0] output", 6<<10 + allocPadding}) {
		t.Fatalf("holders %v: want the join's 6 KiB (and its padding) first", got)
	}
	if err := q.Account("distinct[0]").Grow(1 << 10); err != nil {
		t.Fatal(err)
	}
	if err := refused(); !errors.As(err, &le) || le.Top.Name != "distinct[0]" {
		t.Fatalf("%v: with state kept, the state is named", err)
	}
	if plain := memory.NewGoAllocator(); OutputAllocator(plain, "x[0]") != memory.Allocator(plain) {
		t.Fatal("an allocator charging no budget is returned as is")
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"": 0, "1024": 1024, "512MiB": 512 << 20, "2 GB": 2e9, "10KiB": 10 << 10, "1GiB": 1 << 30} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d %v, want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"lots", "-1", "1.5GiB", "9000000000GiB"} {
		if _, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q) accepted", bad)
		}
	}
}

// A buffer never allocated is freed as nil (Arrow's resizable buffers,
// released before their first Resize: the IPC reader's at a stream's
// end): the budget gives nothing back for it, and a 0-byte allocation
// still gives back the padding it was charged. Before, each nil free gave
// back 64 bytes never charged, and reading a spill file left a query's
// budget below zero.
func TestMemoryFreeOfNilGivesNothingBack(t *testing.T) {
	q := NewMemory("query", 0, nil)
	mem := q.Allocator(memory.NewGoAllocator())
	buf := memory.NewResizableBuffer(mem)
	buf.Release()
	if u := q.Used(); u != 0 {
		t.Fatalf("a buffer never allocated, released: the budget holds %d", u)
	}
	empty := mem.Allocate(0)
	mem.Free(empty)
	b := mem.Allocate(100)
	b = mem.Reallocate(300, b)
	mem.Free(b)
	if u := q.Used(); u != 0 {
		t.Fatalf("after allocations and their frees the budget holds %d", u)
	}
}
