package control

import (
	"fmt"
	"sort"
	"strings"
)

// SLOSample is one source of a latency-bound query at one round of the
// coordinator's control loop (about once a second): its uplink's bandwidth
// as the relay's acks estimate it next to the shaped cap (`--link-trace`),
// and the variants, with their input sizes, the query ran then. The
// samples are EXPLAIN ANALYZE's and `--stats`'s bandwidth and choice over
// time.
type SLOSample struct {
	AtS           float64 `json:"t_s"`
	Source        string  `json:"source"`
	EstimatedKbit float64 `json:"estimated_kbit_s"`
	ShapedKbit    float64 `json:"shaped_kbit_s,omitempty"`
	Variants      string  `json:"variants"`
}

// MaxSLOSamples bounds a query's timeline (an hour of one source).
const MaxSLOSamples = 3600

// SLOSamples are the samples of one round at atS seconds into the query:
// one per source worker that feeds a call (the slowest of its links with
// acks, as the Jellyfish policy reads them).
func SLOSamples(atS float64, e Estimates, l *LatencyInput) []SLOSample {
	if l == nil {
		return nil
	}
	// The calls each source feeds (all of them, unless the query has a
	// call per source).
	variants := func(src string) string {
		var vs []string
		for _, c := range l.Calls {
			if !c.feeds(src) {
				continue
			}
			side := 0
			for _, v := range c.Variants {
				if v.Name == c.Variant {
					side = v.Side
				}
			}
			if side > 0 {
				vs = append(vs, fmt.Sprintf("%s=%s (%dx%d)", c.Call, c.Variant, side, side))
			} else {
				vs = append(vs, c.Call+"="+c.Variant)
			}
		}
		return strings.Join(vs, ", ")
	}
	by := map[string]SLOSample{}
	for _, k := range e.Links {
		if k.AckBandwidthBps <= 0 || k.From == "" || k.From == k.To {
			continue
		}
		s, ok := by[k.From]
		if ok && k.AckBandwidthBps*8/1000 >= s.EstimatedKbit {
			continue
		}
		vs := variants(k.From)
		if vs == "" {
			continue // a worker that feeds no call (a model's own, sending its rows on)
		}
		by[k.From] = SLOSample{AtS: atS, Source: k.From, EstimatedKbit: k.AckBandwidthBps * 8 / 1000, ShapedKbit: k.ShapedBps * 8 / 1000,
			Variants: vs}
	}
	out := make([]SLOSample, 0, len(by))
	for _, s := range by {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Source < out[j].Source })
	return out
}
