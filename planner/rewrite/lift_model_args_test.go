package rewrite_test

import (
	"strings"
	"testing"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/planner/rewrite"
)

func bindScript(t *testing.T, src string) *logical.Plan {
	t.Helper()
	script, err := lang.Parse("q.sql", src)
	if err != nil {
		t.Fatal(err)
	}
	cat := &catalog.Catalog{}
	var plan *logical.Plan
	for _, st := range script.Statements {
		if ok, err := bind.Apply(cat, st); ok {
			if err != nil {
				t.Fatal(err)
			}
			continue
		}
		if plan, err = bind.New(cat).Bind(st); err != nil {
			t.Fatal(err)
		}
	}
	return plan
}

// A model called on an expression (a crop of the frame by the detector's
// box) gets the expression computed in a projection below it, fused with
// the detector's output projection: the call takes a column, the frame is
// dropped before the call's link, and the query's schema is unchanged.
func TestLiftModelArgs(t *testing.T) {
	plan := bindScript(t, `
CREATE MODEL detect OUTPUTS (x0 INT, y0 INT, x1 INT, y1 INT, score FLOAT) VARIANTS (a FROM 'd.onnx');
CREATE MODEL read OUTPUTS (text VARCHAR) VARIANTS (a FROM 'r.onnx');
CREATE STREAM scenes (id BIGINT, image BLOB) FROM FILE 's.arrow' FORMAT ARROW;
SELECT s.id, d.score, r.text FROM scenes AS s
CROSS JOIN LATERAL detect(s.image) AS d(x0, y0, x1, y1, score)
CROSS JOIN LATERAL read(crop_image(s.image, d.x0, d.y0, d.x1, d.y1)) AS r(text);`)
	root := rewrite.Apply(plan).Root
	if !root.Schema().Equal(plan.Root.Schema()) {
		t.Errorf("schema %s, want %s", root.Schema(), plan.Root.Schema())
	}
	var read *logical.LateralModel
	logical.Walk(root, func(n logical.Node) bool {
		if lm, ok := n.(*logical.LateralModel); ok {
			for _, a := range lm.Args {
				if _, ok := a.(*expr.Column); !ok {
					t.Errorf("%s takes %s, not a column", lm.Name, a)
				}
			}
			if lm.Name == "read" {
				read = lm
			}
		}
		return true
	})
	if read == nil {
		t.Fatalf("no call of read:\n%s", logical.Format(root, nil))
	}
	p, ok := read.Input.(*logical.Project)
	if !ok {
		t.Fatalf("read's input is %T, want the projection that crops:\n%s", read.Input, logical.Format(root, nil))
	}
	if _, ok := p.Input.(*logical.LateralModel); !ok {
		t.Errorf("the crop's projection reads %T, want the detector's call (one projection between the models):\n%s", p.Input, logical.Format(root, nil))
	}
	arg := read.Args[0].(*expr.Column)
	if c, ok := p.Exprs[arg.Index].(*expr.Call); !ok || c.Func != "crop_image" {
		t.Errorf("read's argument is %s, want the crop", p.Exprs[arg.Index])
	}
	for _, f := range p.Schema().Fields() {
		if f.Name == "image" {
			t.Errorf("the frame rides on to read: %s", p.Schema())
		}
	}
	if s := logical.Format(root, nil); !strings.Contains(s, "crop_image(image") {
		t.Errorf("plan:\n%s", s)
	}
}
