package bind_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/logical"
)

// TestModelCallOptions binds a model call's WITH (max_batch, max_delay_ms)
// into the plan, and reports bad keys and values at their position.
func TestModelCallOptions(t *testing.T) {
	cat, err := catalog.LoadFile("testdata/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bindQ := func(q string) (*logical.LateralModel, error) {
		script, err := lang.Parse("q.sql", q)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := bind.New(cat).Bind(script.Statements[0])
		if err != nil {
			return nil, err
		}
		var lm *logical.LateralModel
		logical.Walk(plan.Root, func(n logical.Node) bool {
			if l, ok := n.(*logical.LateralModel); ok {
				lm = l
			}
			return lm == nil
		})
		return lm, nil
	}
	lm, err := bindQ("SELECT c.label FROM shelves CROSS JOIN LATERAL classify(image) WITH (max_batch = 16, max_delay_ms = 2.5) AS c(label, score)")
	if err != nil {
		t.Fatal(err)
	}
	if lm.Batch.MaxBatch != 16 || lm.Batch.MaxDelay != 2500*time.Microsecond {
		t.Fatalf("batch %+v", lm.Batch)
	}
	if !strings.Contains(lm.Describe(), "max_batch=16 max_delay=2.5ms") {
		t.Errorf("describe: %s", lm.Describe())
	}
	if w := lm.WithChildren(lm.Input).(*logical.LateralModel); w.Batch != lm.Batch {
		t.Errorf("WithChildren lost the batching: %+v", w.Batch)
	}
	lm, err = bindQ("SELECT c.label FROM shelves CROSS JOIN LATERAL classify(image) WITH (max_delay_ms = 0) AS c(label, score)")
	if err != nil || lm.Batch.MaxBatch != 0 || lm.Batch.MaxDelay != time.Nanosecond {
		t.Errorf("no waiting: %+v %v", lm, err)
	}
	lm, err = bindQ("SELECT c.label FROM shelves CROSS JOIN LATERAL classify(image) AS c(label, score)")
	if err != nil || lm.Batch != (logical.CallBatch{}) {
		t.Errorf("no options: %+v %v", lm.Batch, err)
	}
	for _, c := range []struct{ opts, want string }{
		{"max_batch = 0", "q.sql:1:70: max_batch wants an integer from 1 to 4096, got 0"},
		{"max_batch = 2.5", "max_batch wants an integer"},
		{"max_batch = 'x'", "max_batch wants an integer"},
		{"max_delay_ms = 5000000", "max_delay_ms wants milliseconds from 0 to 3600000, got 5000000"},
		{"max_delay_ms = 5, max_delay_ms = 6", "q.sql:1:88: option max_delay_ms is given twice"},
		{"batch = 3", `q.sql:1:70: unknown model call option "batch" (want max_batch, max_delay_ms)`},
	} {
		_, err := bindQ("SELECT c.label FROM shelves CROSS JOIN LATERAL classify(image) WITH (" + c.opts + ") AS c(label, score)")
		if !errors.Is(err, bind.ErrBind) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.opts, err, c.want)
		}
	}
}
