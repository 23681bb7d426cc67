package setups

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tierflow/tierflow/planner/catalog"
)

// VQAWorkerOf maps the worker types of Table 4 to the reference prototype's
// workers of the same size (their prices in workers_specs.csv and Table 4's
// medium setup line up: 1x2, 1x4, 2x8, 1x16 on the edge, 1x48 and 3xV100 in
// the cloud).
var VQAWorkerOf = map[string][]string{
	"x2":   {"workflow-compute-cpu-1"},
	"x4":   {"workflow-compute-cpu-2"},
	"x8":   {"workflow-compute-cpu-3", "workflow-compute-cpu-4"},
	"x16":  {"workflow-compute-cpu-5"},
	"x48":  {"workflow-compute-cpu-6"},
	"v100": {"workflow-compute-gpu-1", "workflow-compute-gpu-2", "workflow-compute-gpu-3"},
}

// VQACatalog derives the VQA catalog of the Table 4 setups from the catalog
// imported from the prototype (examples/vqa/catalog.yaml): everything is kept
// but latencies, which are re-keyed from worker names to worker types, each
// type taking the mean, percentile by percentile, of the reference workers of
// its size.
func VQACatalog(ref *catalog.Catalog) (*catalog.Catalog, error) {
	out := &catalog.Catalog{
		Notes: "VQA catalog for the Table 4 setups, derived from examples/vqa/catalog.yaml (the JellyBean prototype's " +
			"measured profiles): accuracies, accuracy profiles, end-to-end accuracies, output sizes and proxy costs are the " +
			"prototype's; latencies per worker type are the mean, percentile by percentile, of the reference workers of that " +
			"size: " + mapping() + ". Nothing here is estimated beyond that averaging.",
		Streams: ref.Streams,
		Sinks:   ref.Sinks,
		Tables:  ref.Tables,
	}
	types := make([]string, 0, len(VQAWorkerOf))
	for t := range VQAWorkerOf {
		types = append(types, t)
	}
	sort.Strings(types)
	for _, m := range ref.Models {
		nm := *m
		nm.Variants = nil
		nm.Provenance = "measured by the JellyBean prototype (shared/reference/jellybean-vqa-medium); latencies averaged per worker type"
		for _, v := range m.Variants {
			nv := *v
			if nv.File != "" && !filepath.IsAbs(nv.File) {
				// Relative to the catalog that names it: examples/vqa's
				// models, seen from examples/setups.
				nv.File = filepath.ToSlash(filepath.Join("..", "vqa", nv.File))
			}
			nv.Latency = map[string]catalog.Latency{}
			for _, t := range types {
				var sum catalog.Latency
				n := 0
				for _, w := range VQAWorkerOf[t] {
					if l, ok := v.Latency[w]; ok {
						sum.P50 += l.P50
						sum.P75 += l.P75
						sum.P90 += l.P90
						n++
					}
				}
				if n == 0 {
					continue
				}
				k := float64(n)
				nv.Latency[t] = catalog.Latency{P50: round4(sum.P50 / k), P75: round4(sum.P75 / k), P90: round4(sum.P90 / k)}
			}
			if len(nv.Latency) == 0 {
				return nil, fmt.Errorf("model %s variant %s: no reference worker of any Table 4 type", m.Name, v.Name)
			}
			nm.Variants = append(nm.Variants, &nv)
		}
		out.Models = append(out.Models, &nm)
	}
	return out, nil
}

func mapping() string {
	var parts []string
	for _, t := range []string{"x2", "x4", "x8", "x16", "x48", "v100"} {
		ws := make([]string, len(VQAWorkerOf[t]))
		for i, w := range VQAWorkerOf[t] {
			ws[i] = strings.TrimPrefix(w, "workflow-compute-")
		}
		parts = append(parts, t+" <- "+strings.Join(ws, "+"))
	}
	return strings.Join(parts, ", ")
}
