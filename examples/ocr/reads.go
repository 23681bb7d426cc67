package ocr

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
)

// ParseReads reads a query's JSON rows (one object a line: id, x0, y0, x1,
// y1, score, text, confidence) as reads, in the order SortReads gives.
func ParseReads(b []byte) ([]Read, error) {
	var out []Read
	dec := json.NewDecoder(bytes.NewReader(b))
	for i := 1; dec.More(); i++ {
		var r struct {
			ID                *int64
			X0, Y0, X1, Y1    *int
			Score, Confidence *float32
			Text              *string
		}
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("row %d: %w", i, err)
		}
		if r.ID == nil || r.X0 == nil || r.Y0 == nil || r.X1 == nil || r.Y1 == nil || r.Score == nil || r.Confidence == nil {
			return nil, fmt.Errorf("row %d: not a read (id, x0, y0, x1, y1, score, text, confidence)", i)
		}
		rd := Read{ID: *r.ID, X0: *r.X0, Y0: *r.Y0, X1: *r.X1, Y1: *r.Y1, Score: *r.Score, Confidence: *r.Confidence}
		if r.Text != nil {
			rd.Text = *r.Text
		}
		out = append(out, rd)
	}
	SortReads(out)
	return out, nil
}

// SortReads orders reads by scene, then box (top to bottom, left to
// right): rows of one scene may reach a sink in any order when its boxes
// are read on several workers.
func SortReads(rs []Read) {
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if a.ID != b.ID {
			return a.ID < b.ID
		}
		if a.Y0 != b.Y0 {
			return a.Y0 < b.Y0
		}
		return a.X0 < b.X0
	})
}

// DiffReads compares the engine's reads with the reference's, row for
// row: the same boxes and texts, scores and confidences within float
// noise (1e-4). It returns what differs, nothing when they agree.
func DiffReads(got, want []Read) []string {
	if len(got) != len(want) {
		return []string{fmt.Sprintf("%d rows, the bare ONNX Runtime pipeline %d:\n%v\n%v", len(got), len(want), got, want)}
	}
	var out []string
	for i := range got {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.X0 != w.X0 || g.Y0 != w.Y0 || g.X1 != w.X1 || g.Y1 != w.Y1 || g.Text != w.Text ||
			math.Abs(float64(g.Score-w.Score)) > 1e-4 || math.Abs(float64(g.Confidence-w.Confidence)) > 1e-4 {
			out = append(out, fmt.Sprintf("row %d: engine %+v, bare %+v", i, g, w))
		}
	}
	return out
}

// ReferenceReads runs the bare ONNX Runtime pipeline (models in dir, one
// intra-op thread) at detector side det and recogniser width rec over the
// scenes, in SortReads' order.
func ReferenceReads(dir string, scenes []*Scene, det, rec int) ([]Read, error) {
	ref, err := NewReference(dir, det, rec, 1)
	if err != nil {
		return nil, err
	}
	defer ref.Close()
	var out []Read
	for _, s := range scenes {
		rs, err := ref.Read(s.ID, s.Bytes)
		if err != nil {
			return nil, fmt.Errorf("scene %d: %w", s.ID, err)
		}
		out = append(out, rs...)
	}
	SortReads(out)
	return out, nil
}
