// Command classify streams the checked-in Fashion-MNIST subset through the ML
// operator (Arrow records -> dynamic batcher -> ONNX Runtime -> label/score
// columns) for each model variant and prints sample rows and the measured
// accuracy.
//
//	go run ./examples/fashion/classify
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/examples/fashion"
	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/runtime/onnx"
)

func main() {
	dir := flag.String("dir", "examples/fashion", "example directory (models/, data/)")
	variants := flag.String("variants", "", "comma-separated variants (default: all in models/variants.json)")
	device := flag.String("device", "auto", "cpu, cuda or auto")
	maxBatch := flag.Int("max-batch", 32, "largest batch")
	maxDelay := flag.Duration("max-delay", 2*time.Millisecond, "longest queue wait of a row")
	adaptive := flag.Bool("adaptive", true, "adapt the batch size to the input rate")
	show := flag.Int("show", 8, "sample rows to print per variant")
	ortLib := flag.String("ort-lib", "", "ONNX Runtime library (default: $TIERFLOW_ORT_LIB, then the setup cache)")
	flag.Parse()
	if err := run(*dir, *variants, onnx.Device(*device), ml.BatchConfig{MaxBatch: *maxBatch, MaxDelay: *maxDelay, Adaptive: *adaptive}, *show, *ortLib); err != nil {
		fmt.Fprintln(os.Stderr, "classify:", err)
		os.Exit(1)
	}
}

func run(dir, variants string, device onnx.Device, bc ml.BatchConfig, show int, ortLib string) error {
	vs, err := fashion.Variants(dir)
	if err != nil {
		return err
	}
	sub, err := fashion.LoadSubset(dir)
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for _, v := range strings.Split(variants, ",") {
		if v != "" {
			want[v] = true
		}
	}
	mem := memory.NewGoAllocator()
	tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "variant\tparams\tprovider\trows\taccuracy\tgenerator's accuracy (10k test)\tbatches\tmax queue delay")
	var reps []*fashion.Report
	for _, v := range vs {
		if len(want) > 0 && !want[v.Name] {
			continue
		}
		rep, err := fashion.Classify(mem, fashion.Options{Dir: dir, Variant: v.Name, Device: device, Batch: bc, OrtLib: ortLib})
		if err != nil {
			return err
		}
		reps = append(reps, rep)
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%.4f\t%.4f\t%d\t%s\n", v.Name, v.Params, rep.Provider, rep.Rows, rep.Accuracy, v.TestAccuracy, rep.Stats.Batches, rep.Stats.MaxQueueDelay.Round(time.Microsecond))
	}
	if len(reps) == 0 {
		return fmt.Errorf("no variant matches %q", variants)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Println("(the whole subset is submitted at once, so queue delays include waiting for the model)")
	last := reps[len(reps)-1]
	fmt.Printf("\nfirst %d rows with %s:\n", show, last.Variant)
	fmt.Println("id  true          predicted     score")
	for i := 0; i < show && i < last.Rows; i++ {
		fmt.Printf("%-3d %-13s %-13s %.3f\n", i, fashion.Labels[sub.Labels[i]], last.Predicted[i], last.Scores[i])
	}
	return nil
}
