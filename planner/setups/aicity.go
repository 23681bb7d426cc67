package setups

import (
	"fmt"
	"math"

	"github.com/tierflow/tierflow/planner/catalog"
)

// Published numbers the AICity catalog rests on. Paper = JellyBean
// (shared/papers/jellybean-ml-workflows-heterogeneous.txt).
var (
	// yoloGFLOPs: YOLOv5 v6.0 release, 640 px (not the paper).
	yoloGFLOPs = map[string]float64{"yolov5n": 4.5, "yolov5s": 16.5, "yolov5m": 49.0, "yolov5l": 109.1, "yolov5x": 205.7}
	// yoloMAP: COCO val mAP@0.5:0.95 of the same release (not the paper).
	yoloMAP = map[string]float64{"yolov5n": 28.0, "yolov5s": 37.4, "yolov5m": 45.4, "yolov5l": 49.0, "yolov5x": 50.7}
	// resnetTop1: torchvision ImageNet top-1 (not the paper).
	resnetTop1 = map[string]float64{"resnet18": 69.758, "resnet34": 73.314, "resnet50": 76.130, "resnet101": 77.374, "resnet152": 78.312}
	yolos      = []string{"yolov5n", "yolov5s", "yolov5m", "yolov5l", "yolov5x"}
	resnets    = []string{"resnet18", "resnet34", "resnet50", "resnet101", "resnet152"}
)

// measured is a Table 6 row: native P50/P90 in ms and the processor's
// execution overhead at P50/P90.
type measured struct{ p50, p90, ov50, ov90 float64 }

// Paper Table 6 (medium setup), ObjDet rows, per frame.
var detTable6 = map[string]measured{
	"x2":   {1412, 1455, 0.034, 0.082},
	"x4":   {721.0, 732.0, 0.064, 0.087},
	"x8":   {451.7, 468.3, 0.035, 0.061},
	"v100": {19.7, 20.6, 0.137, 0.133},
}

// Paper Table 6, first ReID row (V100 in the cloud), per frame.
var reidTable6 = measured{8.4, 8.7, 0.065, 0.075}

const (
	// Paper 6.1: "a frame has 22 objects (cars) on average".
	objectsPerFrame = 22
	// Paper 6.1: 1.1 MP frames; sent as 8-bit RGB.
	frameKB = 1.1e6 * 3 / 1024
	// A detection ships its crop as 8-bit RGB at 128 x 128, plus box and
	// score: estimated.
	cropKB = 128*128*3/1024 + 0.02
)

func withOverhead(m measured) catalog.Latency {
	p50 := m.p50 * (1 + m.ov50)
	p90 := m.p90 * (1 + m.ov90)
	return catalog.Latency{P50: round4(p50), P75: round4((p50 + p90) / 2), P90: round4(p90)}
}

func scale(l catalog.Latency, k float64) catalog.Latency {
	return catalog.Latency{P50: round4(l.P50 * k), P75: round4(l.P75 * k), P90: round4(l.P90 * k)}
}

// scaleEach scales by the P75 factor at every percentile, so that the
// spread of the measured percentiles survives (per-percentile factors from
// another workload could reorder them).
func scaleEach(l, k catalog.Latency) catalog.Latency {
	return scale(l, k.P75)
}

// cpuFactor is how much faster (< 1) worker type t runs ResNet feature
// extraction than type base, percentile by percentile, averaged over the five
// ResNets of the VQA reference: the measured CPU scaling the AICity catalog
// borrows for types the paper did not measure.
func cpuFactor(vqa *catalog.Catalog, t, base string) catalog.Latency {
	m := vqa.Model("ExtractImageFeature")
	var k catalog.Latency
	n := 0.0
	for _, v := range m.Variants {
		a, okA := v.Latency[t]
		b, okB := v.Latency[base]
		if !okA || !okB {
			continue
		}
		k.P50 += a.P50 / b.P50
		k.P75 += a.P75 / b.P75
		k.P90 += a.P90 / b.P90
		n++
	}
	return catalog.Latency{P50: k.P50 / n, P75: k.P75 / n, P90: k.P90 / n}
}

// AICityCatalog derives the AICity catalog from the paper's tables and the
// VQA catalog of the setups (for how CPU types scale). Every model and variant
// says in its provenance which numbers are measured (and where) and which are
// estimated (and how).
func AICityCatalog(vqa *catalog.Catalog) *catalog.Catalog {
	cpuTypes := []string{"x2", "x4", "x8", "x16", "x48"}
	c := &catalog.Catalog{
		Notes: "AICity vehicle tracking (JellyBean Figure 2): detection -> re-identification -> single-camera tracking -> " +
			"cross-camera clustering. Accuracies are IDF1 in percent. MEASURED in the paper: detection latency per frame on " +
			"x2/x4/x8/V100 and ReID latency on V100 (Table 6, native P50/P90 plus the processor's execution overhead), 22 " +
			"objects per frame and 1.1 MP frames (6.1), model sizes (Table 3). Taken from the models' own releases, not the " +
			"paper: YOLOv5 GFLOPs and COCO mAP, ResNet ImageNet top-1. ESTIMATED (see each provenance): everything else, " +
			"in particular P75 (midpoint of P50 and P90), other variants and worker types, and the end-to-end IDF1 table.",
		Streams: []*catalog.Stream{{
			Name: "cameras", Source: "nats", Subject: "aicity.frames", Format: "arrow", Tier: "edge", Rate: 8,
			ItemKB: round4(frameKB),
			Columns: []catalog.Column{
				{Name: "camera", Type: "INT"}, {Name: "frame_id", Type: "BIGINT"}, {Name: "ts", Type: "TIMESTAMP"},
				{Name: "frame", Type: "TENSOR(FLOAT, 3, 640, 640)"},
			},
			Provenance: "frames of 1.1 MP (paper 6.1) as 8-bit RGB: 1.1e6 x 3 bytes; the cameras of one partition multiplexed, each row tagged with its camera",
		}},
		Sinks: []*catalog.Sink{{Name: "trajectories", Kind: "nats", Target: "aicity.trajectories", Format: "json"}},
	}

	// Detection.
	det := &catalog.Model{
		Name: "ObjectDetection", Task: "object-detection", OutputRatio: objectsPerFrame,
		Inputs:  []catalog.Column{{Name: "frame", Type: "TENSOR(FLOAT, 3, 640, 640)"}},
		Outputs: []catalog.Column{{Name: "box", Type: "TENSOR(FLOAT, 4)"}, {Name: "crop", Type: "TENSOR(FLOAT, 3, 128, 128)"}, {Name: "score", Type: "FLOAT"}},
		Provenance: "one output row per detected object: 22 per frame (paper 6.1). Table 6 does not name the detector " +
			"variant it timed; taken to be yolov5m.",
	}
	base := map[string]catalog.Latency{}
	for t, m := range detTable6 {
		base[t] = withOverhead(m)
	}
	for _, t := range []string{"x16", "x48"} {
		base[t] = scaleEach(base["x8"], cpuFactor(vqa, t, "x8"))
	}
	for _, y := range yolos {
		k := yoloGFLOPs[y] / yoloGFLOPs["yolov5m"]
		v := &catalog.Variant{
			Name: y, File: "models/" + y + ".onnx", Accuracy: yoloMAP[y], OutputKB: round4(cropKB),
			Latency: map[string]catalog.Latency{},
		}
		for _, t := range cpuTypes {
			v.Latency[t] = scale(base[t], k)
		}
		v.Latency["v100"] = scale(base["v100"], math.Sqrt(k))
		if y == "yolov5m" {
			v.Provenance = "MEASURED (paper Table 6) on x2, x4, x8 and V100 at P50/P90 incl. processor overhead; P75 and " +
				"x16/x48 ESTIMATED (x16/x48 scale x8 as ResNets do in the VQA reference)"
		} else {
			v.Provenance = fmt.Sprintf("ESTIMATED from yolov5m: CPU latency x GFLOPs ratio (%.3g), V100 x its square root "+
				"(a GPU at batch 1 is far from saturated); accuracy = COCO mAP of the YOLOv5 release", k)
		}
		v.Provenance += fmt.Sprintf("; output = the crop (128 x 128 8-bit RGB) + box + score = %.4g KB (ESTIMATED)", cropKB)
		det.Variants = append(det.Variants, v)
	}
	c.Models = append(c.Models, det)

	// Re-identification, per crop.
	reid := &catalog.Model{
		Name: "ReID", Task: "object-reidentification",
		Inputs:  []catalog.Column{{Name: "crop", Type: "TENSOR(FLOAT, 3, 128, 128)"}},
		Outputs: []catalog.Column{{Name: "embedding", Type: "TENSOR(FLOAT, 2048)"}},
		Provenance: "per crop. Table 6 times ReID per frame on a V100 (8.4 / 8.7 ms): taken as one batched call over " +
			"the frame's 22 crops, i.e. 1/22 of it per crop, for resnet50.",
	}
	gpuR50 := scale(withOverhead(reidTable6), 1.0/objectsPerFrame)
	ef := vqa.Model("ExtractImageFeature")
	for _, r := range resnets {
		vv := ef.Variant(r)
		r50 := ef.Variant("resnet50")
		kb := 8.0039
		if r == "resnet18" || r == "resnet34" {
			kb = 2.0039
		}
		v := &catalog.Variant{
			Name: r, File: "models/reid-" + r + ".onnx", Accuracy: resnetTop1[r], OutputKB: kb,
			Latency: map[string]catalog.Latency{},
		}
		for _, t := range cpuTypes {
			if l, ok := vv.Latency[t]; ok {
				v.Latency[t] = l
			}
		}
		k := catalog.Latency{
			P50: vv.Latency["v100"].P50 / r50.Latency["v100"].P50,
			P75: vv.Latency["v100"].P75 / r50.Latency["v100"].P75,
			P90: vv.Latency["v100"].P90 / r50.Latency["v100"].P90,
		}
		v.Latency["v100"] = scaleEach(gpuR50, k)
		v.Provenance = "V100: MEASURED for resnet50 (paper Table 6, / 22 crops), other depths ESTIMATED by the V100 " +
			"ratios of the same ResNets in the VQA reference; CPU types: ESTIMATED as the VQA reference's ResNet feature " +
			"extraction per 224 px image (same backbone, crop resized to 224 px); output size = the VQA reference's " +
			"message size for this backbone's features (MEASURED there); accuracy = ImageNet top-1 (torchvision)"
		reid.Variants = append(reid.Variants, v)
	}
	c.Models = append(c.Models, reid)

	// Tracking and clustering: CPU code, one variant each.
	cpuOp := func(name, task string, x2ms float64, in, out []catalog.Column, outKB float64, prov string) *catalog.Model {
		v := &catalog.Variant{Name: "default", File: "models/" + task + ".onnx", OutputKB: outKB, Latency: map[string]catalog.Latency{}}
		l2 := catalog.Latency{P50: x2ms, P75: x2ms * 1.1, P90: x2ms * 1.25}
		for _, t := range cpuTypes {
			v.Latency[t] = scaleEach(l2, cpuFactor(vqa, t, "x2"))
		}
		// A V100 machine runs this CPU code on its 8 vCPUs.
		v.Latency["v100"] = v.Latency["x8"]
		v.Provenance = fmt.Sprintf("ESTIMATED: %.2g ms per object on 2 vCPUs (P75 +10%%, P90 +25%%), other types scaled "+
			"as ResNets scale in the VQA reference; the V100 machine runs it on its 8 vCPUs", x2ms)
		return &catalog.Model{Name: name, Task: task, Inputs: in, Outputs: out, Variants: []*catalog.Variant{v}, Provenance: prov}
	}
	emb := catalog.Column{Name: "embedding", Type: "TENSOR(FLOAT, 2048)"}
	c.Models = append(c.Models, cpuOp("SingleCameraTracking", "tracking", 0.5,
		[]catalog.Column{{Name: "camera", Type: "INT"}, {Name: "ts", Type: "TIMESTAMP"}, {Name: "box", Type: "TENSOR(FLOAT, 4)"}, emb},
		[]catalog.Column{{Name: "track_id", Type: "BIGINT"}, emb}, 8.0117,
		"associates each camera's detections into tracks (DeepSORT-like); no model choice"))
	clu := cpuOp("CrossCameraClustering", "clustering", 0.3,
		[]catalog.Column{{Name: "camera", Type: "INT"}, {Name: "track_id", Type: "BIGINT"}, emb},
		[]catalog.Column{{Name: "vehicle_id", Type: "BIGINT"}}, 0.0156,
		"clusters tracks across cameras; the workflow's accuracy is its IDF1, below")
	ee := &catalog.EndToEnd{Models: []string{"ObjectDetection", "ReID"}}
	for _, y := range yolos {
		for _, r := range resnets {
			ee.Rows = append(ee.Rows, catalog.EndToEndRow{Variants: []string{y, r}, Accuracy: IDF1(y, r)})
		}
	}
	clu.EndToEnd = ee
	clu.Provenance += ". End-to-end IDF1 ESTIMATED (the paper publishes no per-combination table): " +
		"IDF1 = -45.56 + 0.6 x detector mAP + 1.2 x ReID top-1, fitted so that the weakest pair (yolov5n, resnet18) scores " +
		"55 and the strongest (yolov5x, resnet152) about 79, bracketing Table 4's targets 0.65-0.75 with both models mattering"
	c.Models = append(c.Models, clu)
	return c
}

// IDF1 is the estimated end-to-end accuracy of a detector and ReID pair.
func IDF1(det, reid string) float64 {
	return round4(-45.56 + 0.6*yoloMAP[det] + 1.2*resnetTop1[reid])
}
