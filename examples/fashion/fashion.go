// Package fashion is the Fashion-MNIST example: a model zoo of classifier
// variants trained by the project's own generator (./gen: four 10-class
// variants and three garment-group variants), a labelled subset of the test set
// (also as an event-time Arrow stream file for the queries classify.sql and
// cascade.sql), Classify, which streams that subset as Arrow records through
// the ML operator (dynamic batching, ONNX Runtime) and measures accuracy, and
// EvaluateCascade, the independent evaluation of the two-model workflow.
//
// Everything it reads is checked in under models/ and data/, so it runs on a fresh
// clone without training or downloads.
package fashion

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/runtime/modelzoo"
	"github.com/tierflow/tierflow/runtime/onnx"
)

// Labels are the Fashion-MNIST classes in index order (also in every model's
// metadata under modelzoo.MetaLabels).
var Labels = []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}

// Groups are the garment groups of the coarse classifier (the "garment" model
// family of the cascade example), in index order.
var Groups = []string{"tops", "bottoms", "footwear", "bags"}

// groupOfClass maps a Fashion-MNIST class index to its index in Groups.
var groupOfClass = [10]uint8{0, 1, 0, 0, 0, 2, 0, 2, 3, 2}

// GroupOf maps class indexes to garment group indexes.
func GroupOf(classes []uint8) []uint8 {
	out := make([]uint8, len(classes))
	for i, c := range classes {
		out[i] = groupOfClass[c]
	}
	return out
}

// ImageShape is the per-row shape of the image tensor column.
var ImageShape = []int64{1, 28, 28}

// Variant is one line of models/variants.json, written by the generator.
type Variant struct {
	Name   string `json:"name"`
	File   string `json:"file"`
	Layers []int  `json:"layers"`
	Params int    `json:"params"`
	Epochs int    `json:"epochs"`
	// Side is the input side in pixels of a size-adaptation variant (0: 28).
	Side           int     `json:"side,omitempty"`
	TestAccuracy   float64 `json:"test_accuracy"`
	SubsetAccuracy float64 `json:"subset_accuracy"`
	TrainSeconds   float64 `json:"train_seconds"`
}

// Variants reads dir/models/variants.json.
func Variants(dir string) ([]Variant, error) {
	b, err := os.ReadFile(filepath.Join(dir, "models", "variants.json"))
	if err != nil {
		return nil, err
	}
	var vs []Variant
	if err := json.Unmarshal(b, &vs); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "models", "variants.json"), err)
	}
	return vs, nil
}

// Subset is the checked-in labelled evaluation subset.
type Subset struct {
	Images []float32 // n*784, scaled to [0,1]
	Labels []uint8
}

// LoadSubset reads dir/data/test-{images,labels}-*.gz.
func LoadSubset(dir string) (*Subset, error) {
	x, err := modelzoo.ReadIDXFile(filepath.Join(dir, "data", "test-images-idx3-ubyte.gz"))
	if err != nil {
		return nil, err
	}
	y, err := modelzoo.ReadIDXFile(filepath.Join(dir, "data", "test-labels-idx1-ubyte.gz"))
	if err != nil {
		return nil, err
	}
	if x.Items() != y.Items() || x.ItemSize() != 784 {
		return nil, fmt.Errorf("fashion subset: %d images of %d values, %d labels", x.Items(), x.ItemSize(), y.Items())
	}
	return &Subset{Images: x.Floats(), Labels: y.Data}, nil
}

// Schema is the stream of images: an id and the image tensor.
func Schema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		ml.TensorField("image", ImageShape),
	}, nil)
}

// Records cuts the subset into records of size rows (the stream's input batches).
func (s *Subset) Records(mem memory.Allocator, size int) ([]arrow.Record, error) {
	schema := Schema()
	var out []arrow.Record
	for start := 0; start < len(s.Labels); start += size {
		n := min(size, len(s.Labels)-start)
		ids := array.NewInt64Builder(mem)
		for i := 0; i < n; i++ {
			ids.Append(int64(start + i))
		}
		idCol := ids.NewArray()
		ids.Release()
		img, err := ml.NewTensorColumn(mem, ImageShape, s.Images[start*784:(start+n)*784])
		if err != nil {
			idCol.Release()
			return nil, err
		}
		out = append(out, array.NewRecord(schema, []arrow.Array{idCol, img}, int64(n)))
		idCol.Release()
		img.Release()
	}
	return out, nil
}

// Options configure Classify.
type Options struct {
	Dir      string // the example directory (holds models/ and data/)
	Variant  string
	Device   onnx.Device
	Batch    ml.BatchConfig
	RecordOf int // rows per input record (default 50)
	Limit    int // classify only the first Limit rows (0: all)
	OrtLib   string
}

// Report is what Classify measured.
type Report struct {
	Variant   string
	Provider  string
	Rows      int
	Correct   int
	Accuracy  float64
	Failed    int
	Elapsed   time.Duration
	Stats     ml.RunnerStats
	Predicted []string // label per row, in order
	Scores    []float32
}

// Classify streams the subset through the ML operator and compares the predicted
// labels with the true ones.
func Classify(mem memory.Allocator, o Options) (*Report, error) {
	if o.RecordOf == 0 {
		o.RecordOf = 50
	}
	sub, err := LoadSubset(o.Dir)
	if err != nil {
		return nil, err
	}
	if o.Limit > 0 && o.Limit < len(sub.Labels) {
		sub.Labels = sub.Labels[:o.Limit]
		sub.Images = sub.Images[:o.Limit*784]
	}
	env, err := onnx.Open(o.OrtLib)
	if err != nil {
		return nil, err
	}
	sess, err := env.Session(filepath.Join(o.Dir, "models", o.Variant+".onnx"), onnx.Options{Device: o.Device})
	if err != nil {
		return nil, err
	}
	labels, ok := sess.Metadata(modelzoo.MetaLabels)
	if !ok {
		return nil, fmt.Errorf("%s: model has no %s metadata", o.Variant, modelzoo.MetaLabels)
	}
	model, err := ml.Bind(sess, Schema(), ml.Config{
		Input:    "image",
		Heads:    []ml.Head{{Kind: ml.Classify, Output: "probs", Labels: strings.Split(labels, ",")}},
		MaxBatch: o.Batch.MaxBatch, // 0: the default
	})
	if err != nil {
		return nil, err
	}
	recs, err := sub.Records(mem, o.RecordOf)
	if err != nil {
		return nil, err
	}
	runner, err := ml.NewRunner(model, mem, o.Batch)
	if err != nil {
		for _, r := range recs {
			r.Release()
		}
		return nil, err
	}
	start := time.Now()
	go func() {
		for i, r := range recs {
			_ = runner.Submit(r, i)
			r.Release()
		}
		runner.Close()
	}()
	rep := &Report{Variant: o.Variant, Provider: sess.Provider()}
	names := strings.Split(labels, ",")
	var firstErr error
	for res := range runner.Results() {
		if res.Err != nil {
			if firstErr == nil {
				firstErr = res.Err
			}
			continue // keep draining so the runner and the submitter finish
		}
		rec := res.Record
		lab := rec.Column(2).(*array.String)
		score := rec.Column(3).(*array.Float32)
		for i := 0; i < int(rec.NumRows()); i++ {
			row := rep.Rows
			rep.Rows++
			if lab.IsNull(i) {
				rep.Failed++
				rep.Predicted = append(rep.Predicted, "")
				rep.Scores = append(rep.Scores, 0)
				continue
			}
			rep.Predicted = append(rep.Predicted, lab.Value(i))
			rep.Scores = append(rep.Scores, score.Value(i))
			if lab.Value(i) == names[sub.Labels[row]] {
				rep.Correct++
			}
		}
		rec.Release()
	}
	if firstErr != nil {
		return nil, firstErr
	}
	rep.Elapsed = time.Since(start)
	rep.Stats = runner.Stats()
	rep.Accuracy = float64(rep.Correct) / float64(rep.Rows)
	return rep, nil
}

// StreamInterval is the event-time gap between consecutive images of the
// stream file (100 images a second of event time).
const StreamInterval = 10 * time.Millisecond

// StreamEpoch is the event time of the stream file's first image.
var StreamEpoch = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// StreamSchema is the labelled image stream the queries read (data/shelf.arrow):
// id, event time, the image tensor, and the true class and garment group.
func StreamSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_us},
		{Name: "image", Type: arrow.FixedSizeListOf(784, arrow.PrimitiveTypes.Float32),
			Metadata: arrow.NewMetadata([]string{ml.ShapeKey}, []string{ml.FormatDims(ImageShape)})},
		{Name: "true_label", Type: arrow.BinaryTypes.String},
		{Name: "true_group", Type: arrow.BinaryTypes.String},
	}, nil)
}

// WriteStream writes the subset as an LZ4-compressed Arrow IPC file of
// records of size rows, in StreamSchema (the image column has the type the
// catalog gives TENSOR(FLOAT, 1, 28, 28)). LZ4, not zstd: Arrow's reader
// makes a zstd decoder for each record, which allocates and clears its 8 MiB
// window for the 300 KB of images a record holds, so reading the file in a
// fresh process took 0.5 CPU-seconds more than the LZ4 file, and most
// examples and many tests read it, often in a process of their own. The
// file is 2.7 MB instead of 1.7.
func (s *Subset) WriteStream(path string, size int) error {
	mem := memory.NewGoAllocator()
	schema := StreamSchema()
	groups := GroupOf(s.Labels)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	return sinks.WriteIPCFile(path, schema, mem, func(emit func(arrow.Record) error) error {
		for start := 0; start < len(s.Labels); start += size {
			n := min(size, len(s.Labels)-start)
			for i := start; i < start+n; i++ {
				b.Field(0).(*array.Int64Builder).Append(int64(i))
				b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(StreamEpoch.Add(time.Duration(i) * StreamInterval).UnixMicro()))
				lb := b.Field(2).(*array.FixedSizeListBuilder)
				lb.Append(true)
				lb.ValueBuilder().(*array.Float32Builder).AppendValues(s.Images[i*784:(i+1)*784], nil)
				b.Field(3).(*array.StringBuilder).Append(Labels[s.Labels[i]])
				b.Field(4).(*array.StringBuilder).Append(Groups[groups[i]])
			}
			if err := emit(b.NewRecord()); err != nil {
				return err
			}
		}
		return nil
	}, ipc.WithLZ4())
}
