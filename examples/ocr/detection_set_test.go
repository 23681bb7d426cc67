package ocr

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/inference"
	"github.com/tierflow/tierflow/runtime/onnx"
)

// detectionSetQuery runs on testdata/detection-set.catalog.yaml: per
// scene, one row per text box as a detection set (box tensor, crop tensor,
// score), then a second network per box on its crop; scenes 0 and 2 (five
// text lines), to keep the test short. (Not a file under examples/: every
// .sql there is an example TestExamples runs.)
const detectionSetQuery = `SELECT s.id, d.box, d.crop, d.score, p.text_map
FROM scenes AS s
CROSS JOIN LATERAL detect(s.image) AS d(box, crop, score)
CROSS JOIN LATERAL patch(d.crop) AS p(text_map)
WHERE s.id = 0 OR s.id = 2;
`

const (
	detectionSetScript  = "detection-set.sql"
	detectionSetCatalog = "testdata/detection-set.catalog.yaml"
)

// detection is one row of detection-set.sql.
type detection struct {
	id           int64
	box          []float32
	crop         []float32
	score        float64
	textMap      []float32
	textMapFound bool
}

// detections parses the script's JSON rows, sorted by scene and box.
func detections(t *testing.T, rows []map[string]any) []detection {
	t.Helper()
	tensor := func(r map[string]any, k string) []float32 {
		v := r[k]
		if s, ok := v.(string); ok { // a tensor column prints as its JSON text
			var f []float32
			if err := json.Unmarshal([]byte(s), &f); err != nil {
				t.Fatalf("row %v: %s: %v", r["id"], k, err)
			}
			return f
		}
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var f []float32
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Fatalf("row %v: %s is %T: %v", r["id"], k, v, err)
		}
		return f
	}
	var out []detection
	for _, r := range rows {
		d := detection{id: int64(r["id"].(float64)), box: tensor(r, "box"), crop: tensor(r, "crop"), score: r["score"].(float64), textMap: tensor(r, "text_map")}
		out = append(out, d)
	}
	sortDetections(out)
	return out
}

// runDetectionSetLocal runs detection-set.sql on the local executor.
func runDetectionSetLocal(t *testing.T) []map[string]any {
	t.Helper()
	rt := inference.New(inference.Config{Device: onnx.CPU, IntraOpThreads: 1})
	return runSourceLocal(t, detectionSetCatalog, detectionSetScript, detectionSetQuery, rt)
}

// TestDetectionSetMatchesBareOnnxRuntime: a detector call that gives a
// detection set (box TENSOR(FLOAT, 4), crop TENSOR(FLOAT, 3, 32, 128),
// score: the shape of the AI City catalog's ObjectDetection) makes one row
// per box of PaddleOCR's real DB detector, the boxes and scores of the same
// network run straight through ONNX Runtime; a second network then runs
// once per box on its crop (as ReID per vehicle), each output the bare
// network's on that crop, and finds text in the crops, because the crops
// are the text. The same rows come from the embedded cluster, where the
// crops cross from the detector's worker to the second network's as Arrow
// over NATS.
func TestDetectionSetMatchesBareOnnxRuntime(t *testing.T) {
	dir := modelDir(t)
	sc := scenes(t)
	local := detections(t, runDetectionSetLocal(t))

	ref, err := NewReference(dir, 480, 320, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	var want []detection
	for _, s := range []*Scene{sc[0], sc[2]} {
		_, boxes, err := ref.Detect(s.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range boxes {
			want = append(want, detection{id: s.ID, box: []float32{float32(b.X0), float32(b.Y0), float32(b.X1), float32(b.Y1)}, score: float64(b.Score)})
		}
	}
	sortDetections(want)
	if len(local) != len(want) || len(want) != 5 {
		t.Fatalf("%d rows, the bare detector finds %d boxes in scenes 0 and 2 (their five lines)", len(local), len(want))
	}
	found := 0
	for i, d := range local {
		w := want[i]
		if d.id != w.id || !equalFloats(d.box, w.box, 0) || math.Abs(d.score-w.score) > 1e-4 {
			t.Errorf("row %d: scene %d box %v score %.4f, bare ONNX Runtime: scene %d box %v score %.4f", i, d.id, d.box, d.score, w.id, w.box, w.score)
		}
		if len(d.crop) != 3*32*128 {
			t.Fatalf("row %d: crop of %d values, want 3 x 32 x 128", i, len(d.crop))
		}
		bare, _, err := ref.run(ref.det, []int64{1, 3, 32, 128}, d.crop)
		if err != nil {
			t.Fatal(err)
		}
		if !equalFloats(d.textMap, bare, 1e-4) {
			t.Errorf("row %d: the second network's output on the crop differs from the bare network's", i)
		}
		if slicesMax(d.textMap) > 0.5 {
			found++
		}
	}
	// Text in every crop: the crops are the boxes' pixels.
	if found != len(local) {
		t.Errorf("the second network found text in %d of %d crops", found, len(local))
	}

	// The embedded cluster: the same rows.
	inf, err := infra.LoadFile("infra.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := cluster.StartEmbedded(ctx, cluster.Options{Infra: inf, Catalog: detectionSetCatalog})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out bytes.Buffer
	w, err := sinks.New("json", &out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Run(ctx, deploy.Script{Filename: detectionSetScript, Source: detectionSetQuery, BaseDir: ".", Catalog: detectionSetCatalog}, w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	remote := detections(t, decodeRows(t, &out))
	if len(remote) != len(local) {
		t.Fatalf("embedded cluster: %d rows, local %d", len(remote), len(local))
	}
	for i, d := range remote {
		l := local[i]
		if d.id != l.id || !equalFloats(d.box, l.box, 0) || !equalFloats(d.crop, l.crop, 1e-5) || !equalFloats(d.textMap, l.textMap, 1e-4) {
			t.Errorf("embedded cluster row %d (scene %d box %v) differs from the local run's (scene %d box %v)", i, d.id, d.box, l.id, l.box)
		}
	}
}

func equalFloats(a, b []float32, tol float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > tol {
			return false
		}
	}
	return true
}

func slicesMax(v []float32) float32 {
	m := float32(math.Inf(-1))
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// sortDetections orders detections by frame, then top to bottom, left to
// right: the bare network's and the engine's boxes line up one for one.
func sortDetections(ds []detection) {
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i], ds[j]
		if a.id != b.id {
			return a.id < b.id
		}
		if a.box[1] != b.box[1] {
			return a.box[1] < b.box[1]
		}
		return a.box[0] < b.box[0]
	})
}
