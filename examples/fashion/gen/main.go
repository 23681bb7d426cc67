// Command gen builds the Fashion-MNIST model zoo of the fashion example: it trains
// classifier variants of increasing size in pure Go, writes them as ONNX under
// examples/fashion/models, measures each on the full 10k test set, and writes a
// small labelled evaluation subset under examples/fashion/data. Its outputs are
// checked in, so running the example needs neither this command nor the dataset.
//
// The dataset comes from the Debian package dataset-fashion-mnist:
//
//	apt-get install -y dataset-fashion-mnist
//	go run ./examples/fashion/gen
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tierflow/tierflow/examples/fashion"
	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/runtime/modelzoo"
)

type variant struct {
	Name   string
	Sizes  []int // dense layer widths; for a CNN, the head after the pooled maps
	Epochs int
	LR     float64
	Decay  float64
	Conv   int // CNN filters (5x5, then 2x2 max pooling); 0 for an MLP
	Side   int // input side in pixels (0: 28): the images are resized to it (ml.ResizeArea)
}

// model is what the generator needs of an MLP or a CNN.
type model interface {
	Train(x []float32, y []uint8, cfg modelzoo.TrainConfig) error
	Accuracy(x []float32, y []uint8) float64
	Params() int
	graph(name string) *modelzoo.Graph
}

type mlp struct {
	*modelzoo.MLP
	side int
}

func (m mlp) graph(name string) *modelzoo.Graph { return m.Graph(name, m.side) }

type cnn struct{ *modelzoo.CNN }

func (c cnn) graph(name string) *modelzoo.Graph { return c.Graph(name) }

// The variants, smallest first. Each is trained from its own seed so adding one
// does not change the others.
var variants = []variant{
	{"logreg", []int{784, 10}, 5, 2e-3, 0.8, 0, 0},
	{"mlp-small", []int{784, 64, 10}, 8, 1e-3, 0.8, 0, 0},
	{"mlp-large", []int{784, 256, 128, 10}, 10, 1e-3, 0.75, 0, 0},
	{"cnn", []int{64, 10}, 8, 1e-3, 0.8, 8, 0},
}

// garmentVariants are the coarse classifier of the cascade example (four garment
// groups, fashion.Groups), smallest first. Fewer epochs: four classes that are
// far apart converge fast.
var garmentVariants = []variant{
	{"garment-logreg", []int{784, 4}, 3, 2e-3, 0.8, 0, 0},
	{"garment-mlp-small", []int{784, 16, 4}, 3, 1e-3, 0.8, 0, 0},
	{"garment-mlp", []int{784, 96, 4}, 3, 1e-3, 0.8, 0, 0},
}

// sizeVariants are the data-adaptation family (Jellyfish 7.3): one MLP per
// input size, trained on the images as a sender resizes them before a slow
// link (ml.ResizeArea), so a frame sent at 14x14 is classified by a model
// that learnt from 14x14 frames.
var sizeVariants = []variant{
	{"fit-14", []int{196, 64, 10}, 5, 1e-3, 0.8, 0, 14},
	{"fit-20", []int{400, 64, 10}, 5, 1e-3, 0.8, 0, 20},
	{"fit-28", []int{784, 64, 10}, 5, 1e-3, 0.8, 0, 28},
}

func main() {
	src := flag.String("data", "/usr/share/datasets/fashion-mnist", "directory with the Fashion-MNIST idx.gz files")
	out := flag.String("out", "examples/fashion", "example directory to write models/ and data/ under")
	subset := flag.Int("subset", 2000, "test images to keep as the checked-in evaluation subset")
	only := flag.String("only", "", "train only this variant")
	seed := flag.Uint64("seed", 1, "training seed")
	stream := flag.Bool("stream", false, "only write data/shelf.arrow (the query's stream file) from the checked-in subset")
	family := flag.String("family", "classify", "model family to train: classify (10 classes) or garment (4 groups)")
	flag.Parse()
	if *stream {
		sub, err := fashion.LoadSubset(*out)
		if err == nil {
			err = sub.WriteStream(filepath.Join(*out, "data", "shelf.arrow"), 100)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*src, *out, *subset, *only, *family, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(src, out string, subset int, only, family string, seed uint64) error {
	vars, labels, resFile, seedBase := variants, fashion.Labels, "variants.json", seed
	switch family {
	case "classify":
	case "garment":
		vars, labels, resFile, seedBase = garmentVariants, fashion.Groups, "garment-variants.json", seed+100000
	case "sizes":
		vars, resFile, seedBase = sizeVariants, "size-variants.json", seed+200000
	default:
		return fmt.Errorf("unknown -family %q: want classify, garment or sizes", family)
	}
	load := func(name string) (*modelzoo.IDX, error) {
		x, err := modelzoo.ReadIDXFile(filepath.Join(src, name))
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("%w (install the Debian package dataset-fashion-mnist, or pass -data)", err)
		}
		return x, err
	}
	trainX, err := load("train-images-idx3-ubyte.gz")
	if err != nil {
		return err
	}
	trainY, err := load("train-labels-idx1-ubyte.gz")
	if err != nil {
		return err
	}
	testX, err := load("t10k-images-idx3-ubyte.gz")
	if err != nil {
		return err
	}
	testY, err := load("t10k-labels-idx1-ubyte.gz")
	if err != nil {
		return err
	}
	fmt.Printf("data: %d train, %d test images of %v\n", trainX.Items(), testX.Items(), trainX.Dims[1:])
	for _, d := range []string{"models", "data"} {
		if err := os.MkdirAll(filepath.Join(out, d), 0o755); err != nil {
			return err
		}
	}
	subX, subY := testX.Head(subset), testY.Head(subset)
	if err := modelzoo.WriteIDXFile(filepath.Join(out, "data", "test-images-idx3-ubyte.gz"), subX); err != nil {
		return err
	}
	if err := modelzoo.WriteIDXFile(filepath.Join(out, "data", "test-labels-idx1-ubyte.gz"), subY); err != nil {
		return err
	}
	xs, xt, xsub := trainX.Floats(), testX.Floats(), subX.Floats()
	ytrain, ytest, ysub := trainY.Data, testY.Data, subY.Data
	if family == "garment" {
		ytrain, ytest, ysub = fashion.GroupOf(ytrain), fashion.GroupOf(ytest), fashion.GroupOf(ysub)
	}

	resPath := filepath.Join(out, "models", resFile)
	var results []fashion.Variant
	if b, err := os.ReadFile(resPath); err == nil && only != "" {
		_ = json.Unmarshal(b, &results)
	}
	for i, v := range vars {
		if only != "" && v.Name != only {
			continue
		}
		side := 28
		if v.Side > 0 {
			side = v.Side
		}
		xs, xt, xsub := resized(xs, side), resized(xt, side), resized(xsub, side)
		var m model = mlp{modelzoo.NewMLP(v.Sizes, labels, seedBase+uint64(i)*1000), side}
		if v.Conv > 0 {
			m = cnn{modelzoo.NewCNN(28, v.Conv, 5, v.Sizes, labels, seedBase+uint64(i)*1000)}
		}
		start := time.Now()
		err := m.Train(xs, ytrain, modelzoo.TrainConfig{
			Epochs: v.Epochs, Batch: 64, LR: v.LR, LRDecay: v.Decay, Seed: seedBase + uint64(i)*1000 + 1,
			Progress: func(ep int, loss float64) {
				fmt.Printf("%s: epoch %d/%d loss %.4f (%s)\n", v.Name, ep, v.Epochs, loss, time.Since(start).Round(time.Second))
			},
		})
		if err != nil {
			return err
		}
		r := fashion.Variant{
			Name: v.Name, File: v.Name + ".onnx", Layers: v.Sizes, Params: m.Params(), Epochs: v.Epochs, Side: v.Side,
			TestAccuracy:   m.Accuracy(xt, ytest),
			SubsetAccuracy: m.Accuracy(xsub, ysub),
			TrainSeconds:   time.Since(start).Seconds(),
		}
		if err := m.graph(v.Name).WriteFile(filepath.Join(out, "models", r.File)); err != nil {
			return err
		}
		fmt.Printf("%s: %d params, test accuracy %.4f, subset accuracy %.4f\n", v.Name, r.Params, r.TestAccuracy, r.SubsetAccuracy)
		replaced := false
		for j := range results {
			if results[j].Name == r.Name {
				results[j], replaced = r, true
			}
		}
		if !replaced {
			results = append(results, r)
		}
	}
	b, err := json.MarshalIndent(results, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(resPath, append(b, '\n'), 0o644)
}

// resized is every 28x28 image of x at side x side (x itself at 28).
func resized(x []float32, side int) []float32 {
	if side == 28 {
		return x
	}
	n := len(x) / 784
	out := make([]float32, 0, n*side*side)
	var buf []float32
	for i := 0; i < n; i++ {
		buf = ml.ResizeArea(buf, x[i*784:(i+1)*784], 28, side)
		out = append(out, buf...)
	}
	return out
}
