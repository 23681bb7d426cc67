package ocr

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/runtime/control"
)

// sceneEpoch is the epoch scene id's rows go out at: the stream's source
// sends each slice at the watermark the rows before it set (a slice a
// scene at this stream's rate, no allowed lateness), so scene id's epoch is
// scene id-1's event time (in µs), and scene 0's the first, 0.
func sceneEpoch(id int64) uint64 {
	if id == 0 {
		return 0
	}
	return uint64(StreamEpoch.Add(time.Duration(id-1) * FrameInterval).UnixMicro())
}

var detectorOf = regexp.MustCompile(`detect=(det-\d+)`)

// detectorAt is the detector variant that answers epoch e: the first
// plan's until the first re-plan's epoch, then each re-plan's from its
// epoch on (the new generation resumes there; the old one committed every
// epoch below it).
func detectorAt(t *testing.T, s control.Summary, first string, e uint64) string {
	t.Helper()
	v := first
	for _, r := range s.Replans {
		if e < r.Epoch {
			break
		}
		m := detectorOf.FindStringSubmatch(r.New)
		if m == nil {
			t.Fatalf("re-plan %+v names no detector", r)
		}
		v = m[1]
	}
	return v
}

// assertAccounted checks that every scene of the first n was answered
// exactly once, or its missing rows counted dropped: each scene's rows are
// some of the bare ONNX Runtime pipeline's for the detector of the
// generation that answered its epoch (refs, by detector), none twice; and
// the rows dropped past their deadline (the only drops allowed) are
// exactly what is missing: a frame dropped before the detector is one row
// and takes all its lines, a crop dropped before the recogniser one row
// and one line. Which of the two took a scene with no rows is not told,
// so the count must be reachable with one or the other for each. Nothing
// accepted may be lost, nor counted dropped and answered too.
func assertAccounted(t *testing.T, got []Read, refs map[string][]Read, s control.Summary, first string, n int) {
	t.Helper()
	for r, v := range s.Dropped {
		if r != dataflow.DropDeadline && v != 0 {
			t.Errorf("%d rows dropped as %s: only the deadline drops rows here", v, r)
		}
	}
	gotBy := byScene(got)
	refBy := map[string]map[int64][]Read{}
	for v, rs := range refs {
		refBy[v] = byScene(rs)
	}
	partial := int64(0)              // crops missing from scenes with some rows
	reach := map[int64]bool{0: true} // drops the scenes without rows may account for
	var missing []string
	for id := int64(0); id < int64(n); id++ {
		v := detectorAt(t, s, first, sceneEpoch(id))
		want, ok := refBy[v]
		if !ok {
			t.Fatalf("scene %d: detector %s has no reference", id, v)
		}
		rows, used := gotBy[id], make([]bool, len(want[id]))
		for _, g := range rows {
			found := false
			for i, w := range want[id] {
				if !used[i] && len(DiffReads([]Read{g}, []Read{w})) == 0 {
					used[i], found = true, true
					break
				}
			}
			if !found {
				t.Errorf("scene %d (epoch %d, %s): row %+v is not one of the bare pipeline's %v, or came twice", id, sceneEpoch(id), v, g, want[id])
			}
		}
		lines := int64(len(want[id]))
		if len(rows) > 0 {
			partial += lines - int64(len(rows))
			continue
		}
		missing = append(missing, fmt.Sprintf("%d (%s, %d lines)", id, v, lines))
		next := map[int64]bool{}
		for k := range reach {
			next[k+1], next[k+lines] = true, true // the frame, or every crop
		}
		reach = next
	}
	dropped := s.Dropped[dataflow.DropDeadline]
	if !reach[dropped-partial] {
		t.Errorf("%d rows counted dropped past the deadline; %d crops missing from scenes with rows, scenes with none: %s: rows lost, or counted dropped and answered",
			dropped, partial, strings.Join(missing, ", "))
	}
}
