package planner

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/explain"
	"github.com/tierflow/tierflow/planner/infra"
)

const dataAwareQuery = `SELECT id, c.label
FROM shelf CROSS JOIN LATERAL classify(image) AS c(label, score)
WITH (ACCURACY >= 85 DATA AWARE, THROUGHPUT >= 1000 PER SECOND);`

// mixOf spreads weights over the Fashion-MNIST classes in label order.
func mixOf(w ...float64) map[string]float64 {
	names := []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}
	m := map[string]float64{}
	for i, x := range w {
		m[names[i]] = x
	}
	return m
}

func planFashion(t *testing.T, src string, mix map[string]float64) *Result {
	t.Helper()
	cat, err := catalog.LoadFile("../examples/fashion/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	inf, err := infra.LoadFile("../examples/fashion/infra.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := lang.Parse("q.sql", src)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{}
	if mix != nil {
		o.ClassMix = map[string]map[string]float64{"classify": mix}
	}
	res, err := PlanStatement(context.Background(), s.Statements[0], cat, inf, o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestDataAwareAccuracyPicksTheVariant: the profiled choice for ACCURACY >= 85
// is mlp-small (87.02); on a footwear shelf the cheapest variant is accurate
// enough, on a winter rack of coats and pullovers mlp-small falls below 85
// and a stronger one is chosen. Without DATA AWARE the mix changes nothing.
func TestDataAwareAccuracyPicksTheVariant(t *testing.T) {
	footwear := mixOf(2, 2, 2, 2, 2, 30, 2, 30, 3, 25)
	winter := mixOf(5, 5, 35, 3, 40, 1, 5, 1, 3, 2)
	for _, tc := range []struct {
		name string
		src  string
		mix  map[string]float64
		want []string
	}{
		{"profiled", dataAwareQuery, nil, []string{"mlp-small"}},
		{"footwear", dataAwareQuery, footwear, []string{"logreg"}},
		{"winter", dataAwareQuery, winter, []string{"mlp-large", "cnn"}},
		{"not data aware", strings.Replace(dataAwareQuery, " DATA AWARE", "", 1), winter, []string{"mlp-small"}},
	} {
		res := planFashion(t, tc.src, tc.mix)
		op := res.Physical.Operator("classify")
		if op == nil || !res.Physical.Feasible {
			t.Fatalf("%s: no feasible plan: %s", tc.name, res.Physical.Reason)
		}
		ok := false
		for _, w := range tc.want {
			ok = ok || op.Variant == w
		}
		if !ok {
			t.Errorf("%s: variant %s (accuracy %.2f), want one of %v", tc.name, op.Variant, op.Accuracy, tc.want)
		}
		if tc.name == "winter" {
			if op.Accuracy < 85 || op.ClassFreq == nil {
				t.Errorf("winter: accuracy %.2f, mix %v", op.Accuracy, op.ClassFreq)
			}
			txt := explain.Text(res.Physical)
			if !strings.Contains(txt, "recall by class (estimated share of the stream): ") || !strings.Contains(txt, "Coat 86.3 (40%)") {
				t.Errorf("EXPLAIN lacks the data-aware recall line:\n%s", txt)
			}
		}
	}
}

// TestDataAwareNeedsPerClassProfiles: DATA AWARE against a catalog without
// classes: is a bind error at the objective.
func TestDataAwareNeedsPerClassProfiles(t *testing.T) {
	cat, err := catalog.LoadFile("../examples/fashion/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c := cat.Clone()
	m := *c.Model("classify")
	m.Variants = nil
	for _, v := range cat.Model("classify").Variants {
		x := *v
		x.Classes = nil
		m.Variants = append(m.Variants, &x)
	}
	for i, mm := range c.Models {
		if mm.Name == "classify" {
			c.Models[i] = &m
		}
	}
	s, err := lang.Parse("q.sql", dataAwareQuery)
	if err != nil {
		t.Fatal(err)
	}
	_, err = bind.New(c).Bind(s.Statements[0])
	if !errors.Is(err, bind.ErrBind) || !strings.Contains(err.Error(), "3:7") || !strings.Contains(err.Error(), "per-class recall") {
		t.Fatalf("err = %v, want a bind error at 3:7 about per-class recall", err)
	}
	if got := lang.Print(s.Statements[0]); !strings.Contains(got, "ACCURACY >= 85 DATA AWARE") {
		t.Fatalf("printed %q", got)
	}
}
