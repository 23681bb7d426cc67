package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var updateGoldens = flag.Bool("update", false, "rewrite the golden files under testdata/")

// runTierflow runs the CLI in-process and returns stdout, stderr and the exit code.
func runTierflow(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

// masks hide what varies between runs: the optimizer's time.
var masks = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`(?m)^Optimizer time: .*$`), "Optimizer time: (masked)"},
	{regexp.MustCompile(`"optimizer_ms": [0-9.e+-]+`), `"optimizer_ms": 0`},
	// How far an infeasible target is from reachable comes from a search
	// bounded by time inside the optimizer: the numbers vary under load.
	{regexp.MustCompile(`(?m)^(Reason: \S+ [0-9.]+ items/s).*$`), "$1 ... (masked)"},
	{regexp.MustCompile(`(?m)^(stderr: .*: no plan meets the objectives: \S+ [0-9.]+ items/s).*$`), "$1 ... (masked)"},
}

func mask(s string) string {
	for _, m := range masks {
		s = m.re.ReplaceAllString(s, m.with)
	}
	return s
}

// TestExplainGolden runs every testdata/explain/*.txt case: the first line is
// the command line (after `tierflow`), then a line "----", then the expected
// output (stdout, then stderr prefixed "stderr: ", then "exit N" if not 0).
// go test -run TestExplainGolden -update rewrites them.
func TestExplainGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/explain/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			cmdline, _, ok := strings.Cut(string(b), "\n----\n")
			if !ok {
				t.Fatalf("%s: no ---- separator", f)
			}
			stdout, stderr, code := runTierflow(t, strings.Fields(cmdline)...)
			got := mask(stdout)
			for _, l := range strings.Split(strings.TrimRight(stderr, "\n"), "\n") {
				if l != "" {
					got += mask("stderr: "+l) + "\n"
				}
			}
			if code != 0 {
				got += "exit " + string(rune('0'+code)) + "\n"
			}
			want := cmdline + "\n----\n" + got
			if *updateGoldens {
				if err := os.WriteFile(f, []byte(want), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if string(b) != want {
				t.Errorf("%s: output differs (go test ./cmd/tierflow -run TestExplainGolden -update to accept)\n--- got\n%s\n--- want\n%s", f, want, b)
			}
		})
	}
}

type contract struct {
	Strategy    string  `json:"strategy"`
	Feasible    bool    `json:"feasible"`
	ComputeCost float64 `json:"compute_cost"`
	NetworkCost float64 `json:"network_cost"`
	TotalCost   float64 `json:"total_cost"`
	Accuracy    float64 `json:"accuracy"`
	Throughput  float64 `json:"throughput"`
	OptimizerMs float64 `json:"optimizer_ms"`
	Operators   []struct {
		Name    string `json:"name"`
		Variant string `json:"variant"`
		Workers []struct {
			Name  string  `json:"name"`
			Tier  string  `json:"tier"`
			Share float64 `json:"share"`
		} `json:"workers"`
		Batch *struct {
			MaxBatch   int     `json:"max_batch"`
			MaxDelayMs float64 `json:"max_delay_ms"`
			Adaptive   bool    `json:"adaptive"`
			BatchFrom  string  `json:"max_batch_from"`
			DelayFrom  string  `json:"max_delay_from"`
		} `json:"batch"`
		Estimated []string `json:"estimated_latency_on"`
	} `json:"operators"`
	Budget *float64 `json:"budget"`
	Margin *float64 `json:"margin"`
	Reason string   `json:"reason"`
}

func explainJSON(t *testing.T, args ...string) contract {
	t.Helper()
	stdout, stderr, code := runTierflow(t, append([]string{"explain", "--format", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var c contract
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	return c
}

// TestVQAEndToEnd: on the reference inputs, auto beats the prototype's
// published 7.5088 at accuracy >= 56, and exhaustive (which proves optimality)
// finds the same cost.
func TestVQAEndToEnd(t *testing.T) {
	q := "../../examples/vqa/query.sql"
	auto := explainJSON(t, "--strategy", "auto", q)
	if !auto.Feasible || auto.TotalCost >= 7.5088 || auto.Accuracy < 56.0 {
		t.Fatalf("auto: feasible %v total %v accuracy %v; want a feasible plan under 7.5088 at >= 56", auto.Feasible, auto.TotalCost, auto.Accuracy)
	}
	ex := explainJSON(t, "--strategy", "exhaustive", q)
	if !ex.Feasible || ex.TotalCost-auto.TotalCost > 1e-9 || auto.TotalCost-ex.TotalCost > 1e-9 {
		t.Fatalf("exhaustive %v vs auto %v", ex.TotalCost, auto.TotalCost)
	}
	if len(auto.Operators) != 3 {
		t.Fatalf("want 3 operators, got %+v", auto.Operators)
	}
	for _, op := range auto.Operators {
		sum := 0.0
		for _, w := range op.Workers {
			sum += w.Share
		}
		if sum < 0.999 || sum > 1.001 {
			t.Errorf("%s: shares sum to %v", op.Name, sum)
		}
		// Every model call carries the batching it will run with: at 40
		// items/s and 5 ms, the planner's smallest batch.
		if b := op.Batch; b == nil || !b.Adaptive || b.MaxBatch != 4 || b.MaxDelayMs != 5 || b.BatchFrom != "planner" {
			t.Errorf("%s: batch %+v, want adaptive, up to 4 rows, 5 ms, from the planner", op.Name, b)
		}
	}
	// An unreachable target is explained (the plan, with its reason), and
	// is the command's failure: exit 1 at the objective.
	stdout, stderr, code := runTierflow(t, "explain", "--format", "json", "--accuracy", "99", q)
	var inf contract
	if err := json.Unmarshal([]byte(stdout), &inf); err != nil || code != exitFailure || inf.Feasible || inf.Reason == "" ||
		!strings.Contains(stderr, "query.sql:27:7: no plan meets the objectives") {
		t.Fatalf("accuracy 99: exit %d, want 1 with an infeasible plan and its reason (%v): %+v\n%s", code, err, inf, stderr)
	}
}

// TestVQAFrontierAndBudget: EXPLAIN (FRONTIER) on examples/vqa lists plans
// that do not dominate each other, from the most accurate plan down to the
// cheapest; BUDGET picks the most accurate one that fits and shows the
// margin.
func TestVQAFrontierAndBudget(t *testing.T) {
	stdout, stderr, code := runTierflow(t, "explain", "--format", "json", "../../examples/vqa/frontier.sql")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var fr struct {
		Frontier []struct {
			Accuracy  float64           `json:"accuracy"`
			TotalCost float64           `json:"total_cost"`
			Variants  map[string]string `json:"variants"`
			Plan      contract          `json:"plan"`
		} `json:"frontier"`
	}
	if err := json.Unmarshal([]byte(stdout), &fr); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	pts := fr.Frontier
	if len(pts) < 3 {
		t.Fatalf("%d frontier points: %s", len(pts), stdout)
	}
	for i, a := range pts {
		if !a.Plan.Feasible || len(a.Variants) != 3 || a.Plan.TotalCost != a.TotalCost {
			t.Errorf("point %d: %+v", i, a)
		}
		for j, b := range pts {
			if i != j && b.Accuracy >= a.Accuracy && b.TotalCost <= a.TotalCost {
				t.Errorf("point %d (%.4g, %.4f) dominated by %d (%.4g, %.4f)", i, a.Accuracy, a.TotalCost, j, b.Accuracy, b.TotalCost)
			}
		}
	}
	// The ends: the cheapest plan of all (exhaustive without an accuracy
	// floor) and the most accurate one (the most accurate variants).
	q := "../../examples/vqa/query.sql"
	cheap := explainJSON(t, "--strategy", "exhaustive", "--accuracy", "0", q)
	if last := pts[len(pts)-1]; last.TotalCost-cheap.TotalCost > 1e-9 || cheap.TotalCost-last.TotalCost > 1e-9 || last.Accuracy != cheap.Accuracy {
		t.Errorf("cheapest point (%.4g, %.4f), exhaustive (%.4g, %.4f)", last.Accuracy, last.TotalCost, cheap.Accuracy, cheap.TotalCost)
	}
	top := explainJSON(t, "--strategy", "most-accurate", "--accuracy", "0", q)
	if first := pts[0]; first.Accuracy != top.Accuracy || first.TotalCost > top.TotalCost+1e-9 {
		t.Errorf("most accurate point (%.4g, %.4f), most-accurate strategy (%.4g, %.4f)", first.Accuracy, first.TotalCost, top.Accuracy, top.TotalCost)
	}
	// A budget between two points gets the more accurate of those it can pay.
	b := explainJSON(t, "../../examples/vqa/budget.sql")
	if !b.Feasible || b.Budget == nil || *b.Budget != 9 || b.Margin == nil || b.TotalCost > 9 || *b.Margin != 9-b.TotalCost {
		t.Fatalf("budget 9: %+v", b)
	}
	for _, p := range pts {
		if p.TotalCost <= 9 && p.Accuracy > b.Accuracy {
			t.Errorf("budget 9 chose accuracy %.4g, but the frontier has %.4g at %.4f", b.Accuracy, p.Accuracy, p.TotalCost)
		}
	}
	// Running a query whose budget is below the cheapest plan fails at its
	// BUDGET, naming the cheapest cost.
	_, stderr, code = runTierflow(t, "run", "--local", "--catalog", "../../examples/vqa/catalog.yaml", "--infra", "../../examples/vqa/infra.yaml", "testdata/explain/budget_low.sql")
	if code != exitFailure || !strings.Contains(stderr, "budget_low.sql:19:7: ") || !strings.Contains(stderr, "cheapest plan that meets the other targets: 7.0266 per hour") {
		t.Errorf("run with BUDGET <= 5: exit %d, %s", code, stderr)
	}
}

// TestExplainDOTRenders feeds the DOT output to Graphviz when it is installed.
func TestExplainDOTRenders(t *testing.T) {
	dot, err := exec.LookPath("dot")
	if err != nil {
		t.Skip("Graphviz is not installed (apt-get install graphviz): DOT rendering not checked")
	}
	stdout, stderr, code := runTierflow(t, "explain", "--format", "dot", "../../examples/vqa/query.sql")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	cmd := exec.Command(dot, "-Tsvg")
	cmd.Stdin = strings.NewReader(stdout)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("dot -Tsvg: %v\n%s\n%s", err, errb.String(), stdout)
	}
	if !strings.Contains(out.String(), "<svg") || !strings.Contains(out.String(), "tier cloud") {
		t.Fatalf("unexpected SVG:\n%s", out.String())
	}
}
