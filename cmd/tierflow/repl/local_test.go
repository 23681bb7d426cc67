package repl

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/operators/exec"
)

func csvStream(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	csv := "sensor,ts,temperature\n"
	for i := 0; i < 50; i++ {
		csv += strings.Join([]string{
			[]string{"1", "2"}[i%2],
			time.Date(2024, 5, 1, 8, 0, i, 0, time.UTC).Format("2006-01-02 15:04:05"),
			[]string{"20.5", "26.0"}[i%2],
		}, ",") + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "r.csv"), []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	return "CREATE STREAM r (sensor INT, ts TIMESTAMP, temperature DOUBLE) FROM FILE '" +
		filepath.Join(dir, "r.csv") + "' FORMAT CSV;\n"
}

func TestLocalEngineReleasesEveryBatch(t *testing.T) {
	mem := checkedAlloc(t)
	eng := Local(exec.Options{Allocator: mem, MaxDelay: time.Second, BatchSize: 7})
	s, out, errw := newTestSession(t, eng, "csv")
	src := csvStream(t) + "SET exec.batch_size = 5;\nSELECT sensor, count(*) AS n FROM r GROUP BY sensor, TUMBLE(ts, INTERVAL '10' SECOND);\nSELECT sensor FROM r WHERE temperature > 25 LIMIT 3;\n"
	if err := s.RunScript(context.Background(), "t.sql", strings.NewReader(src)); err != nil {
		t.Fatalf("%v\n%s", err, errw)
	}
	got := out.String()
	// Five 10-second windows per sensor, five rows each; then three rows.
	if strings.Count(got, "1,5\n") != 5 || strings.Count(got, "2,5\n") != 5 {
		t.Errorf("want 5 windows of 5 rows per sensor:\n%s", got)
	}
	if !strings.HasSuffix(got, "sensor\n2\n2\n2\n") {
		t.Errorf("want the LIMIT 3 query last:\n%s", got)
	}
}

func TestSettingsReachTheEngine(t *testing.T) {
	s, _, errw := newTestSession(t, Local(exec.Options{}), "csv")
	err := s.RunScript(context.Background(), "t.sql", strings.NewReader("SET exec.on_error = 'sometimes';"))
	if !IsBadInput(err) || !strings.Contains(errw.String(), "t.sql:1:1: SET exec.on_error") {
		t.Fatalf("err = %v\n%s", err, errw)
	}
}

func TestInterruptCancelsARunningQuery(t *testing.T) {
	s, out, errw := newTestSession(t, endless{}, "table")
	if err := s.RunScript(context.Background(), "ddl.sql", strings.NewReader(ddl)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- s.RunScript(context.Background(), "t.sql", strings.NewReader("SELECT camera FROM shelves;\n"))
	}()
	// Interrupt is refused until the query is running; poll with a deadline.
	deadline := time.Now().Add(5 * time.Second)
	for !s.Interrupt() {
		if time.Now().After(deadline) {
			t.Fatal("the query never started")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || IsBadInput(err) {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the query did not stop")
	}
	if !strings.Contains(errw.String(), "Cancelled after ") {
		t.Errorf("no cancel message:\n%s", errw)
	}
	if !strings.Contains(out.String(), "| camera |\n") {
		t.Errorf("header not shown:\n%s", out)
	}
	if s.Interrupt() {
		t.Error("Interrupt with nothing running reported a query")
	}
}

// SET exec.replay = true plays a FROM FILE stream at its declared RATE: the
// query takes at least as long as its rows' spacing; a bad value is bad input.
func TestReplaySetting(t *testing.T) {
	src := strings.Replace(csvStream(t), "FORMAT CSV;", "FORMAT CSV RATE 100 PER SECOND;", 1)
	s, out, errw := newTestSession(t, Local(exec.Options{MaxDelay: time.Second}), "csv")
	start := time.Now()
	if err := s.RunScript(context.Background(), "t.sql", strings.NewReader(src+"SET exec.replay = true;\nSELECT sensor FROM r;\n")); err != nil {
		t.Fatalf("%v\n%s", err, errw)
	}
	// 50 rows at 100 a second: the last is due 0.49 s after the first.
	if took := time.Since(start); took < 450*time.Millisecond {
		t.Errorf("replayed 50 rows at 100/s in %v", took)
	}
	if n := strings.Count(out.String(), "\n"); n != 51 {
		t.Errorf("%d lines out, want a header and 50 rows", n)
	}
	err := s.RunScript(context.Background(), "u.sql", strings.NewReader("SET exec.replay = 'often';"))
	if !IsBadInput(err) || !strings.Contains(errw.String(), "exec.replay") {
		t.Fatalf("err = %v\n%s", err, errw)
	}
}
