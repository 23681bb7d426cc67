package dataflow

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A step's clock reading that is not its own - the calling thread's CPU
// clock read before the id of another thread its goroutine moved to (#25)
// - counts for no more than the step's wall time: the query's virtual time
// does not fall when the step ends, and a query levelled with it at the
// floor meanwhile does not find itself a lead ahead and wait at the gate
// for it. Traced in TestAbusiveQueriesFullSize beside the windows: one
// step's progress read 447 ms after 138 ms, the windows' virtual time fell
// by 310 ms at its end, and alice's next query waited 209 ms at the gate
// with 1.3 ms of steps (889 ms, 2.2 ms of steps, in an earlier session).
func TestCPUMisreadClockDoesNotLeadTheQueryBehind(t *testing.T) {
	clock := &fakeClock{}
	c := newCPU(10*time.Millisecond, clock.now)
	var misread atomic.Bool
	c.thread = func() (time.Duration, int) {
		if misread.Swap(false) {
			// Thread 7's id with a clock 400 ms behind it: another
			// thread's reading.
			return clock.now() - 400*time.Millisecond, 7
		}
		return clock.now(), 0
	}
	ctx := context.Background()
	m, a1 := c.Join("mallory"), c.Join("alice 1")
	misread.Store(true)
	long, err := m.enter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	short, err := m.enter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	clock.add(20 * time.Millisecond)
	// Mallory's short step ends while alice has nothing to do: the floor
	// rises to mallory's virtual time, her long step's progress in it.
	m.exit(short)
	a1.Leave()
	a2 := c.Join("alice 2")
	// Another step of mallory's goes on (she is not back from idle, which
	// would level her up to the floor), and the long step ends on another
	// thread than its id's: charged its wall time, 20 ms.
	busy, err := m.enter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer m.exit(busy)
	before := m.Used()
	m.exit(long)
	if after := m.Used(); after < before {
		t.Errorf("mallory's virtual time fell from %s to %s as her step ended", before, after)
	}
	// Alice's new query has taken no steps: it leads nobody, and goes at
	// once with the clock standing still.
	entered := make(chan error, 1)
	go func() {
		st, err := a2.enter(ctx)
		if err == nil {
			a2.exit(st)
		}
		entered <- err
	}()
	select {
	case err := <-entered:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		c.mu.Lock()
		lead := a2.virtual() - m.virtual()
		c.mu.Unlock()
		t.Fatalf("alice's new query waits at the gate, %s ahead of mallory with no steps of its own", lead)
	}
}

// threadCPU's reading and id name one thread, however its goroutine
// moves between threads: the clock of the thread whose id it gave reads
// at least as much right after. Before (#25) the calling thread's clock
// was read, then the id, and a goroutine Go moved between the two system
// calls gave one thread's time with another's id.
func TestThreadCPUReadsTheThreadItNames(t *testing.T) {
	if !threadCPUWorks() {
		t.Skip("no per-thread CPU clock here")
	}
	stop := make(chan struct{})
	var spinners sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		spinners.Add(1)
		go func() {
			defer spinners.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}
	var readers sync.WaitGroup
	var bad atomic.Int64
	var reads atomic.Int64
	end := time.Now().Add(time.Second)
	for range 4 * runtime.GOMAXPROCS(0) {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for time.Now().Before(end) {
				cpu, tid := threadCPU()
				if threadCPUOf(tid) < cpu {
					bad.Add(1)
				}
				reads.Add(1)
			}
		}()
	}
	readers.Wait()
	close(stop)
	spinners.Wait()
	if bad.Load() > 0 {
		t.Errorf("%d of %d readings were past their thread's clock read after them", bad.Load(), reads.Load())
	}
}

// A step the cap on processors holds (its query a slice ahead of another
// joined one, on its share of the processors) waits a slice from its
// arrival at most, however often other steps' ends wake it meanwhile.
// Each wake-up used to set a whole slice again: beside a newcomer whose
// part was being built, alice's query waited 27-32 ms at the gate with
// 1 ms of steps (the rule: her steps + 2 slices).
func TestCPUCapHoldsASliceFromArrival(t *testing.T) {
	const slice = 100 * time.Millisecond
	start := time.Now()
	c := newCPU(slice, func() time.Duration { return time.Since(start) })
	c.procs = 2
	ahead := c.Join("ahead")
	c.Join("building") // joined, building its part: not stepping yet
	c.mu.Lock()
	ahead.used = 3 * slice // the newcomer, building its part, has not stepped
	c.mu.Unlock()
	ctx := context.Background()
	first, err := ahead.enter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Other steps end every nine tenths of a slice: each wakes the gate.
	stop := make(chan struct{})
	woke := make(chan struct{})
	go func() {
		defer close(woke)
		tick := time.NewTicker(slice * 9 / 10)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				c.mu.Lock()
				c.broadcast()
				c.mu.Unlock()
			}
		}
	}()
	second, err := ahead.enter(ctx)
	close(stop)
	<-woke
	if err != nil {
		t.Fatal(err)
	}
	ahead.exit(second)
	ahead.exit(first)
	if st := ahead.Stats(); st.Waits != 1 || st.LongestWait < slice || st.LongestWait > slice+slice/2 {
		t.Errorf("the capped step waited %s (%d waits): want a slice from its arrival, %s, and not a slice from its last wake-up", st.LongestWait, st.Waits, slice)
	}
}
