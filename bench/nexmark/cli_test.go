package nexmark

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/bench/benchtest"
	"github.com/tierflow/tierflow/internal/cli"
)

// `bench nexmark` generates the events once, runs the queries asked and
// prints a row each: events/s locally and on the embedded cluster, the same
// rows from both, and the time over q0's; an unknown query or a negative
// cluster size is bad input naming what is wrong.
func TestBenchNexmarkCommand(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := benchtest.Run([]string{"bench", "nexmark", "--events", "5000", "--queries", "q0,q19", "--data", dir, "--format", "json"},
		strings.NewReader(""), &out, &errb, Command)
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rows []Row
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if len(rows) != 2 || rows[0].Query != "q0" || rows[1].Query != "q19" {
		t.Fatalf("rows %+v", rows)
	}
	for _, r := range rows {
		if r.EventsPerSec <= 0 || r.Rows <= 0 || r.VsQ0 <= 0 || r.Form != "Flink's" {
			t.Errorf("row %+v", r)
		}
		if r.ClusterEventsPerSec <= 0 || r.ClusterRows != r.Rows || r.ClusterVsLocal <= 0 {
			t.Errorf("%s on the cluster: %.0f events/s, %d rows (locally %d), %.2f of local", r.Query, r.ClusterEventsPerSec, r.ClusterRows, r.Rows, r.ClusterVsLocal)
		}
	}
	if !strings.Contains(errb.String(), "generating 5000 events") {
		t.Errorf("stderr: %s", errb.String())
	}
	errb.Reset()
	code = benchtest.Run([]string{"bench", "nexmark", "--queries", "q0", "--cluster-workers", "-1", "--data", dir}, strings.NewReader(""), &out, &errb, Command)
	if code != cli.ExitBadInput || !strings.Contains(errb.String(), "--cluster-workers -1") {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	errb.Reset()
	code = benchtest.Run([]string{"bench", "nexmark", "--queries", "q99", "--data", dir}, strings.NewReader(""), &out, &errb, Command)
	if code != cli.ExitBadInput || !strings.Contains(errb.String(), `no query "q99"`) || !strings.Contains(errb.String(), "q19") {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
}
