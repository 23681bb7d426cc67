package coordinator

import (
	"errors"
	"testing"
	"time"

	"github.com/tierflow/tierflow/runtime/deploy"
)

// A user's submissions past CompilingPerUser wait their turn (a client
// submitting one query per edge source at once is served, not refused);
// only past SubmitBurst of them waiting is one refused.
func TestSubmissionsPastTheCompilesWaitTheirTurn(t *testing.T) {
	c := &Coordinator{cfg: Config{Bounds: Bounds{CompilingPerUser: 2, SubmitBurst: 3}},
		in: intake{tokens: map[string]float64{}, refilled: map[string]time.Time{}, users: map[string]*userIntake{}}}
	c.cfg.Bounds.defaults()
	var dones []func()
	var turns chan struct{}
	for i := range 5 {
		tu, done, err := c.take("alice")
		if err != nil {
			t.Fatalf("submission %d of 5 (2 compiling, 3 waiting) refused: %v", i+1, err)
		}
		turns, dones = tu, append(dones, done)
	}
	if _, _, err := c.take("alice"); !errors.Is(err, deploy.ErrLimit) {
		t.Fatalf("a 6th waiting submission: err %v, want %v", err, deploy.ErrLimit)
	}
	if _, done, err := c.take("bob"); err != nil {
		t.Fatalf("bob refused while alice waits: %v", err)
	} else {
		done()
	}
	// Two of alice's compile at once; a third waits for one to finish.
	turns <- struct{}{}
	turns <- struct{}{}
	select {
	case turns <- struct{}{}:
		t.Fatal("a third of alice's submissions took a turn while two compile")
	default:
	}
	<-turns
	dones[0]()
	if _, done, err := c.take("alice"); err != nil {
		t.Fatalf("alice refused after one of hers was answered: %v", err)
	} else {
		done()
	}
	for _, done := range dones[1:] {
		done()
	}
	if n := len(c.in.users); n != 0 {
		t.Errorf("%d users still held after every submission was answered", n)
	}
}
